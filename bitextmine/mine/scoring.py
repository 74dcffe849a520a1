"""Margin scores and candidate retrieval: pure numpy, arrays in, arrays out.

With NN_k(x) the k nearest targets of source x and NN_k(y) the k nearest sources of
target y (Artetxe & Schwenk 2019):

    avg(x, y) = sum_{z in NN_k(x)} cos(x, z) / 2k  +  sum_{z in NN_k(y)} cos(y, z) / 2k
    ratio     = cos(x, y) / avg(x, y)
    distance  = cos(x, y) - avg(x, y)
    cosine    = cos(x, y)              ("absolute" margin: no margin at all)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bitextmine.choices import RETRIEVALS, SCORE_ALIASES, SCORES  # noqa: F401 (the library's names for them)
from bitextmine.mine.knn import Neighbours


@dataclass
class Pairs:
    """Scored (source, target) pairs, best first."""

    src: np.ndarray  # int64 row numbers in the source vectors
    tgt: np.ndarray  # int64 row numbers in the target vectors
    score: np.ndarray  # float32
    cosine: np.ndarray  # float32

    def __len__(self) -> int:
        return len(self.src)

    def take(self, keep: np.ndarray) -> Pairs:
        return Pairs(self.src[keep], self.tgt[keep], self.score[keep], self.cosine[keep])


def margin_scores(cosine: np.ndarray, src_avg: np.ndarray, tgt_avg: np.ndarray, score: str) -> np.ndarray:
    """The score of pairs with cosine ``cosine`` whose sides have neighbourhood means ``*_avg``."""
    score = SCORE_ALIASES.get(score, score)
    if score == "cosine":
        return cosine.astype(np.float32)
    avg = (src_avg + tgt_avg) / 2
    if score == "ratio":
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(avg > 0, cosine / avg, 0).astype(np.float32)
    if score == "distance":
        return (cosine - avg).astype(np.float32)
    raise ValueError(f"unknown score {score!r}")


def candidates(fwd: Neighbours, bwd: Neighbours, score: str) -> tuple[Pairs, Pairs]:
    """Every forward candidate (x, NN_k(x)) and backward candidate (NN_k(y), y), scored."""
    src_avg, tgt_avg = fwd.mean_sim(), bwd.mean_sim()

    def scored(queries_are_src: bool, nb: Neighbours) -> Pairs:
        n, k = nb.ids.shape
        query = np.repeat(np.arange(n, dtype=np.int64), k)
        other = nb.ids.reshape(-1)
        cos = nb.sims.reshape(-1)
        valid = other >= 0
        query, other, cos = query[valid], other[valid], cos[valid]
        src, tgt = (query, other) if queries_are_src else (other, query)
        return Pairs(src, tgt, margin_scores(cos, src_avg[src], tgt_avg[tgt], score), cos)

    return scored(True, fwd), scored(False, bwd)


def best_per(pairs: Pairs, key: np.ndarray) -> Pairs:
    """For each distinct ``key`` value, its best-scoring pair."""
    order = np.lexsort((-pairs.score, key))  # by key, then best score first
    first = np.ones(len(order), dtype=bool)
    first[1:] = key[order][1:] != key[order][:-1]
    return pairs.take(order[first])


def _unique_pairs(pairs: Pairs) -> Pairs:
    order = np.lexsort((pairs.tgt, pairs.src))
    keep = np.ones(len(order), dtype=bool)
    keep[1:] = (pairs.src[order][1:] != pairs.src[order][:-1]) | (pairs.tgt[order][1:] != pairs.tgt[order][:-1])
    return pairs.take(order[keep])


def _concat(a: Pairs, b: Pairs) -> Pairs:
    return Pairs(*(np.concatenate([getattr(a, f), getattr(b, f)]) for f in ("src", "tgt", "score", "cosine")))


def _by_score(pairs: Pairs) -> Pairs:
    # best first; ties broken by source then target row, so the output is deterministic
    return pairs.take(np.lexsort((pairs.tgt, pairs.src, -pairs.score)))


def _greedy_one_to_one(pairs: Pairs) -> Pairs:
    """Walk pairs best first; keep a pair when neither side has been used yet."""
    pairs = _by_score(pairs)
    used_src: set[int] = set()
    used_tgt: set[int] = set()
    keep = np.zeros(len(pairs), dtype=bool)
    for i, (s, t) in enumerate(zip(pairs.src.tolist(), pairs.tgt.tolist(), strict=True)):
        if s not in used_src and t not in used_tgt:
            used_src.add(s)
            used_tgt.add(t)
            keep[i] = True
    return pairs.take(keep)


def retrieve(fwd_pairs: Pairs, bwd_pairs: Pairs, retrieval: str, threshold: float) -> Pairs:
    """Select pairs from the candidates; return those scoring >= ``threshold``, best first.

    - ``fwd``: the best target of each source; ``bwd``: the best source of each target;
    - ``intersect``: pairs that are both (mutual best); ``union``: pairs that are either;
    - ``max``: all candidates of both directions, best first, each kept when neither its
      source nor its target is taken yet (a greedy one-to-one matching).

    The threshold is applied before the greedy walk: a pair below it comes after every
    pair above it and so could never have blocked one, and the walk stays short.
    """
    if retrieval == "fwd":
        pairs = best_per(fwd_pairs, fwd_pairs.src)
    elif retrieval == "bwd":
        pairs = best_per(bwd_pairs, bwd_pairs.tgt)
    elif retrieval in ("intersect", "union"):
        best_fwd = best_per(fwd_pairs, fwd_pairs.src)
        best_bwd = best_per(bwd_pairs, bwd_pairs.tgt)
        both = _concat(best_fwd, best_bwd)
        if retrieval == "union":
            pairs = _unique_pairs(both)
        else:
            keys = both.src * (max(both.tgt.max(initial=0), 0) + 1) + both.tgt
            _, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
            pairs = _unique_pairs(both.take(counts[inverse] > 1))
    elif retrieval == "max":
        pairs = _unique_pairs(_concat(fwd_pairs, bwd_pairs))
        pairs = _greedy_one_to_one(pairs.take(pairs.score >= threshold))
    else:
        raise ValueError(f"unknown retrieval {retrieval!r}")
    pairs = pairs.take(pairs.score >= threshold)
    return _by_score(pairs)
