"""Margin formulas and the five retrieval strategies on hand-made neighbourhoods."""

import numpy as np
import pytest

from bitextmine.mine.knn import Neighbours
from bitextmine.mine.scoring import candidates, margin_scores, retrieve


def test_margin_formulas():
    cos, src_avg, tgt_avg = np.array([0.8]), np.array([0.5]), np.array([0.3])
    avg = (0.5 + 0.3) / 2  # sum over NN_k(x) / 2k + sum over NN_k(y) / 2k
    assert margin_scores(cos, src_avg, tgt_avg, "ratio")[0] == pytest.approx(0.8 / avg)
    assert margin_scores(cos, src_avg, tgt_avg, "distance")[0] == pytest.approx(0.8 - avg)
    assert margin_scores(cos, src_avg, tgt_avg, "cosine")[0] == pytest.approx(0.8)
    assert margin_scores(cos, src_avg, tgt_avg, "absolute")[0] == pytest.approx(0.8)


@pytest.fixture
def neighbourhoods():
    # 3 sources, 3 targets, k=2. Source 0 and 1 both like target 0 best; target 2 likes source 2.
    fwd = Neighbours(np.array([[0.9, 0.5], [0.8, 0.7], [0.6, 0.2]], np.float32),
                     np.array([[0, 1], [0, 1], [2, 0]]))
    bwd = Neighbours(np.array([[0.9, 0.8], [0.7, 0.5], [0.6, 0.1]], np.float32),
                     np.array([[0, 1], [1, 0], [2, 0]]))
    return candidates(fwd, bwd, "cosine")


def pairs_of(p):
    return list(zip(p.src.tolist(), p.tgt.tolist(), strict=True))


def test_retrieval_strategies(neighbourhoods):
    fwd, bwd = neighbourhoods
    assert pairs_of(retrieve(fwd, bwd, "fwd", -1)) == [(0, 0), (1, 0), (2, 2)]
    assert pairs_of(retrieve(fwd, bwd, "bwd", -1)) == [(0, 0), (1, 1), (2, 2)]
    assert pairs_of(retrieve(fwd, bwd, "intersect", -1)) == [(0, 0), (2, 2)]
    assert pairs_of(retrieve(fwd, bwd, "union", -1)) == [(0, 0), (1, 0), (1, 1), (2, 2)]
    # greedy one-to-one: (0,0) 0.9 first; (1,0) 0.8 is blocked; (1,1) 0.7 taken; (2,2) 0.6
    assert pairs_of(retrieve(fwd, bwd, "max", -1)) == [(0, 0), (1, 1), (2, 2)]


def test_threshold_and_order(neighbourhoods):
    fwd, bwd = neighbourhoods
    kept = retrieve(fwd, bwd, "max", 0.65)
    assert pairs_of(kept) == [(0, 0), (1, 1)]
    assert (np.diff(kept.score) <= 0).all()
    assert len(retrieve(fwd, bwd, "max", 5.0)) == 0


def _walk_pair_by_pair(pairs):
    """The one-to-one walk as defined: best first (ties by rows), keep when both sides are free."""
    order = np.lexsort((pairs.tgt, pairs.src, -pairs.score))
    used_src, used_tgt, kept = set(), set(), []
    for i in order.tolist():
        s, t = int(pairs.src[i]), int(pairs.tgt[i])
        if s not in used_src and t not in used_tgt:
            used_src.add(s)
            used_tgt.add(t)
            kept.append((s, t, float(pairs.score[i])))
    return kept


def _every_candidate_once(fwd, bwd):
    """Each (source, target) candidate of either direction once, with its cosine as first met
    (the forward lists first), built pair by pair."""
    from bitextmine.mine.scoring import Pairs

    first = {}
    for s in range(fwd.ids.shape[0]):
        for t, cos in zip(fwd.ids[s].tolist(), fwd.sims[s].tolist(), strict=True):
            first.setdefault((s, t), cos)
    for t in range(bwd.ids.shape[0]):
        for s, cos in zip(bwd.ids[t].tolist(), bwd.sims[t].tolist(), strict=True):
            first.setdefault((s, t), cos)
    src, tgt = (np.array(side, dtype=np.int64) for side in zip(*first, strict=True))
    score = np.array(list(first.values()), dtype=np.float32)
    return Pairs(src, tgt, score, score)


@pytest.mark.parametrize("rest", [1 << 16, 32, 1])  # pair by pair; rounds until a chain; rounds only
@pytest.mark.parametrize("seed", range(6))
def test_max_retrieval_is_the_pair_by_pair_walk(monkeypatch, rest, seed):
    """The rounds of the one-to-one selection keep exactly what the walk keeps, with ties,
    pairs found in both directions, and chains where each pair blocks the next."""
    import bitextmine.mine.scoring as scoring

    monkeypatch.setattr(scoring, "_WALK_REST_PAIRS", rest)
    rng = np.random.default_rng(seed)
    n, m, k = 300, 250, 4
    # scores on a coarse grid: many ties
    fwd = Neighbours(np.round(rng.uniform(0, 1, (n, k)), 1).astype(np.float32), rng.integers(0, m, (n, k)))
    bwd = Neighbours(np.round(rng.uniform(0, 1, (m, k)), 1).astype(np.float32), rng.integers(0, n, (m, k)))
    fwd_pairs, bwd_pairs = candidates(fwd, bwd, "cosine")
    expected = _walk_pair_by_pair(_every_candidate_once(fwd, bwd))
    kept = retrieve(fwd_pairs, bwd_pairs, "max", -np.inf)
    assert list(zip(kept.src.tolist(), kept.tgt.tolist(), kept.score.tolist(), strict=True)) == expected
    # a chain: pair i blocks pair i + 1 (shares its target), so one round keeps one pair
    chain_src = np.arange(50) // 2
    chain_tgt = (np.arange(50) + 1) // 2
    chain = scoring.Pairs(chain_src, chain_tgt, np.linspace(1, 0.5, 50).astype(np.float32), np.zeros(50, np.float32))
    kept = scoring._greedy_one_to_one(chain)
    assert list(zip(kept.src.tolist(), kept.tgt.tolist(), strict=True)) == [(s, t) for s, t, _ in
                                                                               _walk_pair_by_pair(chain)]


def test_best_first_order_of_negative_and_infinite_scores():
    import bitextmine.mine.scoring as scoring

    score = np.array([-0.0, 0.5, -np.inf, 0.0, -2.5, np.inf, 1e-30, -1e-30], np.float32)
    pairs = scoring.Pairs(np.arange(8), np.zeros(8, np.int64), score, score)
    ordered = scoring._by_score(pairs)
    assert ordered.score.tolist() == sorted(score.tolist(), reverse=True)
    assert ordered.src[ordered.score == 0].tolist() == [0, 3]  # -0.0 and 0.0 tie: by row
