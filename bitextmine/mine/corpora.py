"""Mining embedding sets (and optionally their indexes) into pairs of sentences.

``mine_corpora`` drops blank lines, searches identical sentences once, uses FAISS indexes
when given, chooses the threshold (``thresholds``), drops the kept pairs whose lengths
disagree (``lengths``) and maps pairs back to text and
``shard:line`` ids; ``write_pairs`` writes them as TSV.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from bitextmine import __version__, defaults
from bitextmine.devices import resolve_device
from bitextmine.embed.corpus import EmbeddingCorpus, SelectedRows, check_compatible, release_mapped
from bitextmine.encoders.base import EncoderIdentity
from bitextmine.errors import BitextmineError, warn
from bitextmine.index import load_index
from bitextmine.io.atomic import atomic_text_writer
from bitextmine.io.pairs import Pair
from bitextmine.io.text import texts_digest
from bitextmine.mine.config import MineConfig
from bitextmine.mine.knn import Neighbours, SideSearches, best_distinct, index_knn
from bitextmine.mine.lengths import length_agreement
from bitextmine.mine.rescore import select_with_exact_margins
from bitextmine.mine.sentences import UniqueSentences, check_k, unique_sentences
from bitextmine.mine.thresholds import ThresholdChoice, add_length_evidence, select_pairs, threshold_record

log = logging.getLogger(__name__)

ADAPTED_REASON = ("adapt: the threshold `bitextmine adapt` chose for these pools, which the encoder trained on "
                  "(an estimate on them would be self-scored)")  # the choice's reason (``adapted_choice``)


def _search_indexes(index_dirs: list, corpus: EmbeddingCorpus, side: UniqueSentences, queries, database, k: int,
                    nprobe: int | None) -> Neighbours:
    """Search one index, or several that split the corpus, and keep the best k overall.

    Each part covers consecutive embedding sets of the corpus; its ids are rows of that
    run of sets. Merging the parts' neighbour lists gives the neighbours one index over
    the whole corpus would give (exactly so for exact indexes).
    """
    fingerprints = corpus.fingerprints()
    set_offsets = np.concatenate([[0], np.cumsum([s.total_rows for s in corpus.sets])]).astype(np.int64)
    covered: list[int] = []
    sims, ids = [], []
    for index_dir in index_dirs:
        index, meta = load_index(index_dir)
        built_from = [s["fingerprint"] for s in meta["embedding_sets"]]
        start = fingerprints.index(built_from[0]) if built_from[0] in fingerprints else -1
        if start < 0 or fingerprints[start : start + len(built_from)] != built_from:
            paths = ", ".join(s["path"] for s in meta["embedding_sets"])
            given = ", ".join(str(s.path) for s in corpus.sets)
            raise BitextmineError(f"index built from {paths}, not from the sets it is given with ({given}); "
                                  "rebuild it with `bitextmine index` for these", path=index_dir)
        covered += range(start, start + len(built_from))
        lo, hi = set_offsets[start], set_offsets[start + len(built_from)]
        found = index_knn(index, queries, database, k, nprobe or meta["nprobe"],
                          candidates=meta.get("candidates", defaults.INDEX_CANDIDATES), id_map=side.inverse[lo:hi])
        sims.append(found.sims)
        ids.append(found.ids)
    if sorted(covered) != list(range(len(corpus.sets))):
        raise BitextmineError("the indexes do not cover the embedding sets exactly once", path=index_dirs[0])
    if len(sims) == 1:
        return Neighbours(sims[0], ids[0])
    return best_distinct(np.concatenate(sims, axis=1), np.concatenate(ids, axis=1), k)


def _index_searches(src_index: list | None, tgt_index: list | None, src: EmbeddingCorpus, tgt: EmbeddingCorpus,
                    src_side: UniqueSentences, tgt_side: UniqueSentences, x, y, nprobe: int | None
                    ) -> SideSearches | None:
    """Each side searched through its indexes, for mining and for the threshold's estimate (its
    samples searched exactly took 17x as long at 300,000 rows a side: benchmarks/RESULTS.md, "The
    estimate's searches through the indexes"); None (exact search) unless both sides have indexes."""
    if not (src_index and tgt_index):
        if src_index is not None or tgt_index is not None:
            log.warning("only one of --src-index and --tgt-index given: the index is not used; exact search computes "
                        "both directions at once (give both indexes to search through them)")
        return None
    return SideSearches(src=lambda queries, k: _search_indexes(src_index, src, src_side, queries, x, k, nprobe),
                        tgt=lambda queries, k: _search_indexes(tgt_index, tgt, tgt_side, queries, y, k, nprobe))


@dataclass
class MinedPairs:
    scores: np.ndarray
    src_text: list[str]
    tgt_text: list[str]
    src_ids: list[str]
    tgt_ids: list[str]
    stats: dict = field(default_factory=dict)
    src_rows: np.ndarray | None = None  # global row of each pair's sides, for their documents
    tgt_rows: np.ndarray | None = None
    src_docs: list[str] | None = None  # each side's document (``EmbeddingCorpus.documents``), when asked for
    tgt_docs: list[str] | None = None

    def __len__(self) -> int:
        return len(self.scores)

    def extra_columns(self, i: int, with_ids: bool) -> list[str]:
        """The ids (``shard:line``) and then the documents of pair ``i``, as far as asked for."""
        columns = [self.src_ids[i], self.tgt_ids[i]] if with_ids or self.src_docs is not None else []
        if self.src_docs is not None:
            columns += [self.src_docs[i].replace("\t", " "), self.tgt_docs[i].replace("\t", " ")]
        return columns

    def as_filter_pairs(self, with_ids: bool = False) -> list[Pair]:
        return [Pair(float(self.scores[i]), self.src_text[i].replace("\t", " "), self.tgt_text[i].replace("\t", " "),
                     self.extra_columns(i, with_ids)) for i in range(len(self))]


def _lengths_agreeing(pairs, src_text: list[str], tgt_text: list[str], cfg: MineConfig,
                      estimated: float | None = None):
    """The pairs whose lengths agree (``lengths``), then the ``cfg.top_n`` best of them.
    ``estimated``: the threshold's estimated precision, carried to the pairs written."""
    lengths = length_agreement(pairs.score, src_text, tgt_text, cfg.length_ratio)
    if lengths.dropped:
        written = lengths.written_precision(estimated)
        log.info("%d pairs dropped: their lengths are more than %.2fx off the typical ratio (%.2f) and by more "
                 "than %d characters (--length-ratio 0 keeps them)%s", lengths.dropped, lengths.band,
                 lengths.typical_ratio, defaults.MINE_LENGTH_SLACK,
                 "" if written is None else f"; estimated precision of the pairs written {written:.2f}, "
                                            "the dropped ones counted as false")
    if lengths.dropped or cfg.top_n is not None:
        kept = np.flatnonzero(lengths.keep)[:cfg.top_n]
        pairs = pairs.take(kept)
        src_text, tgt_text = [src_text[i] for i in kept.tolist()], [tgt_text[i] for i in kept.tolist()]
    return pairs, src_text, tgt_text, lengths


def _with_length_evidence(selection, src_side: UniqueSentences, tgt_side: UniqueSentences):
    """The selection's choice, with the kept pairs' lengths as a second estimate where its gaps
    separate weakly (``thresholds.add_length_evidence``: the selection then holds their runners-up)."""
    if selection.runners_up is None:
        return selection.choice
    return add_length_evidence(selection.choice, selection.pairs, selection.runners_up, src_side.texts,
                               tgt_side.texts)


def mine_corpora(src: EmbeddingCorpus, tgt: EmbeddingCorpus, cfg: MineConfig = MineConfig(),
                 src_index: str | Path | list | None = None, tgt_index: str | Path | list | None = None,
                 progress: bool = False) -> MinedPairs:
    """Mine pairs between two sides; text read back from the shards.

    ``src_index``/``tgt_index``: an index directory, or a list of index directories
    that split that side (see ``_search_indexes``). ``progress``: a bar for exact search.
    """
    started = time.time()
    check_compatible(src, tgt)
    # resolved once, into the config: what runs is what the sidecar records
    cfg = replace(cfg, device=resolve_device(cfg.device))
    src_side, tgt_side = unique_sentences(src), unique_sentences(tgt)
    for corpus, side in ((src, src_side), (tgt, tgt_side)):
        if not len(side):
            raise BitextmineError("no sentence to mine: every line is blank", path=corpus.sets[0].path)
    if cfg.score != "cosine":  # a plain cosine needs no neighbourhood
        check_k(cfg.k, {"source": len(src_side), "target": len(tgt_side)}, (src.sets[0].path, tgt.sets[0].path))
    x = SelectedRows(src, src_side.rows)
    y = SelectedRows(tgt, tgt_side.rows)
    log.info("mining %d x %d distinct sentences (%d x %d rows), k=%d, %s margin, %s retrieval, threshold %s",
             len(x), len(y), src.total_rows, tgt.total_rows, cfg.k, cfg.score, cfg.retrieval,
             "chosen on these pools" if cfg.threshold is None else f"{cfg.threshold:g}")
    as_list = lambda v: None if v is None else ([v] if isinstance(v, (str, Path)) else list(v))  # noqa: E731
    src_index, tgt_index = as_list(src_index), as_list(tgt_index)
    searches = _index_searches(src_index, tgt_index, src, tgt, src_side, tgt_side, x, y, cfg.nprobe)
    search = "exact" if searches is None else "index"
    fwd = bwd = None
    if searches is not None:
        fwd = searches.tgt(x, cfg.k)
        # the sides swap roles: without a release here the side just gathered from stays
        # mapped up to its budget while the other side fills its own
        release_mapped(x, y)
        bwd = searches.src(y, cfg.k)
    knn_started = time.time()
    # the N best of the pairs whose lengths agree, not fewer: the cut waits for the check
    selecting = replace(cfg, top_n=None) if cfg.length_ratio else cfg
    adapted = adapted_choice(cfg, src.encoder, src_side, tgt_side)
    selecting = selecting if adapted is None else replace(selecting, threshold=adapted.threshold)
    if search == "index" and cfg.exact_margins:
        selection = select_with_exact_margins(x, y, selecting, (src.encoder, tgt.encoder), fwd, bwd,
                                              device=cfg.device, searches=searches)
    else:
        selection = select_pairs(x, y, selecting, (src.encoder, tgt.encoder), fwd, bwd, device=cfg.device,
                                 progress=progress, searches=searches)
    selection.choice = adapted or selection.choice
    choice = selection.choice = _with_length_evidence(selection, src_side, tgt_side)
    if choice.warning:
        warn(choice.warning)
    # nothing kept (the pools share no translations) is recorded as no threshold: JSON has no infinity
    pairs, cfg = selection.pairs, replace(cfg, threshold=choice.threshold if math.isfinite(choice.threshold) else None)
    log.info("threshold %s (%s)", "none" if cfg.threshold is None else f"{cfg.threshold:g}", choice.reason)
    knn_seconds = time.time() - knn_started
    pairs, src_text, tgt_text, lengths = _lengths_agreeing(
        pairs, src_side.texts(pairs.src), tgt_side.texts(pairs.tgt), cfg, choice.estimated_precision)
    src_rows, tgt_rows = src_side.rows[pairs.src], tgt_side.rows[pairs.tgt]
    mined = MinedPairs(
        scores=pairs.score,
        src_text=src_text,
        tgt_text=tgt_text,
        src_ids=src.provenance(src_rows),
        tgt_ids=tgt.provenance(tgt_rows),
        src_rows=src_rows,
        tgt_rows=tgt_rows,
    )
    mined.stats = {
        "bitextmine_version": __version__,
        "parameters": {**asdict(cfg), "threshold_source": choice.reason, "search": search,
                       "src_index": [str(p) for p in src_index] if src_index else None,
                       "tgt_index": [str(p) for p in tgt_index] if tgt_index else None},
        "encoder": src.encoder.to_dict(),
        "src": {"sets": src.describe(), "rows": src_side.total_rows, "blank": src_side.blank_rows,
                "distinct": len(src_side)},
        "tgt": {"sets": tgt.describe(), "rows": tgt_side.total_rows, "blank": tgt_side.blank_rows,
                "distinct": len(tgt_side)},
        "pairs": len(mined),
        "length_agreement": lengths.record(choice.estimated_precision),
        "score_max": float(pairs.score.max()) if len(pairs) else None,
        "score_min": float(pairs.score.min()) if len(pairs) else None,
        "seconds": {"search_and_score": round(knn_seconds, 3), "total": round(time.time() - started, 3)},
        **threshold_record(selection),
    }
    return mined


def adapted_choice(cfg: MineConfig, identity: EncoderIdentity, src_side: UniqueSentences | list[str],
                   tgt_side: UniqueSentences | list[str]) -> ThresholdChoice | None:
    """The threshold ``adapt`` chose for these very pools when ``identity``'s encoder was
    adapted to them and ``cfg`` leaves the threshold to mine at the default target (None
    otherwise: the threshold adapt prints was chosen for that target). Each side: its
    distinct sentences (trimmed, in order of first occurrence), or the ``UniqueSentences``
    that reads them back. On the pools a round trained on, mine's own estimate is
    self-scored: the trained pairs stand apart and it doubts the translations it did not
    train on (French news at 3 %, five seeds: 91.3 F1 on average against 94.2 at adapt's;
    benchmarks/RESULTS.md, "Five seeds at the defaults")."""
    adapted = identity.adapted_pools
    if (cfg.threshold is not None or not adapted or cfg.target_precision != defaults.TARGET_PRECISION
            or (cfg.score, cfg.k) != (adapted["score"], adapted["k"])):
        return None
    for side, pool in zip((src_side, tgt_side), adapted["pools"], strict=True):
        if len(side) != pool["sentences"]:  # the count first: reading every sentence back is for pools that may be
            return None
        texts = side if isinstance(side, list) else side.texts(np.arange(len(side)))
        if texts_digest(texts) != pool["sha256"]:
            return None
    return ThresholdChoice(float(adapted["threshold"]), "adapt", ADAPTED_REASON)


def write_pairs(mined: MinedPairs, output: str | Path, with_ids: bool = False) -> None:
    """TSV ``score<TAB>src<TAB>tgt[<TAB>src_id<TAB>tgt_id[<TAB>src_doc<TAB>tgt_doc]]``, best first; ``-`` is
    stdout. The documents are written when they were looked up (``MinedPairs.src_docs``), with the ids.

    A tab inside a sentence would shift the columns, so it is written as a space.
    """
    with atomic_text_writer(output) as out:
        for i in range(len(mined)):
            fields = [f"{mined.scores[i]:.6f}", mined.src_text[i].replace("\t", " "),
                      mined.tgt_text[i].replace("\t", " "), *mined.extra_columns(i, with_ids)]
            out.write("\t".join(fields) + "\n")
