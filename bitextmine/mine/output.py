"""Mined pairs to files: the TSV, then its JSON sidecar, which records the TSV's checksum.

The sidecar is written after the TSV and records its SHA-256 and row count, so a TSV
and a sidecar that do not belong together (a run killed between the two renames, a TSV
edited afterwards) are told apart by every reader (``check_sidecar``). ``mine`` and the
pipeline's mining task both write through ``mine_to_files``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bitextmine.embed.corpus import EmbeddingCorpus
from bitextmine.filter.run import filter_pairs_to_files, report_document
from bitextmine.io.atomic import is_regular_output, refuse_overwriting_inputs, remove_written, sidecar_path, write_json
from bitextmine.io.lock import output_locks
from bitextmine.io.sidecars import SIDECAR_SUFFIX
from bitextmine.io.text import file_sha256
from bitextmine.mine.corpora import mine_corpora, write_pairs

if TYPE_CHECKING:
    from bitextmine.filter import FilterConfig
    from bitextmine.mine.config import MineConfig
    from bitextmine.mine.corpora import MinedPairs


@dataclass(frozen=True)
class PairsOutput:
    """Where and how mined pairs are written."""

    output: str  # the TSV (.gz/.xz/.zst compress), or - for standard output
    meta: str | None = None  # the sidecar; None: OUTPUT.json beside a regular output, else none
    with_ids: bool = False
    with_docs: bool = False  # also each side's document (from prepare's provenance sidecars); implies ids
    filter: FilterConfig | None = None  # filter the pairs before writing them
    rejects: str | None = None  # with a filter: the rejected pairs and their reasons

    def sidecar(self) -> str | None:
        if self.meta is not None:
            return str(self.meta)
        default = sidecar_path(self.output, SIDECAR_SUFFIX)
        return None if default is None else str(default)

    def columns(self) -> list[str]:
        """The columns of the TSV, as ``report`` reads them."""
        ids = ["src_id", "tgt_id"] if self.with_ids or self.with_docs else []
        return ["score", "src", "tgt", *ids, *(["src_doc", "tgt_doc"] if self.with_docs else [])]

    def files(self) -> list[str]:
        return [str(p) for p in (self.output, self.sidecar(), self.rejects) if p is not None]


def mine_to_files(src: list[str | Path], tgt: list[str | Path], cfg: MineConfig, target: PairsOutput,
                  src_index=None, tgt_index=None, progress: bool = False) -> MinedPairs:
    """Mine two sides (embedding set directories) and write the pairs and their sidecar.

    Outputs that would replace an input are refused before any work, and the outputs
    stay locked from the start, so a second writer fails at once.
    """

    def listed(value) -> list:
        return [] if value is None else [value] if isinstance(value, (str, Path)) else list(value)

    refuse_overwriting_inputs(target.files(), [*src, *tgt, *listed(src_index), *listed(tgt_index)])
    with output_locks(target.files()):
        src_corpus = EmbeddingCorpus.load(src, verify=True)
        tgt_corpus = EmbeddingCorpus.load(tgt, verify=True)
        texts = [s.source for c in (src_corpus, tgt_corpus) for s in c.shards if s.source != "-"]
        refuse_overwriting_inputs(target.files(), texts)
        mined = mine_corpora(src_corpus, tgt_corpus, cfg, src_index=src_index, tgt_index=tgt_index,
                             progress=progress)
        if target.with_docs:
            mined.src_docs = src_corpus.documents(mined.src_rows)
            mined.tgt_docs = tgt_corpus.documents(mined.tgt_rows)
        mined.stats["output_rows"] = write_mined(mined, target)["output_rows"]
    return mined


def write_mined(mined: MinedPairs, target: PairsOutput) -> dict:
    """The pairs (filtered when asked), then the sidecar with the TSV's checksum; return the sidecar."""

    stats = {**mined.stats, "output": target.output, "columns": target.columns()}
    if target.filter is not None:
        report = filter_pairs_to_files(mined.as_filter_pairs(target.with_ids), target.filter, target.output, None,
                                       target.rejects)
        stats["filter"] = report_document(target.filter, report)
        rows = report.kept
    else:
        write_pairs(mined, target.output, with_ids=target.with_ids)
        rows = len(mined)
    stats["output_rows"] = rows
    stats["output_sha256"] = file_sha256(target.output) if is_regular_output(target.output) else None
    sidecar = target.sidecar()
    if sidecar is not None:
        try:
            write_json(sidecar, stats)
        except BaseException:  # a full disk, an interrupt: pairs without the sidecar that describes them
            for path in (target.output, target.rejects):  # are no result, so none is left behind
                remove_written(path)
            raise
    return stats
