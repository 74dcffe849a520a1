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
