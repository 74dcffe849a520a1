"""The threshold `mine` uses when none is given, and a precision estimate without gold.

**Fixed thresholds** are what the encoder declares for its embedding space (its identity's
``mining_thresholds``, recorded in every set it embeds): a student checkpoint declared
compatible with its teacher shares its scale, so it shares its thresholds, and which side
is ``--src`` does not matter. Encoders that declare none get the LASER-scale values of
``defaults.THRESHOLDS``.

**Adaptive** (the default for the margin scores): estimate, on the pools being mined,
how many of the pairs kept at each threshold t are false, and take the threshold with
the best estimated F1 among those whose estimated precision reaches the target
(``defaults.TARGET_PRECISION``), never below the fixed floor.

The false pairs are estimated with a *decoy*: each side mined against itself (a
sentence's own row left out). The nearest other sentence of the same language is never
its translation, and the margin divides out the monolingual/cross-lingual difference in
cosine scale, so the best margin a sentence reaches in its own language is a sample of
the best margin a sentence *without* a translation reaches across languages. With
q(t) the share of decoy queries whose best score is >= t among the n - 1 other rows of
their side, a pair of rows is a false pair >= t with probability p(t) ~ q(t) / (n - 1),
and a source without translation finds a false partner among the m - T targets without
translation with probability 1 - (1 - p(t))^(m - T). Both sides give such a p; their
geometric mean is used, so that swapping the sides changes nothing. Monolingual
near-duplicates (cosine >= defaults.DECOY_DUPLICATE_COSINE) are left out of the decoy:
they are the same sentence written twice, and across languages such a pair is a
translation, not a false pair.

Measured in benchmarks/mining_defaults.py (benchmarks/RESULTS.md). It fails when the
sides are not alike (the decoy then describes one language's pool only), and it is
meaningless for the plain cosine, which the margin's normalisation does not apply to.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from bitextmine import defaults
from bitextmine.embed.corpus import release_mapped
from bitextmine.encoders import shared_thresholds
from bitextmine.mine.knn import Neighbours, exact_knn, exact_knn_both_ways
from bitextmine.mine.scoring import SCORE_ALIASES, margin_scores

log = logging.getLogger(__name__)

# --- fixed thresholds, by embedding space ------------------------------------------------

def fixed_threshold(score: str, *identities) -> tuple[float, str]:
    """(threshold, how it was chosen) for ``score`` without looking at the pools: the one the
    identities' encoder declares for their embedding space (``EncoderIdentity``), else LASER's."""
    score = SCORE_ALIASES.get(score, score)
    declared = shared_thresholds(*identities)
    if declared is not None and score in declared.scores:
        return declared.scores[score], "encoder default (fixed)"
    return defaults.THRESHOLDS[score], "LASER-scale default (fixed)"


# --- the decoy ---------------------------------------------------------------------------

def _own_language_neighbours(z, rows: np.ndarray, k: int, device: str) -> tuple[np.ndarray, Neighbours]:
    """For ``rows`` of ``z``: the mean cosine to their k nearest other rows (the margin's
    neighbourhood term, as mining computes it across languages), and their k nearest other
    rows that are not near-duplicates of them (the candidates for a false pair)."""
    n = len(z)
    q = z if len(rows) == n else np.asarray(z[rows], dtype=np.float32)
    # k + 2: the row itself and one near-duplicate can be dropped without running short
    found = exact_knn(q, z, min(k + 2, n), device=device)
    other = (found.ids != rows[:, None]) & (found.ids >= 0)

    def first_k(keep: np.ndarray) -> Neighbours:
        order = np.argsort(~keep, axis=1, kind="stable")[:, :k]
        valid = np.take_along_axis(keep, order, 1)
        return Neighbours(np.where(valid, np.take_along_axis(found.sims, order, 1), -np.inf).astype(np.float32),
                          np.where(valid, np.take_along_axis(found.ids, order, 1), -1))

    # the mean keeps the near-duplicates: across languages they are in a sentence's
    # neighbourhood too (left out, a row among duplicates only had a mean of 0, and its
    # pairs a ratio margin near 2)
    return first_k(other).mean_sim(), first_k(other & (found.sims < defaults.DECOY_DUPLICATE_COSINE))


def decoy_best_scores(z, k: int, score: str, queries: int, seed: int, device: str = "cpu") -> np.ndarray:
    """Best margin score of rows of ``z`` among the other rows of ``z`` (same language).

    Every row is a query when there are at most ``queries``; otherwise a seeded sample,
    and the neighbourhoods of the sample's neighbours are searched too (the margin needs
    both sides' means). A row whose nearest others are all near-duplicates has no score
    (-inf).
    """
    n = len(z)
    rows = np.arange(n) if n <= queries else np.sort(np.random.default_rng(seed).choice(n, queries, replace=False))
    means = np.zeros(n, dtype=np.float32)
    means[rows], nb = _own_language_neighbours(z, rows, k, device)
    others = np.setdiff1d(np.unique(nb.ids[nb.ids >= 0]), rows)
    if len(others):
        means[others] = _own_language_neighbours(z, others, k, device)[0]
    scores = margin_scores(nb.sims, means[rows][:, None], means[np.maximum(nb.ids, 0)], score)
    return np.where(nb.ids >= 0, scores, -np.inf).max(axis=1)


# --- the estimate ------------------------------------------------------------------------

@dataclass
class NoGoldEstimate:
    """Estimated precision and recall of the pairs kept at each threshold (ascending)."""

    thresholds: np.ndarray
    precision: np.ndarray
    recall: np.ndarray
    pairs: np.ndarray  # pairs kept (score >= threshold)
    false_pairs: np.ndarray  # estimated
    translations: float  # estimated number of translations among the pairs
    warning: str | None = None  # why the estimate cannot be trusted, when it cannot
    details: dict = field(default_factory=dict)
    cautious_precision: np.ndarray | None = None  # with the decoy counts one standard error up

    def cautious_f1(self) -> np.ndarray:
        """F1 from the cautious precision (and the same recall)."""
        p = self.precision if self.cautious_precision is None else self.cautious_precision
        r = self.recall * np.where(self.precision > 0, p / np.maximum(self.precision, 1e-12), 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(p + r > 0, 2 * p * r / (p + r), 0.0)


def _exceeding(sorted_scores: np.ndarray, grid: np.ndarray) -> np.ndarray:
    return len(sorted_scores) - np.searchsorted(sorted_scores, grid, side="left")


def decoy_tail(decoy: np.ndarray, grid: np.ndarray, caution: float = 0.0,
               tail: int = defaults.DECOY_TAIL) -> np.ndarray:
    """Share of decoy scores >= each threshold, with an exponential tail past the ``tail``-th best.

    Counted shares run out at the decoy's best score, where the estimate would jump to
    no false pair at all; past the ``tail``-th best score, the share is extrapolated
    with an exponential fitted to the ``tail`` best (peaks over a threshold). Counts
    are raised by ``caution`` standard errors (Poisson).
    """
    ordered = np.sort(decoy[np.isfinite(decoy)])
    if len(ordered) == 0:
        return np.zeros(len(grid))
    count = _exceeding(ordered, grid).astype(np.float64)
    if len(ordered) > tail:
        top = ordered[-tail:]
        start = ordered[-tail - 1]
        scale = max(float(np.mean(top - start)), 1e-9)
        beyond = grid > start
        count[beyond] = tail * np.exp(-(grid[beyond] - start) / scale)
    return (count + caution * np.sqrt(count)) / len(ordered)


def threshold_grid(scores: np.ndarray, points: int = defaults.ESTIMATE_POINTS) -> np.ndarray:
    """Ascending thresholds from near the lowest pair score to just below the best."""
    if len(scores) == 0:
        return np.zeros(0)
    lo, hi = np.quantile(scores, [0.01, 1.0])
    return np.linspace(lo, hi, points, endpoint=False)


def estimate_from_decoys(pair_scores: np.ndarray, decoy_src: np.ndarray, decoy_tgt: np.ndarray, n: int,
                         m: int, caution: float = 0.0) -> NoGoldEstimate:
    """Precision and recall at each threshold from the pairs' scores and the two decoys.

    ``n``/``m``: rows of each side. The number of translations T is the most that the
    pairs kept minus the false pairs reach where precision is at least a half; the rows
    without translation are n - T and m - T. Symmetric in the two sides. ``caution``:
    standard errors added to the decoy counts.
    """
    scores = np.sort(np.asarray(pair_scores, dtype=np.float64))
    grid = threshold_grid(scores)
    kept = _exceeding(scores, grid).astype(np.float64)
    # per-pair exceedance: each decoy query met n - 1 (m - 1) others
    p_src = decoy_tail(decoy_src, grid, caution) / max(n - 1, 1)
    p_tgt = decoy_tail(decoy_tgt, grid, caution) / max(m - 1, 1)
    p_pair = np.sqrt(p_src * p_tgt)
    log_miss = np.log1p(-np.minimum(p_pair, 1 - 1e-12))
    translations = 0.0
    for _ in range(3):  # rows without translation depend on T, T on the false pairs
        # rows of either side without translation that find one of the other side's such rows
        lonely_src, lonely_tgt = max(n - translations, 0), max(m - translations, 0)
        false = np.minimum(lonely_src * -np.expm1(lonely_tgt * log_miss), lonely_tgt * -np.expm1(lonely_src * log_miss))
        false = np.minimum(false, kept)
        translations = _translations(kept, false)
    estimate = _estimate(grid, kept, false, translations)
    estimate.details = {"decoy_queries": [int(len(decoy_src)), int(len(decoy_tgt))]}
    return estimate


def _translations(kept: np.ndarray, false: np.ndarray) -> float:
    """The most true pairs (kept - false) at any threshold where they are at least half."""
    true = kept - false
    usable = true >= kept / 2
    return float(true[usable].max()) if usable.any() else 0.0


def _estimate(grid: np.ndarray, kept: np.ndarray, false: np.ndarray, translations: float) -> NoGoldEstimate:
    # no more true pairs than translations: below the scores of the translations, every
    # further pair is false (the decoy count saturates there, at the rows without one)
    false = np.maximum(false, kept - translations)
    true = kept - false
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(kept > 0, true / kept, np.nan)
        recall = np.clip(true / translations, 0, 1) if translations > 0 else np.zeros(len(grid))
    return NoGoldEstimate(grid, precision, recall, kept, false, translations)


def false_rate_by_score(estimate: NoGoldEstimate):
    """The estimated share of false pairs among pairs of each score (a function of scores).

    From the false pairs and pairs kept between neighbouring thresholds, made
    non-increasing in the score (isotonic regression weighted by pairs).
    """
    from sklearn.isotonic import IsotonicRegression

    kept_between = -np.diff(np.append(estimate.pairs, 0))
    false_between = -np.diff(np.append(estimate.false_pairs, 0))
    use = kept_between > 0
    if not use.any():
        return lambda scores: np.ones(len(scores))
    rate = np.clip(false_between[use] / kept_between[use], 0, 1)
    fit = IsotonicRegression(increasing=False, y_min=0, y_max=1, out_of_bounds="clip")
    fit.fit(estimate.thresholds[use], rate, sample_weight=kept_between[use])
    return fit.predict


def estimate_for_score(pairs, false_rate) -> NoGoldEstimate:
    """The estimate for pairs selected by another score, each false with ``false_rate``."""
    order = np.argsort(-pairs.score, kind="stable")
    grid = threshold_grid(pairs.score)
    ordered = np.sort(pairs.score.astype(np.float64))
    kept = _exceeding(ordered, grid).astype(np.float64)
    false_cumulative = np.concatenate([[0.0], np.cumsum(false_rate[order])])
    false = false_cumulative[kept.astype(np.int64)]
    return _estimate(grid, kept, false, _translations(kept, false))


def estimate_without_gold(pairs, x, y, cfg, fwd: Neighbours, bwd: Neighbours, device: str = "cpu",
                          seed: int = defaults.SEED) -> NoGoldEstimate:
    """The decoy estimate for ``pairs`` (every pair the retrieval selects, scored by ``cfg.score``).

    The decoys are scored by the ratio margin, whose normalisation makes the two
    languages comparable. For another score, each pair is judged by its ratio margin:
    the share of false pairs among ratio-mined pairs of that ratio score. The estimate
    comes with a cautious precision (decoy counts one standard error up).
    """
    from bitextmine.mine.scoring import candidates, retrieve

    score = SCORE_ALIASES.get(cfg.score, cfg.score)
    n, m = len(x), len(y)
    src_means, tgt_means = fwd.mean_sim(), bwd.mean_sim()
    decoy_src = decoy_best_scores(x, cfg.k, "ratio", defaults.DECOY_QUERIES, seed, device)
    decoy_tgt = decoy_best_scores(y, cfg.k, "ratio", defaults.DECOY_QUERIES, seed, device)
    by_ratio = pairs if score == "ratio" else retrieve(*candidates(fwd, bwd, "ratio"), cfg.retrieval, -np.inf)
    point, cautious = (estimate_from_decoys(by_ratio.score, decoy_src, decoy_tgt, n, m, caution)
                       for caution in (0.0, defaults.DECOY_CAUTION))
    if score != "ratio":
        ratio = margin_scores(pairs.cosine, src_means[pairs.src], tgt_means[pairs.tgt], "ratio").astype(np.float64)
        point, cautious = (estimate_for_score(pairs, false_rate_by_score(e)(ratio)) for e in (point, cautious))
    point.cautious_precision = cautious.precision
    point.details = {"decoy_queries": [int(len(decoy_src)), int(len(decoy_tgt))], "decoy_score": "ratio"}
    point.warning = _doubt(point)
    return point


def _doubt(estimate: NoGoldEstimate) -> str | None:
    if estimate.translations < defaults.ESTIMATE_MIN_TRANSLATIONS:
        return (f"about {estimate.translations:.0f} translations found: too few to estimate precision "
                "(the pools may hold almost none)")
    return None


# --- the choice --------------------------------------------------------------------------

@dataclass
class ThresholdChoice:
    threshold: float
    source: str  # user | adaptive | fixed
    reason: str  # what the sidecar and the log say, e.g. "adaptive: estimated precision 0.93 at target 0.90"
    estimate: NoGoldEstimate | None = None


def choose_threshold(pairs, x, y, cfg, identities, fwd: Neighbours, bwd: Neighbours,
                     device: str = "cpu") -> ThresholdChoice:
    """The threshold for ``pairs`` (every pair the retrieval selects, no threshold).

    ``cfg.threshold`` when given; else the threshold with the best estimated F1 among
    those whose cautious estimated precision reaches ``cfg.target_precision`` (when none
    does, the one of best estimated precision, at least the fixed threshold). Pools with
    few translations keep the estimate's threshold: a few sure pairs, not a guess.
    """
    if cfg.threshold is not None:
        return ThresholdChoice(float(cfg.threshold), "user", "user")
    fixed, fixed_reason = fixed_threshold(cfg.score, *identities)
    estimate = estimate_without_gold(pairs, x, y, cfg, fwd, bwd, device)
    if not len(estimate.thresholds):
        return ThresholdChoice(fixed, "fixed", f"{fixed_reason}; no pairs to estimate precision on", estimate)
    target = cfg.target_precision
    cautious = np.nan_to_num(estimate.cautious_precision, nan=0.0)
    # pools with few translations: still the estimate's threshold (a few sure pairs), said so
    caveat = f" ({estimate.warning})" if estimate.warning else ""
    ok = cautious >= target
    if not ok.any():
        best = int(np.argmax(cautious))  # the lowest threshold of the best estimate
        return ThresholdChoice(max(fixed, float(estimate.thresholds[best])), "adaptive",
                               f"adaptive: no threshold reaches estimated precision {target:.2f}; the best "
                               f"estimate is {cautious[best]:.2f}{caveat}", estimate)
    i = int(np.argmax(np.where(ok, estimate.cautious_f1(), -1)))
    return ThresholdChoice(float(estimate.thresholds[i]), "adaptive",
                           f"adaptive: estimated precision {cautious[i]:.2f} at target {target:.2f}{caveat}", estimate)


@dataclass
class Selection:
    pairs: object  # scoring.Pairs kept, best first
    choice: ThresholdChoice
    histogram: dict  # of every pair the retrieval selects, before the threshold


def score_histogram(scores: np.ndarray, bins: int = defaults.HISTOGRAM_BINS) -> dict:
    """A compact histogram: ``bins`` equal bins from the lowest to the highest score."""
    if len(scores) == 0:
        return {"edges": [], "counts": []}
    counts, edges = np.histogram(scores.astype(np.float64), bins=bins)
    return {"edges": [round(float(e), 5) for e in edges], "counts": counts.tolist()}


def mine_and_choose(x, y, cfg, identities, fwd: Neighbours | None = None, bwd: Neighbours | None = None,
                    device: str = "cpu", progress: bool = False):
    """Every pair the retrieval selects (no threshold, best first) and the threshold for them.

    The pairs at threshold t are those of score >= t: the greedy selection never lets a
    lower pair block a higher one, so one retrieval serves every threshold. ``progress``:
    a bar for the exact search.
    """
    from bitextmine.mine.scoring import candidates, retrieve

    if fwd is None or bwd is None:
        fwd, bwd = exact_knn_both_ways(x, y, cfg.k, device=device, block_rows=cfg.block_rows, progress=progress)
    # the selection holds every candidate pair; the sides' mapped pages (up to
    # MAPPED_RESIDENT_BYTES each, SelectedRows) need not stay resident beside it
    release_mapped(x, y)
    fwd_pairs, bwd_pairs = candidates(fwd, bwd, cfg.score)
    every = retrieve(fwd_pairs, bwd_pairs, cfg.retrieval, -np.inf)
    return every, choose_threshold(every, x, y, cfg, identities, fwd, bwd, device)


def select_pairs(x, y, cfg, identities, fwd: Neighbours | None = None, bwd: Neighbours | None = None,
                 device: str = "cpu", progress: bool = False) -> Selection:
    """Mine ``x`` against ``y`` and keep the pairs at the chosen threshold (and ``cfg.top_n``)."""
    every, choice = mine_and_choose(x, y, cfg, identities, fwd, bwd, device, progress)
    pairs = every.take(np.flatnonzero(every.score >= choice.threshold))
    if cfg.top_n is not None:
        pairs = pairs.take(np.arange(min(cfg.top_n, len(pairs))))
    return Selection(pairs, choice, score_histogram(every.score))


def threshold_record(selection: Selection, points: int = defaults.SIDECAR_CURVE_POINTS) -> dict:
    """What the sidecar keeps for `report`: the histogram and the estimate (when there is one)."""
    record = {"score_histogram": selection.histogram}
    estimate = selection.choice.estimate
    if estimate is not None and len(estimate.thresholds):
        rows = np.unique(np.linspace(0, len(estimate.thresholds) - 1, points).astype(int))

        def column(values):
            return [None if not np.isfinite(v) else round(float(v), 5) for v in np.asarray(values)[rows]]

        record["threshold_estimate"] = {
            "method": "decoy", "thresholds": column(estimate.thresholds), "precision": column(estimate.precision),
            "recall": column(estimate.recall), "pairs": [int(v) for v in estimate.pairs[rows]],
            "estimated_translations": round(estimate.translations, 1), "warning": estimate.warning}
    return record
