"""Pools whose truth is known, for checking threshold estimates (``calibrate``) against it.

Aligned translation pairs are split four ways: seed pairs (what ``calibrate --seeds``
is given), true pairs planted in both pools, and sentences planted in one pool only
(their translations left out). Mining the pools then gives, at every threshold, the
true precision that an estimate should match.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bitextmine.mine import mine_vectors

SEEDS, TRUE, SOURCE_ONLY, TARGET_ONLY = 200, 300, 250, 250  # of 1,000 pairs (a Tatoeba test set)


@dataclass
class PlantedPools:
    x: np.ndarray  # source pool (fp16 rows)
    y: np.ndarray  # target pool
    seed_src: np.ndarray  # the seed pairs' vectors, not in the pools
    seed_tgt: np.ndarray
    gold: set[tuple[int, int]]  # (x row, y row) of every true pair


def planted_pools(encoder, src: list[str], tgt: list[str], seed: int = 0) -> PlantedPools:
    """Embed ``src[i]``/``tgt[i]`` (translations; at least 1,000) into pools of known truth."""
    order = np.random.default_rng(seed).permutation(len(src))
    cuts = np.cumsum([SEEDS, TRUE, SOURCE_ONLY, TARGET_ONLY])
    seeds, true, src_only, tgt_only = np.split(order[: cuts[-1]], cuts[:-1])
    rng = np.random.default_rng(seed + 1)
    x_rows = rng.permutation(np.concatenate([true, src_only]))
    y_rows = rng.permutation(np.concatenate([true, tgt_only]))
    where_y = {row: j for j, row in enumerate(y_rows.tolist())}
    return PlantedPools(
        x=encoder.encode([src[i] for i in x_rows]).astype(np.float16),
        y=encoder.encode([tgt[i] for i in y_rows]).astype(np.float16),
        seed_src=encoder.encode([src[i] for i in seeds]),
        seed_tgt=encoder.encode([tgt[i] for i in seeds]),
        gold={(i, where_y[row]) for i, row in enumerate(x_rows.tolist()) if row in where_y},
    )


def precision_by_threshold(scores: np.ndarray, correct: np.ndarray,
                           thresholds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(precision, pairs) of the pairs scoring >= each threshold; precision nan where none."""
    order = np.argsort(-scores, kind="stable")
    hits = np.concatenate([[0], np.cumsum(correct[order])])
    kept = np.searchsorted(-scores[order], -np.asarray(thresholds), side="right")  # scores >= t
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(kept > 0, hits[kept] / np.maximum(kept, 1), np.nan)
    return precision, kept


def true_precision(pools: PlantedPools, thresholds: np.ndarray, cfg) -> tuple[np.ndarray, np.ndarray]:
    """(precision, pairs) at each threshold of what ``cfg`` mines from the pools, by the gold pairs."""

    pairs = mine_vectors(pools.x, pools.y, cfg, threshold=-np.inf)
    correct = np.array([(s, t) in pools.gold for s, t in zip(pairs.src.tolist(), pairs.tgt.tolist(), strict=True)],
                       dtype=bool)
    return precision_by_threshold(pairs.score, correct, thresholds)


def curve_errors(estimated: np.ndarray, truth: np.ndarray, pairs: np.ndarray,
                 min_pairs: int = 20) -> tuple[float, float]:
    """Mean and largest |estimated - true| precision, in points, where at least ``min_pairs`` are kept."""
    use = (pairs >= min_pairs) & ~np.isnan(estimated) & ~np.isnan(truth)
    diff = np.abs(estimated[use] - truth[use]) * 100
    return float(diff.mean()), float(diff.max())
