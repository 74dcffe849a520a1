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


def _row_keys(pairs: Pairs) -> np.ndarray:
    """One 64-bit key a pair, in source then target row order (one sort: 5x faster than lexsort)."""
    return pairs.src * (int(pairs.tgt.max(initial=0)) + 1) + pairs.tgt


def _unique_pairs(pairs: Pairs) -> Pairs:
    """Each (source, target) pair once (its first occurrence), in row order."""
    keys = _row_keys(pairs)
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    keep = np.ones(len(order), dtype=bool)
    keep[1:] = keys[1:] != keys[:-1]
    del keys
    return pairs.take(order[keep])


def _concat(a: Pairs, b: Pairs) -> Pairs:
    return Pairs(*(np.concatenate([getattr(a, f), getattr(b, f)]) for f in ("src", "tgt", "score", "cosine")))


def _by_score(pairs: Pairs, in_row_order: bool = False) -> Pairs:
    """Best first; ties broken by source then target row, so the output is deterministic.

    One sort of 64-bit keys: the score's bits, ordered as the floats are, above each pair's
    rank in row order.
    """
    if in_row_order:
        rank = np.arange(len(pairs), dtype=np.uint64)
    else:
        rank = np.empty(len(pairs), dtype=np.uint64)
        rank[np.argsort(_row_keys(pairs), kind="stable")] = np.arange(len(pairs), dtype=np.uint64)
    bits = (pairs.score.astype(np.float32) + np.float32(0)).view(np.uint32)  # + 0: -0.0 sorts as 0.0
    ascending = np.where(bits >> 31, ~bits, bits | np.uint32(1 << 31))  # IEEE order as unsigned integers
    return pairs.take(np.argsort(((~ascending).astype(np.uint64) << np.uint64(32)) | rank))


def _greedy_one_to_one(pairs: Pairs) -> Pairs:
    """Walk pairs best first; keep a pair when neither side has been used yet.

    The walk is done in rounds over arrays instead of pair by pair: a pair that is the best
    remaining one of both its source and its target is kept by the walk whatever comes
    before it (every better pair touching its rows was blocked by one kept earlier), so
    each round keeps all such pairs at once and drops the pairs their rows block. With
    ties broken by row numbers, the rounds keep exactly the pairs the walk keeps (Preis'
    locally dominant edges); most pairs go in the first few rounds. When a round keeps few
    pairs (a chain of pairs each blocking the next), the rest is walked pair by pair.
    At 1M rows a side, 8M candidate pairs: a pair-by-pair walk with Python sets took 19.5 s
    and 170 bytes a pair (benchmarks/RESULTS.md, "mine's one-to-one selection").
    """
    pairs = _by_score(pairs, in_row_order=True)
    total = len(pairs)
    keep = np.zeros(total, dtype=bool)
    if not total:
        return pairs
    src, tgt = pairs.src, pairs.tgt
    used_src = np.zeros(int(src.max()) + 1, dtype=bool)
    used_tgt = np.zeros(int(tgt.max()) + 1, dtype=bool)
    best_src = np.empty(len(used_src), dtype=np.int64)
    best_tgt = np.empty(len(used_tgt), dtype=np.int64)
    alive = np.arange(total, dtype=np.int64)  # positions in best-first order, ascending
    while len(alive) > _WALK_REST_PAIRS:
        s, t = src[alive], tgt[alive]
        best_src.fill(total)
        best_tgt.fill(total)
        np.minimum.at(best_src, s, alive)
        np.minimum.at(best_tgt, t, alive)
        dominant = (best_src[s] == alive) & (best_tgt[t] == alive)
        kept = alive[dominant]
        keep[kept] = True
        used_src[src[kept]] = True
        used_tgt[tgt[kept]] = True
        alive = alive[~(used_src[s] | used_tgt[t])]
        if len(kept) < _WALK_REST_PAIRS // 16:  # a chain: few pairs a round
            break
    # the rest pair by pair, in blocks (Python ints for a block only)
    used_src_bytes, used_tgt_bytes = bytearray(used_src.tobytes()), bytearray(used_tgt.tobytes())
    for start in range(0, len(alive), _WALK_REST_PAIRS):
        block = alive[start : start + _WALK_REST_PAIRS]
        for i, s, t in zip(block.tolist(), src[block].tolist(), tgt[block].tolist(), strict=True):
            if not used_src_bytes[s] and not used_tgt_bytes[t]:
                used_src_bytes[s] = used_tgt_bytes[t] = 1
                keep[i] = True
    return pairs.take(keep)


_WALK_REST_PAIRS = 1 << 16  # fewer remaining pairs than this are walked one by one


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
        # still in row order: the walk sorts by score once
        above = pairs.score >= threshold
        return _greedy_one_to_one(pairs if above.all() else pairs.take(np.flatnonzero(above)))
    else:
        raise ValueError(f"unknown retrieval {retrieval!r}")
    pairs = pairs.take(pairs.score >= threshold)
    return _by_score(pairs)
