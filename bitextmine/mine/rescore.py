"""Exact margins: for pairs mined through indexes, and for an existing bitext scored against
large monolingual pools (``bitextmine score-pairs``).

A margin needs neighbourhoods: avg(x, y) averages x's k nearest targets and y's k
nearest sources. A crawled bitext alone does not have them (which is why scoring it
with a margin is usually said to be impossible); embedding sets of monolingual text in
both languages do. Each pair's sides are embedded with the pools' encoder, searched in
the opposite pool, and scored with the same formula as ``bitextmine mine``.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import numpy as np

from bitextmine import defaults
from bitextmine.embed.corpus import EmbeddingCorpus, SelectedRows, release_mapped
from bitextmine.errors import BitextmineError
from bitextmine.io.pairs import Pair
from bitextmine.mine.knn import Neighbours, as_float32, exact_knn
from bitextmine.mine.scoring import margin_scores
from bitextmine.mine.thresholds import Selection, select_pairs

log = logging.getLogger(__name__)


def _non_blank(corpus: EmbeddingCorpus) -> SelectedRows:
    return SelectedRows(corpus, corpus.non_blank_ids())


def select_with_exact_margins(x, y, cfg, identities, fwd: Neighbours, bwd: Neighbours,
                              device: str = "cpu") -> Selection:
    """``select_pairs`` on neighbours found through indexes, with every kept pair's margin exact.

    An index can miss some of a row's k nearest, and the k it finds are never nearer than
    the true k: the neighbourhood mean comes out low and the margin high, never low. So the
    threshold is chosen once on the index's lists; then the rows of the kept pairs get their
    exact k nearest (an exact search of those rows only) and the pairs are selected again at
    that threshold, until every kept pair's rows are exact: a pair that a corrected row lets
    in brings its own rows. ``fwd`` and ``bwd`` are corrected in place.
    """
    selection = select_pairs(x, y, cfg, identities, fwd, bwd, device=device)
    if cfg.score == "cosine":  # the index's cosines are exact already
        return selection
    choice, at_threshold = selection.choice, replace(cfg, threshold=selection.choice.threshold)
    exact_src, exact_tgt = np.zeros(len(x), dtype=bool), np.zeros(len(y), dtype=bool)
    for _ in range(defaults.EXACT_MARGIN_ROUNDS):
        src_rows = np.unique(selection.pairs.src[~exact_src[selection.pairs.src]])
        tgt_rows = np.unique(selection.pairs.tgt[~exact_tgt[selection.pairs.tgt]])
        if not len(src_rows) and not len(tgt_rows):
            break
        log.info("exact neighbourhoods of %d source and %d target rows of kept pairs", len(src_rows), len(tgt_rows))
        _correct(fwd, src_rows, x, y, device)
        _correct(bwd, tgt_rows, y, x, device)
        exact_src[src_rows], exact_tgt[tgt_rows] = True, True
        selection = select_pairs(x, y, at_threshold, identities, fwd, bwd, device=device)
    else:
        log.warning("after %d rounds some kept pairs still have margins from the index's neighbours",
                    defaults.EXACT_MARGIN_ROUNDS)
    return replace(selection, choice=choice)


def _correct(neighbours: Neighbours, rows: np.ndarray, queries, database, device: str) -> None:
    """Replace the lists of ``rows`` by their exact nearest rows of ``database``."""
    if len(rows):
        gathered = as_float32(queries[rows])
        release_mapped(queries)  # read once: only the database, walked next, stays mapped
        exact = exact_knn(gathered, database, neighbours.k, device=device)
        neighbours.sims[rows], neighbours.ids[rows] = exact.sims, exact.ids


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
