"""Tatoeba-style retrieval: aligned files, P@1 in both directions (xsim)."""

from __future__ import annotations

import numpy as np

from bitextmine import defaults
from bitextmine.evaluate import tatoeba_metrics
from bitextmine.mine.knn import exact_knn_both_ways
from bitextmine.mine.scoring import candidates


def top1(x: np.ndarray, y: np.ndarray, score: str = "cosine", k: int = defaults.K,
         device: str = "cpu") -> tuple[np.ndarray, np.ndarray]:
    """Best target of every source and best source of every target.

    ``score="cosine"`` is plain nearest neighbour; a margin re-ranks each query's k
    nearest candidates by margin (LASER's xsim with margin).
    """
    if score == "cosine":
        fwd, bwd = exact_knn_both_ways(x, y, 1, device=device)
        return fwd.ids[:, 0], bwd.ids[:, 0]
    fwd, bwd = exact_knn_both_ways(x, y, k, device=device)
    fwd_pairs, bwd_pairs = candidates(fwd, bwd, score)

    def best(query: np.ndarray, other: np.ndarray, scores: np.ndarray, n: int) -> np.ndarray:
        order = np.lexsort((-scores, query))
        first = np.ones(len(order), dtype=bool)
        first[1:] = query[order][1:] != query[order][:-1]
        out = np.full(n, -1, dtype=np.int64)
        out[query[order][first]] = other[order][first]
        return out

    return (best(fwd_pairs.src, fwd_pairs.tgt, fwd_pairs.score, len(x)),
            best(bwd_pairs.tgt, bwd_pairs.src, bwd_pairs.score, len(y)))


def evaluate_aligned(x: np.ndarray, y: np.ndarray, name: str, score: str = "cosine",
                     device: str = "cpu") -> dict[str, float]:
    """P@1 of aligned embeddings (row i of x translates row i of y)."""
    if len(x) != len(y):
        raise ValueError("aligned sets must have the same number of rows")
    fwd, bwd = top1(x, y, score, device=device)
    return tatoeba_metrics(fwd, bwd, name)
