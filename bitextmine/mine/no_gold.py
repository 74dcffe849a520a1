"""How many of the pairs kept at each threshold are translations, estimated without gold.

**The gap mixture.** Every query (a sampled sentence of one side) has a best candidate on
the other side; the question is whether that candidate is its translation. Leave the best
candidate out, recompute the query's neighbourhood mean without it, and take the best ratio
margin that remains: for a query *with* a translation that is the best non-translation, for
one *without*, the second best non-translation. The difference, the query's *gap*, is a
spacing between the two best of many non-translations for a query without a translation
(small, and distributed alike whatever the pool: a Gumbel), and the distance from a
translation down to the best non-translation for a query with one (large). A two-component
mixture fitted to the gaps (EM; Gumbel for the queries without a translation, normal for
those with one) gives each query the probability that it has none; the estimated false pairs
at a threshold t are then the sum of those probabilities over the queries whose best score
is >= t, scaled from the sample to the side, and averaged over the two sides (the smaller
side's alone where the sides differ in size and the gaps separate clearly). For pairs scored
by the distance margin (the default) the gaps are measured in that margin too, and the two
estimates' false pairs averaged (``thresholds.combined_over_margins``). The recall is counted against the
translations the false-pair curve implies (``_curves``), a count that never falls as t drops.

Why not the pools' own language (the decoy used before): on news, a sentence's nearest
neighbours in its own language (the same story told twice, templated sentences) are far
closer than the nearest non-translation in the other language, so the decoy overstated the
false pairs at high scores and the threshold gave away most of the translations. The gap is
measured across the languages, on the candidates mining itself sees, and each query is its
own reference: dense neighbourhoods (related stories opposite) and sparse ones are told apart
by the gap, not by the score alone. Measured against gold on news pools (15 % and 3 %
translations), caption and Tatoeba pools: benchmarks/RESULTS.md, "The no-gold threshold".

What it cannot see: a pair whose sides say almost the same thing without being a translation
(a headline and the sentence that expands it) has a translation's gap, so the gold of such pools
calls pairs wrong that the estimate counts right; and a translation whose other side holds a
near-copy of it has a small gap (counted as doubtful).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.stats import gaussian_kde, gumbel_r, norm

from bitextmine import defaults
from bitextmine.mine.knn import Neighbours, Search, exact_search
from bitextmine.mine.scoring import margin_scores


@dataclass
class QueryGaps:
    """One side's sampled queries: their best score (in the mined score) and their gap."""

    best: np.ndarray  # best score of each sampled query over its candidates (the mined score)
    gap: np.ndarray  # ratio margin of the best candidate minus the best one left without it
    rows: int  # rows of the side the sample stands for
    distance_gap: np.ndarray | None = None  # the same gap in the distance margin
    query_rows: np.ndarray | None = None  # each query's row, and its best candidate's (the other side)
    candidate_rows: np.ndarray | None = None

    @property
    def scale(self) -> float:
        return self.rows / max(len(self.gap), 1)

    def in_distance(self) -> QueryGaps:
        """The same queries with their gaps measured in the distance margin."""
        return QueryGaps(self.best, self.distance_gap, self.rows, None, self.query_rows, self.candidate_rows)


def sample_rows(rows: int, size: int, seed: int) -> np.ndarray:
    """Every row up to ``size``, else a seeded sample (ascending)."""
    if rows <= size:
        return np.arange(rows)
    return np.sort(np.random.default_rng(seed).choice(rows, size, replace=False))


def query_gaps(queries, database, database_means: np.ndarray, k: int, score: str, seed: int,
               device: str = "cpu", sample: int = defaults.ESTIMATE_QUERIES, search: Search | None = None) -> QueryGaps:
    """Best score and gap of a sample of ``queries`` (rows) in ``database``, searched exactly or by ``search``.

    ``database_means``: each database row's neighbourhood mean as mining computed it (its k
    nearest queries). Each query's k + ``defaults.ESTIMATE_EXTRA_NEIGHBOURS`` nearest rows are
    its candidates: enough to recompute its mean without the best one and to find the next.
    """
    rows = sample_rows(len(queries), sample, seed)
    q = queries if len(rows) == len(queries) else np.asarray(queries[rows], dtype=np.float32)
    found = (search or exact_search(database, device))(q, min(k + defaults.ESTIMATE_EXTRA_NEIGHBOURS, len(database)))
    valid = found.ids >= 0
    cos = np.where(valid, found.sims, -np.inf).astype(np.float64)
    other = database_means[np.maximum(found.ids, 0)].astype(np.float64)
    keep = max(1, min(k, cos.shape[1] - 1))  # the mean over k; one candidate must remain without the best
    own_mean = _mean_of_first(cos, keep)
    ratio = _ratio(cos, own_mean, other)
    top = np.argmax(ratio, axis=1)
    r = np.arange(len(rows))
    # the candidates without the best one, still in cosine order; the query's mean over them
    rest = np.arange(cos.shape[1])[None, :] != top[:, None]
    cos_rest = cos[rest].reshape(len(rows), -1)
    rest_mean, other_rest = _mean_of_first(cos_rest, keep), other[rest].reshape(len(rows), -1)
    gap = ratio[r, top] - _ratio(cos_rest, rest_mean, other_rest).max(axis=1)
    distance_gap = _distance(cos, own_mean, other)[r, top] - _distance(cos_rest, rest_mean, other_rest).max(axis=1)
    best = margin_scores(cos[r, top], own_mean, other[r, top], score).astype(np.float64)
    usable = np.isfinite(gap) & np.isfinite(best) & np.isfinite(distance_gap)
    return QueryGaps(best[usable], gap[usable], len(queries), distance_gap[usable], rows[usable],
                     found.ids[r, top][usable])


def _mean_of_first(cos: np.ndarray, k: int) -> np.ndarray:
    first = cos[:, :k]
    finite = np.isfinite(first)
    return np.where(finite, first, 0).sum(axis=1) / np.maximum(finite.sum(axis=1), 1)


def _ratio(cos: np.ndarray, own_mean: np.ndarray, other_mean: np.ndarray) -> np.ndarray:
    avg = (own_mean[:, None] + other_mean) / 2
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.isfinite(cos) & (avg > 0), cos / avg, -np.inf)


def _distance(cos: np.ndarray, own_mean: np.ndarray, other_mean: np.ndarray) -> np.ndarray:
    avg = (own_mean[:, None] + other_mean) / 2
    return np.where(np.isfinite(cos), cos - avg, -np.inf)


# --- the mixture -----------------------------------------------------------------------------

@dataclass
class GapMixture:
    """The gaps as (1 - share) Gumbel(null_loc, null_scale) + share Normal(true_mean, true_sd)."""

    share: float  # of queries with a translation
    null_loc: float
    null_scale: float
    true_mean: float
    true_sd: float
    posterior: np.ndarray  # each gap's probability of a translation

    def separation(self) -> float:
        """How far the translations' mean gap lies above the null's location, in null scales."""
        return (self.true_mean - self.null_loc) / self.null_scale if self.null_scale > 0 else 0.0


def fit_gap_mixture(gaps: np.ndarray, start: GapMixture | None = None,
                    iterations: int = defaults.ESTIMATE_EM_ITERATIONS) -> GapMixture:
    """EM for the gap mixture. Started from the gaps' quartiles (most queries have no
    translation, so the middle of the gaps is theirs) and their top tenth, or from ``start``."""
    d = np.asarray(gaps, dtype=np.float64)
    mix = _starting_mixture(d) if start is None else start
    for _ in range(iterations):
        null = (1 - mix.share) * gumbel_r.pdf(d, mix.null_loc, mix.null_scale)
        true = mix.share * norm.pdf(d, mix.true_mean, mix.true_sd)
        w = true / np.maximum(null + true, 1e-300)
        share = float(w.mean())
        if not 0 < share < 1:
            return GapMixture(share, mix.null_loc, mix.null_scale, mix.true_mean, mix.true_sd, w)
        true_mean = float((w * d).sum() / w.sum())
        true_sd = max(float(np.sqrt((w * (d - true_mean) ** 2).sum() / w.sum())), 1e-6)
        # the Gumbel by weighted moments (mean = loc + 0.5772 scale, variance = (pi scale)^2 / 6): its
        # right tail, which decides the false pairs, follows the spacings above the mode too
        v = 1 - w
        mean = float((v * d).sum() / v.sum())
        scale = max(float(np.sqrt(6 * (v * (d - mean) ** 2).sum() / v.sum()) / np.pi), 1e-6)
        mix = GapMixture(share, mean - 0.5772 * scale, scale, true_mean, true_sd, w)
    return mix


def _starting_mixture(d: np.ndarray) -> GapMixture:
    """Where EM starts: the null Gumbel from the mode of the gaps and the gaps below it (the
    translations' gaps lie above, whatever their share), the translations from the gaps above
    the null's 99th percentile."""
    grid = np.linspace(*np.quantile(d, [0.01, 0.99]), 512)
    density = gaussian_kde(d, bw_method="silverman")(grid)
    loc = float(grid[np.argmax(density)])  # a Gumbel's mode is its location
    below = d[d <= loc]
    # the median of the gaps below the mode is the Gumbel's 18.4th percentile (half of exp(-1)),
    # 0.526 scales below its location
    scale = max((loc - float(np.median(below))) / 0.526, 1e-6) if len(below) > 10 else max(float(np.std(d)), 1e-6)
    top = d[d > loc + 4.6 * scale]
    share = min(max(len(top) / len(d), 0.01), 0.9)
    if len(top) < 5:
        top = d[d >= np.quantile(d, 0.95)]
    return GapMixture(share, loc, scale, float(top.mean()), max(float(top.std()), scale), np.zeros(len(d)))


# --- the same-language decoy: the second bound -------------------------------------------------

def _own_language_neighbours(z, rows: np.ndarray, k: int, search: Search) -> tuple[np.ndarray, Neighbours]:
    """For ``rows`` of ``z``: the mean cosine to their k nearest other rows, and their k nearest
    other rows that are not near-duplicates of them (the candidates for a false pair)."""
    n = len(z)
    q = z if len(rows) == n else np.asarray(z[rows], dtype=np.float32)
    # k + 2: the row itself and one near-duplicate can be dropped without running short
    found = search(q, min(k + 2, n))
    other = (found.ids != rows[:, None]) & (found.ids >= 0)

    def first_k(keep: np.ndarray) -> Neighbours:
        order = np.argsort(~keep, axis=1, kind="stable")[:, :k]
        valid = np.take_along_axis(keep, order, 1)
        return Neighbours(np.where(valid, np.take_along_axis(found.sims, order, 1), -np.inf).astype(np.float32),
                          np.where(valid, np.take_along_axis(found.ids, order, 1), -1))

    # the mean keeps the near-duplicates: across languages they are in a sentence's neighbourhood too
    return first_k(other).mean_sim(), first_k(other & (found.sims < defaults.DECOY_DUPLICATE_COSINE))


def decoy_best_scores(z, k: int, score: str, seed: int, device: str = "cpu",
                      sample: int = defaults.ESTIMATE_QUERIES, search: Search | None = None) -> np.ndarray:
    """Best margin score of (a sample of) the rows of ``z`` among the other rows of ``z``: what a
    sentence without a translation reaches, if its own language stands for the other (the
    neighbourhoods of the sample's neighbours are searched too: the margin needs both means).
    ``search``: how ``z`` is searched (exactly, or through its index)."""
    n, search = len(z), search or exact_search(z, device)
    rows = sample_rows(n, sample, seed)
    means = np.zeros(n, dtype=np.float32)
    means[rows], nb = _own_language_neighbours(z, rows, k, search)
    if len(others := np.setdiff1d(np.unique(nb.ids[nb.ids >= 0]), rows)):
        means[others] = _own_language_neighbours(z, others, k, search)[0]
    scores = margin_scores(nb.sims, means[rows][:, None], means[np.maximum(nb.ids, 0)], score)
    return np.where(nb.ids >= 0, scores, -np.inf).max(axis=1)


def _decoy_tail(decoy: np.ndarray, grid: np.ndarray, tail: int = defaults.DECOY_TAIL) -> np.ndarray:
    """Share of decoy scores >= each threshold; past the ``tail``-th best, an exponential fitted to
    the ``tail`` best (counts run out at the best decoy, where the estimate would jump to zero)."""
    ordered = np.sort(decoy[np.isfinite(decoy)])
    if len(ordered) == 0:
        return np.zeros(len(grid))
    count = _exceeding(ordered, grid).astype(np.float64)
    if len(ordered) > tail:
        start = ordered[-tail - 1]
        scale = max(float(np.mean(ordered[-tail:] - start)), 1e-9)
        beyond = grid > start
        count[beyond] = tail * np.exp(-(grid[beyond] - start) / scale)
    return count / len(ordered)


def translations_of(kept: np.ndarray, false: np.ndarray, down_to=defaults.ESTIMATE_TRANSLATIONS_PRECISION) -> float:
    """Translations implied by a false-pair curve: the most true pairs at a threshold where at
    least ``down_to`` of the pairs kept are true (below, too many are false to count by)."""
    true = kept - false
    usable = true >= down_to * kept
    return float(true[usable].max()) if usable.any() else 0.0


def decoy_false_pairs(grid, kept, decoy_src: np.ndarray, decoy_tgt: np.ndarray, n: int, m: int) -> np.ndarray:
    """False pairs >= each threshold by the decoy: a pair of rows without translations is a false
    pair >= t with probability p(t) (the decoys' exceedance per row met, geometric mean of the
    sides); a row without a translation finds such a partner among the other side's rows
    without one. The rows without translation depend on the translations, these on the false
    pairs: three rounds settle them."""
    p_pair = np.sqrt(_decoy_tail(decoy_src, grid) / max(n - 1, 1) * _decoy_tail(decoy_tgt, grid) / max(m - 1, 1))
    log_miss = np.log1p(-np.minimum(p_pair, 1 - 1e-12))
    translations, false = 0.0, kept
    for _ in range(3):
        lonely_src, lonely_tgt = max(n - translations, 0), max(m - translations, 0)
        false = np.minimum(np.minimum(lonely_src * -np.expm1(lonely_tgt * log_miss),
                                      lonely_tgt * -np.expm1(lonely_src * log_miss)), kept)
        translations = translations_of(kept, false)
    # no more true pairs than translations: below their scores every further pair is false
    return np.maximum(false, kept - translations)


# --- the estimate ----------------------------------------------------------------------------

@dataclass
class NoGoldEstimate:
    """Estimated precision and recall of the pairs kept at each threshold (ascending)."""

    thresholds: np.ndarray
    precision: np.ndarray
    recall: np.ndarray
    pairs: np.ndarray  # pairs kept (score >= threshold)
    false_pairs: np.ndarray  # estimated
    translations: float  # estimated number of translations in the pools
    warning: str | None = None  # why the estimate cannot be trusted, when it cannot
    details: dict = field(default_factory=dict)
    precision_low: np.ndarray | None = None  # a bootstrap interval of the precision
    precision_high: np.ndarray | None = None

    def f1(self) -> np.ndarray:
        p, r = np.nan_to_num(self.precision), np.nan_to_num(self.recall)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(p + r > 0, 2 * p * r / (p + r), 0.0)


def _exceeding(sorted_scores: np.ndarray, grid: np.ndarray) -> np.ndarray:
    return len(sorted_scores) - np.searchsorted(sorted_scores, grid, side="left")


def threshold_grid(scores: np.ndarray, points: int = defaults.ESTIMATE_POINTS) -> np.ndarray:
    """Ascending thresholds from near the lowest pair score to just below the best."""
    if len(scores) == 0:
        return np.zeros(0)
    lo, hi = np.quantile(scores, [0.01, 1.0])
    return np.linspace(lo, hi, points, endpoint=False)


def _false_queries(side: QueryGaps, posterior: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Queries without a translation whose best score is >= each threshold, scaled to the side."""
    order = np.argsort(side.best)
    ordered = side.best[order]
    without = np.concatenate([[0.0], np.cumsum((1 - posterior[order])[::-1])])  # from the top down
    return side.scale * without[_exceeding(ordered, grid)]


def _false_pairs_of_sides(grid, sides, fits) -> np.ndarray:
    """The false pairs >= each threshold by the gaps: the mean of the two sides' counts, or the
    smaller side's where one side is ``defaults.ESTIMATE_SIDE_RATIO`` times the other and the
    gaps separate the translations clearly. The larger side's queries are mostly without a
    translation, and its mixture lays more of the translations' lower gaps in the null's tail:
    on news (4,054 French sentences against 2,554 English) the French side counted 15 false
    pairs among the 106 kept at ratio 1.44, the English side 10, the gold 5. A weak encoder
    keeps the mean: there the smaller side is often the language it knows least."""
    counts = [_false_queries(s, f.posterior, grid) for s, f in zip(sides, fits, strict=True)]
    rows = [s.rows for s in sides]
    clear = np.mean([f.separation() for f in fits]) >= defaults.ESTIMATE_CLEAR_SEPARATION
    if clear and max(rows) >= defaults.ESTIMATE_SIDE_RATIO * min(rows):
        return counts[int(np.argmin(rows))]
    return np.mean(counts, axis=0)


def _curves(grid, kept, sides, fits, decoy_false=None):
    """Precision, recall, false pairs and translations from the gap mixtures
    (``_false_pairs_of_sides``), each threshold's false pairs the smaller of theirs and the
    decoy's (when given). Under a margin the translations are those the false-pair curve
    implies (``translations_of``, counted down to a lower precision where the gaps separate
    weakly): the posteriors' sum counts each of thousands of queries' small posterior (83 where
    captions fr-en at 1 % hold 50); where the gaps separate clearly, at most the sum (news fr-en
    cut to 414 lines a side, 114 translations: the curve 245, the sum 115). A cosine's curve,
    from the gaps alone, is too low where the encoder is weak: the sum (RESULTS.md, "The no-gold threshold")."""
    false = np.minimum(_false_pairs_of_sides(grid, sides, fits), kept)
    summed = float(np.mean([s.scale * f.posterior.sum() for s, f in zip(sides, fits, strict=True)]))
    if decoy_false is None:
        return (*_precision_and_recall(kept, false, summed), false, summed)
    false = np.minimum(false, decoy_false)
    weak = np.mean([f.separation() for f in fits]) < defaults.ESTIMATE_CLEAR_SEPARATION
    translations = translations_of(kept, false, defaults.ESTIMATE_WEAK_TRANSLATIONS_PRECISION if weak
                                   else defaults.ESTIMATE_TRANSLATIONS_PRECISION)
    translations = translations if weak else min(translations, summed)
    return (*_precision_and_recall(kept, false, translations), false, translations)


def _precision_and_recall(kept: np.ndarray, false: np.ndarray, translations: float) -> tuple[np.ndarray, np.ndarray]:
    """Precision and recall at each threshold from the pairs kept, false pairs and translations;
    the translations kept never fewer at a lower threshold (the count above, where more)."""
    true = np.maximum.accumulate((kept - false)[::-1])[::-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(kept > 0, true / kept, np.nan)
    recall = np.clip(true / translations, 0, 1) if translations > 0 else np.zeros(len(kept))
    return precision, recall


def estimate_from_gaps(pair_scores: np.ndarray, src: QueryGaps, tgt: QueryGaps, decoys: tuple | None = None,
                       seed: int = defaults.SEED, bootstrap: int = defaults.ESTIMATE_BOOTSTRAP) -> NoGoldEstimate:
    """Precision and recall at each threshold of ``pair_scores`` (every pair mined) from both
    sides' query gaps and, when given, both sides' decoy scores (``decoy_best_scores``: the
    false pairs at each threshold are the smaller of the two estimates); with a bootstrap
    interval (queries resampled, the mixtures refitted)."""
    scores = np.sort(np.asarray(pair_scores, dtype=np.float64))
    grid = threshold_grid(scores)
    kept = _exceeding(scores, grid).astype(np.float64)
    sides = (src, tgt)
    fits = [fit_gap_mixture(s.gap) for s in sides]
    decoy_false = None if decoys is None else decoy_false_pairs(grid, kept, *decoys, src.rows, tgt.rows)
    if decoy_false is not None and _mostly_translations(kept, decoy_false, fits, min(src.rows, tgt.rows)):
        return _decoy_estimate(grid, kept, decoy_false, decoys, src.rows, tgt.rows, seed, bootstrap)
    precision, recall, false, translations = _curves(grid, kept, sides, fits, decoy_false)
    estimate = NoGoldEstimate(grid, precision, recall, kept, false, translations)
    estimate.details = {
        "method": "gap mixture" + (" and decoy" if decoys is not None else ""),
        "queries": [int(len(s.gap)) for s in sides],
        "rows": [int(s.rows) for s in sides],
        "translations_by_side": [round(s.scale * f.posterior.sum(), 1) for s, f in zip(sides, fits, strict=True)],
        "mixtures": [_described(f) for f in fits]}
    if decoy_false is not None:
        gap_false = _false_pairs_of_sides(grid, sides, fits)
        estimate.details["decoy_lower_at"] = round(float(np.mean(decoy_false < gap_false)), 3)  # share of thresholds
    if bootstrap and len(grid):
        estimate.precision_low, estimate.precision_high = _bootstrap(grid, kept, sides, fits, decoys, seed, bootstrap)
    estimate.warning = _doubt(estimate, fits)
    return estimate


def averaged_over_margins(by_ratio: NoGoldEstimate, by_distance: NoGoldEstimate) -> NoGoldEstimate:
    """One estimate from the gaps measured in the ratio margin and in the distance margin (the
    same queries, the same pairs): the mean of their false pairs at each threshold. On news the
    two err in opposite directions: a ratio gap (cosines divided by the neighbourhood's mean)
    shrinks where the mean is high (several stories on one event), and translations there look
    doubtful; the distance gap does not, and counts too few false pairs (fra-en at 3 %: 98.0 %
    precision, estimated 90.7; 81.8 %, 91.5; the mean 93.0 %, 90.3: RESULTS.md, "Which margin").
    Where either cannot be trusted, or either is the decoy's alone, the ratio gaps' is used."""
    method = by_ratio.details.get("method", "")
    if by_ratio.warning or by_distance.warning or not method.startswith("gap mixture") \
            or by_distance.details.get("method") != method:
        return by_ratio
    false = (by_ratio.false_pairs + by_distance.false_pairs) / 2
    translations = (by_ratio.translations + by_distance.translations) / 2
    kept = by_ratio.pairs  # the same pairs and thresholds in both
    estimate = NoGoldEstimate(by_ratio.thresholds, *_precision_and_recall(kept, false, translations), kept, false,
                              translations)
    # the separation rules read the ratio gaps' mixtures, as they were measured
    in_distance = {key: by_distance.details[key] for key in ("translations_by_side", "mixtures")}
    estimate.details = {**by_ratio.details, "method": method + ", gaps in both margins",
                        "distance_gaps": in_distance}
    if by_ratio.precision_low is not None and by_distance.precision_low is not None:
        estimate.precision_low = (by_ratio.precision_low + by_distance.precision_low) / 2
        estimate.precision_high = (by_ratio.precision_high + by_distance.precision_high) / 2
    return estimate


def _mostly_translations(kept, decoy_false, fits: list[GapMixture], rows: int) -> bool:
    """Pools where most sentences have a translation (a parallel text, Tatoeba-like pools): the
    gap mixture, which takes the bulk of the gaps for the queries without one, then fits its
    null to the translations and finds none apart from it. The decoy, which knows non-translations
    from each side's own language, sees the translations there; it alone is used when it finds
    more than half of the rows translated and the gaps show no second group."""
    separated = np.mean([f.separation() for f in fits]) >= defaults.ESTIMATE_MIN_SEPARATION
    return not separated and translations_of(kept, decoy_false) >= defaults.ESTIMATE_MOSTLY_TRANSLATED * rows


def _decoy_estimate(grid, kept, decoy_false, decoys, n: int, m: int, seed: int, rounds: int) -> NoGoldEstimate:
    """The estimate of the decoy alone (``_mostly_translations``), with its bootstrap interval."""
    translations = translations_of(kept, decoy_false)

    def precision_of(false: np.ndarray) -> np.ndarray:
        return _precision_and_recall(kept, false, translations)[0]

    estimate = NoGoldEstimate(grid, *_precision_and_recall(kept, decoy_false, translations), kept, decoy_false,
                              translations)
    estimate.details = {"method": "decoy (most rows translated)", "queries": [int(len(d)) for d in decoys],
                        "translations_by_side": [round(translations, 1)] * 2, "mixtures": []}
    if rounds and len(grid):
        rng = np.random.default_rng(seed)
        curves = [precision_of(decoy_false_pairs(grid, kept, *(d[rng.integers(0, len(d), len(d))] for d in decoys),
                                                 n, m)) for _ in range(rounds)]
        estimate.precision_low, estimate.precision_high = np.nanquantile(np.array(curves), [0.1, 0.9], axis=0)
    return estimate


def _described(fit: GapMixture) -> dict:
    named = ("share", "null_loc", "null_scale", "true_mean", "true_sd")
    return {**{key: round(getattr(fit, key), 4) for key in named}, "separation": round(fit.separation(), 2)}


def _bootstrap(grid, kept, sides, fits, decoys, seed: int, rounds: int) -> tuple[np.ndarray, np.ndarray]:
    """The 10th and 90th percentiles of the precision over refits on resampled queries (and
    resampled decoy scores): the sampling error, not the error of the models."""
    rng = np.random.default_rng(seed)

    def resampled(values: np.ndarray) -> np.ndarray:
        return rng.integers(0, len(values), len(values))

    curves = []
    for _ in range(rounds):
        drawn, refits = [], []
        for side, fit in zip(sides, fits, strict=True):
            pick = resampled(side.gap)
            again = QueryGaps(side.best[pick], side.gap[pick], side.rows)
            start = GapMixture(fit.share, fit.null_loc, fit.null_scale, fit.true_mean, fit.true_sd, fit.posterior)
            drawn.append(again)
            refits.append(fit_gap_mixture(again.gap, start, defaults.ESTIMATE_BOOTSTRAP_ITERATIONS))
        decoy_false = None
        if decoys is not None:
            decoy_false = decoy_false_pairs(grid, kept, *(d[resampled(d)] for d in decoys), sides[0].rows,
                                            sides[1].rows)
        curves.append(_curves(grid, kept, drawn, refits, decoy_false)[0])
    return tuple(np.nanquantile(np.array(curves), [0.1, 0.9], axis=0))


def _doubt(estimate: NoGoldEstimate, fits: list[GapMixture]) -> str | None:
    """Why the estimate cannot be trusted here, or None. A larger side may count more by its
    size too (each query keeps a small posterior): Hindi news, 544 and 2,044 rows, 29 and 93."""
    by_side, rows = estimate.details["translations_by_side"], estimate.details["rows"]
    more = int(np.argmax(by_side))
    allowed = defaults.ESTIMATE_MAX_SIDE_DISAGREEMENT * max(rows[more] / max(rows[1 - more], 1), 1.0)
    if min(by_side) > 0 and max(by_side) / min(by_side) > allowed:
        return f"the two sides disagree on how many translations there are ({by_side[0]:.0f} and {by_side[1]:.0f})"
    return None


def translations_found(estimate: NoGoldEstimate) -> bool:
    """Whether the gaps hold a group of translations at all: the translations' mean gap beyond
    the spacings' 99th percentile (4.6 Gumbel scales above its location), on average over the
    sides. Unrelated pools, or a language the encoder does not know, give a second group that
    hugs the spacings' tail (4.1-4.3 scales on unrelated pools; 4.8-5.1 for a student that
    barely knows Hindi, 8.5-9.8 for the default encoder on French news)."""
    separation = mean_separation(estimate)
    if separation is None:  # the decoy alone: it found most rows translated
        return estimate.translations > 0
    return separation >= defaults.ESTIMATE_MIN_SEPARATION


def mean_separation(estimate: NoGoldEstimate) -> float | None:
    """The gap mixtures' separation (``GapMixture.separation``), mean over the sides; None for the decoy's alone."""
    separations = [m["separation"] for m in estimate.details.get("mixtures", [])]
    return float(np.mean(separations)) if separations else None


def few_translations(estimate: NoGoldEstimate) -> str | None:
    """A caveat when the pools hold few translations (the estimate is used, with less certainty)."""
    if estimate.translations < defaults.ESTIMATE_MIN_TRANSLATIONS:
        return f"about {estimate.translations:.0f} translations found: too few for a sure estimate"
    return None
