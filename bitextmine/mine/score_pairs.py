"""Margin-score an existing bitext against large monolingual pools.

A margin needs neighbourhoods: avg(x, y) averages x's k nearest targets and y's k
nearest sources. A crawled bitext alone does not have them (which is why scoring it
with a margin is usually said to be impossible); embedding sets of monolingual text in
both languages do. Each pair's sides are embedded with the pools' encoder, searched in
the opposite pool, and scored with the same formula as ``bitextmine mine``.
"""

from __future__ import annotations

import numpy as np

from bitextmine import defaults
from bitextmine.embed.corpus import EmbeddingCorpus, SelectedRows
from bitextmine.errors import BitextmineError
from bitextmine.mine.knn import exact_knn
from bitextmine.mine.scoring import score_pairs


def _non_blank(corpus: EmbeddingCorpus) -> SelectedRows:
    return SelectedRows(corpus, corpus.non_blank_ids())


def neighbourhood_means(queries: np.ndarray, pool, k: int, device: str = "cpu") -> np.ndarray:
    """Mean cosine of each query to its k nearest rows of ``pool``."""
    return exact_knn(queries, pool, k, device=device).mean_sim()


def score_bitext(src_texts: list[str], tgt_texts: list[str], src_pool: EmbeddingCorpus, tgt_pool: EmbeddingCorpus,
                 encoder, score: str = defaults.MARGIN, k: int = defaults.K, device: str = "cpu") -> np.ndarray:
    """Scores of the pairs (src_texts[i], tgt_texts[i]) with neighbourhoods from the pools."""
    if encoder.identity.space() != src_pool.encoder.space() or encoder.identity.space() != tgt_pool.encoder.space():
        raise BitextmineError("the pools were embedded with another encoder than the one given",
                              path=src_pool.sets[0].path)
    x = encoder.encode(src_texts)
    y = encoder.encode(tgt_texts)
    cosine = (x * y).sum(axis=1)
    if score in ("cosine", "absolute"):
        return cosine.astype(np.float32)
    src_avg = neighbourhood_means(x, _non_blank(tgt_pool), k, device)  # NN_k(x) among targets
    tgt_avg = neighbourhood_means(y, _non_blank(src_pool), k, device)  # NN_k(y) among sources
    return score_pairs(cosine, src_avg, tgt_avg, score)
