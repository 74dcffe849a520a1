"""Exact margins: for pairs mined through indexes, and for an existing bitext scored against
large monolingual pools (``bitextmine score-pairs``).

A margin needs neighbourhoods: avg(x, y) averages x's k nearest targets and y's k
nearest sources. A crawled bitext alone does not have them (which is why scoring it
with a margin is usually said to be impossible); embedding sets of monolingual text in
both languages do. Each pair's sides are embedded with the pools' encoder, searched in
the opposite pool's distinct sentences, and scored with the same formula as ``bitextmine mine``.
"""

from __future__ import annotations

import logging
import math
from dataclasses import replace
from functools import cache
from pathlib import Path

import numpy as np

from bitextmine import defaults
from bitextmine.devices import resolve_device
from bitextmine.embed.corpus import EmbeddingCorpus, SelectedRows, check_compatible, release_mapped
from bitextmine.encoders import load_encoder
from bitextmine.errors import BitextmineError
from bitextmine.io.atomic import atomic_text_writer, refuse_overwriting_inputs
from bitextmine.io.lock import output_lock
from bitextmine.io.pairs import Pair, read_pairs
from bitextmine.mine.knn import Neighbours, SideSearches, as_float32, exact_knn
from bitextmine.mine.scoring import margin_scores
from bitextmine.mine.sentences import check_k, unique_sentences
from bitextmine.mine.thresholds import Selection, reads_lengths, runners_up, select_pairs
from bitextmine.progress import encode_with_progress

log = logging.getLogger(__name__)


def select_with_exact_margins(x, y, cfg, identities, fwd: Neighbours, bwd: Neighbours,
                              device: str = "cpu", searches: SideSearches | None = None) -> Selection:
    """``select_pairs`` on neighbours found through indexes, with every kept pair's margin exact.

    An index can miss some of a row's k nearest, and the k it finds are never nearer than
    the true k: the neighbourhood mean comes out low and the margin high, never low. So the
    threshold is chosen once on the index's lists; then the rows of the kept pairs get their
    exact k nearest (an exact search of those rows only) and the pairs are selected again at
    that threshold, until every kept pair's rows are exact: a pair that a corrected row lets
    in brings its own rows. ``fwd`` and ``bwd`` are corrected in place. ``searches``: how the
    threshold's estimate searches the pools (the indexes, as ``mine`` passes them).
    """
    selection = select_pairs(x, y, cfg, identities, fwd, bwd, device=device, searches=searches)
    if cfg.score == "cosine" or not math.isfinite(selection.choice.threshold):
        return selection  # the index's cosines are exact already; or nothing is kept
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
    # the runners-up from the kept rows' exact neighbours, as for exact mining
    null = runners_up(selection.pairs, fwd, bwd) if reads_lengths(choice) else None
    return replace(selection, choice=choice, runners_up=null)


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


class BitextSide:
    """One side of a bitext against its pool: the pool's distinct sentences (what ``mine``
    searches: a sentence repeated in the pool counts once in a neighbourhood), and the
    vector of each of the bitext's sentences, the pool's own where the pool holds it."""

    def __init__(self, pool: EmbeddingCorpus):
        self.pool = pool
        self.distinct = unique_sentences(pool, lookup=True)
        self.rows = SelectedRows(pool, self.distinct.rows)
        self.found = 0  # sentences of the bitext taken from the pool

    def vectors(self, texts: list[str], encoder, desc: str, progress: bool = False) -> np.ndarray:
        """fp32 vectors of ``texts``; a sentence not in the pool is embedded and stored as
        ``embed`` stores it (in the pool's dtype), so it scores as if it had been mined."""
        numbers = self.distinct.find(texts)
        have = numbers >= 0
        self.found = int(have.sum())
        out = np.empty((len(texts), self.pool.dim), dtype=np.float32)
        if have.any():
            out[have] = as_float32(SelectedRows(self.pool, self.distinct.rows[numbers[have]])[:])
        missing = np.flatnonzero(~have)
        if len(missing):
            distinct = list(dict.fromkeys(texts[i] for i in missing))
            where = {text: i for i, text in enumerate(distinct)}
            embedded = encode_with_progress(encoder(), distinct, desc, progress)
            out[missing] = embedded.astype(self.pool.dtype).astype(np.float32)[[where[texts[i]] for i in missing]]
        return out


def score_bitext(src_texts: list[str], tgt_texts: list[str], src: BitextSide, tgt: BitextSide, encoder,
                 score: str = defaults.SCORE, k: int = defaults.K, device: str = "cpu",
                 progress: bool = False) -> np.ndarray:
    """Scores of the pairs (src_texts[i], tgt_texts[i]) with neighbourhoods from the pools, as
    ``mine`` scores the same pair mined from them. ``encoder``: called for the encoder when a
    sentence is not in its pool."""
    x = src.vectors(src_texts, encoder, "encode src", progress)
    y = tgt.vectors(tgt_texts, encoder, "encode tgt", progress)
    cosine = np.einsum("ij,ij->i", x, y)
    if score in ("cosine", "absolute"):
        return cosine.astype(np.float32)
    src_avg = neighbourhood_means(x, tgt.rows, k, device, progress)  # NN_k(x) among the distinct targets
    tgt_avg = neighbourhood_means(y, src.rows, k, device, progress)  # NN_k(y) among the distinct sources
    return margin_scores(cosine, src_avg, tgt_avg, score)


def score_bitext_file(pairs_file: str, src_corpus: EmbeddingCorpus, tgt_corpus: EmbeddingCorpus, cfg,
                      progress: bool = False) -> tuple[list[Pair], dict]:
    """The pairs of a file (plain, or scored: the old score is replaced), scored as ``mine`` would,
    and counts for the JSON.

    ``cfg`` is a ``MineConfig``: its score, k and device are used. Extra columns (ids)
    are kept; the order is the input's.
    """

    pairs = read_pairs(pairs_file, allow_empty_side=False)
    check_compatible(src_corpus, tgt_corpus)
    counts = {"pairs": len(pairs), "src_in_pool": 0, "tgt_in_pool": 0}
    if not pairs:
        return [], counts
    cfg = replace(cfg, device=resolve_device(cfg.device))

    @cache
    def encoder():
        loaded = load_encoder(src_corpus.encoder.name, device=cfg.device)
        if loaded.identity.space() != src_corpus.encoder.space():
            raise BitextmineError(f"the pools were embedded with another {src_corpus.encoder.name} than this one",
                                  path=src_corpus.sets[0].path)
        return loaded

    src, tgt = BitextSide(src_corpus), BitextSide(tgt_corpus)
    if cfg.score != "cosine":
        check_k(cfg.k, {"source pool": len(src.distinct), "target pool": len(tgt.distinct)},
                (src_corpus.sets[0].path, tgt_corpus.sets[0].path))
    scores = score_bitext([p.src for p in pairs], [p.tgt for p in pairs], src, tgt, encoder, cfg.score, cfg.k,
                          cfg.device, progress)
    counts.update(src_in_pool=src.found, tgt_in_pool=tgt.found)
    return [Pair(float(score), p.src, p.tgt, p.extra, p.line) for p, score in zip(pairs, scores.tolist(),
                                                                                  strict=True)], counts


def score_pairs_to_file(pairs_file: str, src_pool: list[Path], tgt_pool: list[Path], cfg, output: str,
                        sort: bool = False, progress: bool = False) -> dict:
    """``score-pairs``: score a file of pairs against the pools and write them, in input order or
    best first; return what its JSON records. An output that would replace an input is refused
    before any work, and the output is locked while it is written."""

    refuse_overwriting_inputs([output], [pairs_file, *src_pool, *tgt_pool])
    with output_lock(output):
        src_corpus = EmbeddingCorpus.load(src_pool, verify=True)
        tgt_corpus = EmbeddingCorpus.load(tgt_pool, verify=True)
        texts = [s.source for c in (src_corpus, tgt_corpus) for s in c.shards if s.source != "-"]
        refuse_overwriting_inputs([output], texts)  # their sentences are read too
        scored, counts = score_bitext_file(pairs_file, src_corpus, tgt_corpus, cfg, progress)
        if sort:
            scored.sort(key=lambda p: -p.score)
        with atomic_text_writer(output) as out:
            for pair in scored:
                out.write("\t".join(pair.fields()) + "\n")
    return {"input": str(pairs_file), "output": str(output), "src_pool": [str(p) for p in src_pool],
            "tgt_pool": [str(p) for p in tgt_pool], "parameters": {"k": cfg.k, "score": cfg.score, "sort": sort},
            **counts}
