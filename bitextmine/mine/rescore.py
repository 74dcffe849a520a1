"""Rescore an existing bitext against large monolingual pools (``bitextmine score-pairs``).

A margin needs neighbourhoods: avg(x, y) averages x's k nearest targets and y's k
nearest sources. A crawled bitext alone does not have them (which is why scoring it
with a margin is usually said to be impossible); embedding sets of monolingual text in
both languages do. Each pair's sides are embedded with the pools' encoder, searched in
the opposite pool, and scored with the same formula as ``bitextmine mine``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bitextmine import defaults
from bitextmine.embed.corpus import EmbeddingCorpus, SelectedRows
from bitextmine.errors import BitextmineError
from bitextmine.io.pairs import Pair
from bitextmine.mine.knn import exact_knn
from bitextmine.mine.scoring import margin_scores


def _non_blank(corpus: EmbeddingCorpus) -> SelectedRows:
    return SelectedRows(corpus, corpus.non_blank_ids())


def neighbourhood_means(queries: np.ndarray, pool, k: int, device: str = "cpu",
                        progress: bool = False) -> np.ndarray:
    """Mean cosine of each query to its k nearest rows of ``pool``."""
    return exact_knn(queries, pool, k, device=device, progress=progress).mean_sim()


def score_bitext(src_texts: list[str], tgt_texts: list[str], src_pool: EmbeddingCorpus, tgt_pool: EmbeddingCorpus,
                 encoder, score: str = defaults.SCORE, k: int = defaults.K, device: str = "cpu",
                 progress: bool = False) -> np.ndarray:
    """Scores of the pairs (src_texts[i], tgt_texts[i]) with neighbourhoods from the pools."""
    from bitextmine.progress import encode_with_progress

    if encoder.identity.space() != src_pool.encoder.space() or encoder.identity.space() != tgt_pool.encoder.space():
        raise BitextmineError("the pools were embedded with another encoder than the one given",
                              path=src_pool.sets[0].path)
    x = encode_with_progress(encoder, src_texts, "encode src", progress)
    y = encode_with_progress(encoder, tgt_texts, "encode tgt", progress)
    cosine = (x * y).sum(axis=1)
    if score in ("cosine", "absolute"):
        return cosine.astype(np.float32)
    src_avg = neighbourhood_means(x, _non_blank(tgt_pool), k, device, progress)  # NN_k(x) among targets
    tgt_avg = neighbourhood_means(y, _non_blank(src_pool), k, device, progress)  # NN_k(y) among sources
    return margin_scores(cosine, src_avg, tgt_avg, score)


def score_bitext_file(pairs_file: str, src_pool: list[Path], tgt_pool: list[Path], cfg,
                      progress: bool = False) -> list[Pair]:
    """The pairs of a file (plain, or scored: the old score is replaced), scored as ``mine`` would.

    ``cfg`` is a ``MineConfig``: its score, k and device are used. Extra columns (ids)
    are kept; the order is the input's.
    """
    from dataclasses import replace

    from bitextmine.devices import resolve_device
    from bitextmine.encoders import load_encoder
    from bitextmine.io.pairs import read_pairs

    pairs = read_pairs(pairs_file, allow_empty_side=False)
    src_corpus, tgt_corpus = EmbeddingCorpus.load(src_pool), EmbeddingCorpus.load(tgt_pool)
    if not pairs:
        return []
    cfg = replace(cfg, device=resolve_device(cfg.device))
    encoder = load_encoder(src_corpus.encoder.name, device=cfg.device)
    scores = score_bitext([p.src for p in pairs], [p.tgt for p in pairs], src_corpus, tgt_corpus, encoder,
                          cfg.score, cfg.k, cfg.device, progress)
    return [Pair(float(score), p.src, p.tgt, p.extra, p.line) for p, score in zip(pairs, scores.tolist(),
                                                                                  strict=True)]
