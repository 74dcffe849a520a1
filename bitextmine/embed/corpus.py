"""One side of a mining job: one or more embedding sets read as a single row space."""

from __future__ import annotations

import hashlib
import json
import mmap
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from bitextmine import defaults
from bitextmine.embed.embedding_set import EmbeddingSet, ShardEntry, row_is_blank, shard_offsets
from bitextmine.encoders.base import EncoderIdentity
from bitextmine.errors import BitextmineError
from bitextmine.io.provenance import has_sidecar, read_rows


def set_fingerprint(emb_set: EmbeddingSet) -> str:
    """A digest of what a set holds (encoder + every shard's file checksum)."""
    data = {"encoder": emb_set.encoder.to_dict(), "shards": [(s.file, s.lines, s.file_sha256) for s in emb_set.shards]}
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


class EmbeddingCorpus:
    """Embedding sets concatenated: global row ids run over their shards in order.

    Shards are labelled by their file name without ``.npy`` (prefixed by the set's
    directory name when two sets use the same name), which is what provenance ids
    ``label:line`` print.
    """

    def __init__(self, sets: list[EmbeddingSet]):
        if not sets:
            raise BitextmineError("no embedding set given")
        self.sets = sets
        first = sets[0]
        for other in sets[1:]:
            if other.encoder.space() != first.encoder.space() or other.dim != first.dim:
                raise BitextmineError(f"made with {other.encoder.name}, but {first.path} with {first.encoder.name}; "
                                      "one side must come from one encoder", path=other.path)
        self.encoder: EncoderIdentity = first.encoder
        self.dim = first.dim
        self.dtype = first.dtype
        self._where = [(s, i) for s in sets for i in range(len(s.shards))]
        self.shards: list[ShardEntry] = [s.shards[i] for s, i in self._where]
        if not self.shards:
            raise BitextmineError("the embedding set is empty (no shard)", path=first.path)
        labels = [e.file.removesuffix(".npy") for e in self.shards]
        clash = {x for x in labels if labels.count(x) > 1}
        self.labels = [f"{s.path.name}/{lab}" if lab in clash else lab
                       for (s, _), lab in zip(self._where, labels, strict=True)]

    @classmethod
    def load(cls, paths: list[str | Path], verify: bool = True) -> EmbeddingCorpus:
        """The sets of one side, in order; a set given twice is refused (its rows would count twice)."""
        seen: dict[str, str | Path] = {}
        for path in paths:
            real = os.path.realpath(path)
            if real in seen:
                raise BitextmineError(f"given twice for one side (also as {seen[real]})", path=path)
            seen[real] = path
        return cls([EmbeddingSet.load(p, verify=verify) for p in paths])

    @property
    def total_rows(self) -> int:
        return sum(e.lines for e in self.shards)

    def shard_offsets(self) -> np.ndarray:
        return shard_offsets(self.shards)

    def open_shard(self, index: int) -> np.ndarray:
        emb_set, i = self._where[index]
        return emb_set.open_shard(i)

    def read_lines(self, index: int) -> list[str]:
        emb_set, i = self._where[index]
        return emb_set.read_lines(i)

    def non_blank_blocks(self, block_rows: int = defaults.SHARD_BLOCK_ROWS) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(global ids, rows) of the rows that are not blank lines, shard by shard, a block at a time.

        The rows keep the stored dtype; memory is bounded by the block, whatever the corpus size.
        """

        offsets = self.shard_offsets()
        for s in range(len(self.shards)):
            array = self.open_shard(s)
            for start in range(0, len(array), block_rows):
                block = np.asarray(array[start : start + block_rows])
                keep = np.flatnonzero(~row_is_blank(block))
                rows = block[keep]  # a copy: the block's mapped pages can go
                release_pages(array)  # per block: a 10M-row shard would otherwise count 10 GB resident
                yield keep + start + offsets[s], rows

    def non_blank_ids(self) -> np.ndarray:
        """Global ids of the rows that are not blank lines."""
        ids = [block_ids for block_ids, _ in self.non_blank_blocks()]
        return np.concatenate(ids).astype(np.int64) if ids else np.empty(0, np.int64)

    def fingerprints(self) -> list[str]:
        return [set_fingerprint(s) for s in self.sets]

    def describe(self) -> list[dict]:
        return [{"path": str(s.path.resolve()), "fingerprint": set_fingerprint(s), "rows": s.total_rows}
                for s in self.sets]

    def documents(self, global_ids: np.ndarray) -> list[str]:
        """The document of each row, from the provenance sidecar beside its text shard (``prepare``
        writes them): its URL, else ``input:document``; empty for a shard without a sidecar."""

        offsets = self.shard_offsets()
        ids = np.asarray(global_ids, dtype=np.int64)
        shard_of = np.searchsorted(offsets, ids, side="right") - 1
        out = [""] * len(ids)
        for s in np.unique(shard_of).tolist():
            entry = self.shards[s]
            if not has_sidecar(entry.source):
                continue
            where = np.flatnonzero(shard_of == s)
            lines = (ids[where] - offsets[s] + 1).tolist()
            origins = read_rows(entry.source, lines, entry.lines)
            for i, line in zip(where.tolist(), lines, strict=True):
                out[i] = origins[line].reference()
        return out

    def provenance(self, global_ids: np.ndarray) -> list[str]:
        """``label:line`` (1-based line numbers) for global row ids."""
        offsets = self.shard_offsets()
        shard = np.searchsorted(offsets, global_ids, side="right") - 1
        return [f"{self.labels[s]}:{g - offsets[s] + 1}" for s, g in zip(shard.tolist(), global_ids.tolist(),
                                                                           strict=True)]


def check_compatible(src: EmbeddingCorpus, tgt: EmbeddingCorpus) -> None:
    """Two sides whose cosines mean something together: one encoder's space, one width."""
    a, b = src.encoder, tgt.encoder
    if a.dim != b.dim:
        raise BitextmineError(f"source vectors have {a.dim} dimensions, target vectors {b.dim}: "
                              f"they come from different encoders ({a.name}, {b.name})", path=tgt.sets[0].path)
    if a.space() != b.space():
        raise BitextmineError(
            f"source and target come from different encoders ({a.name} {a.weights_sha256[:12]}, "
            f"{b.name} {b.weights_sha256[:12]}); their cosines mean nothing together. Embed both sides with "
            "one encoder, or with a student checkpoint declared compatible with it", path=tgt.sets[0].path)


class SelectedRows:
    """Chosen rows of a corpus, indexable like one array but never loaded whole.

    ``view[a:b]`` and ``view[int_array]`` read the selected rows from the memory-mapped
    shards, so a kNN kernel can walk a corpus of any size block by block. The pages a view
    maps are released once about ``defaults.MAPPED_RESIDENT_BYTES`` of its shards may be
    resident (a shard counts no more than its size), not after every read: re-ranking's
    next gather would fault them back in (at 100k rows, where a gather touches most of a
    shard, 1.4x slower).
    """

    def __init__(self, corpus: EmbeddingCorpus | EmbeddingSet, global_ids: np.ndarray):
        self.arrays = [corpus.open_shard(i) for i in range(len(corpus.shards))]
        self.offsets = corpus.shard_offsets()
        self.global_ids = np.asarray(global_ids, dtype=np.int64)
        self.dim = corpus.dim
        self.dtype = np.dtype(corpus.dtype)
        self._touched = [0] * len(self.arrays)  # bytes of each shard that may be mapped in since the last release

    def __len__(self) -> int:
        return len(self.global_ids)

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self), self.dim)

    def __getitem__(self, key) -> np.ndarray:
        ids = self.global_ids[key]
        scalar = np.ndim(ids) == 0
        ids = np.atleast_1d(ids)
        out = np.empty((len(ids), self.dim), dtype=self.dtype)
        if len(ids):
            shard_of = np.searchsorted(self.offsets, ids, side="right") - 1
            first = int(shard_of[0])
            if (shard_of == first).all():  # one shard (most blocks): no masked copies
                self._gather(first, ids - self.offsets[first], out, None)
            else:
                for s in np.unique(shard_of):
                    where = np.flatnonzero(shard_of == s)
                    self._gather(int(s), ids[where] - self.offsets[s], out, where)
        return out[0] if scalar else out

    def _gather(self, shard: int, rows: np.ndarray, out: np.ndarray, where: np.ndarray | None) -> None:
        """Copy rows of one shard into ``out`` (at ``where``, else in order), in row order and
        a window of the file at a time, so that the budget can release pages mid-gather: at
        2M rows one re-ranking gather maps the whole 2 GB shard."""
        array = self.arrays[shard]
        row_bytes = array.shape[1] * array.itemsize
        order = None
        if len(rows) > 1 and (rows[1:] < rows[:-1]).any():
            order = np.argsort(rows, kind="stable")
            rows = rows[order]
        window_rows = max(1, mapped_window_bytes() // row_bytes)
        first_window, last_window = int(rows[0]) // window_rows, int(rows[-1]) // window_rows
        cuts = np.searchsorted(rows, np.arange(first_window + 1, last_window + 1) * window_rows)
        for lo, hi in zip([0, *cuts.tolist()], [*cuts.tolist(), len(rows)], strict=True):
            if lo == hi:
                continue
            part = rows[lo:hi]
            taken = slice(lo, hi) if order is None else order[lo:hi]  # positions in ``rows`` as given
            out[taken if where is None else where[taken]] = array[part]
            regions = part * row_bytes // MAPPED_REGION_BYTES  # sorted: count where it changes
            mapped = (np.count_nonzero(regions[1:] != regions[:-1]) + 1) * MAPPED_REGION_BYTES
            self._touched[shard] = min(self._touched[shard] + mapped, array.nbytes)
            if sum(self._touched) >= defaults.MAPPED_RESIDENT_BYTES:
                self.release()

    def release(self) -> None:
        """Drop the view's mapped pages from the resident set (they stay in the page cache)."""
        for s, touched in enumerate(self._touched):
            if touched:
                release_pages(self.arrays[s])
        self._touched = [0] * len(self.arrays)


def release_mapped(*views) -> None:
    """Drop the mapped pages of each ``SelectedRows`` view given (arrays in memory have none)."""
    for view in views:
        if isinstance(view, SelectedRows):
            view.release()


# Reading one row of a cached file maps the pages around it too, up to a whole large folio:
# on ext4 (Linux 6.18) one row read mapped 2 MiB, so 1,000 rows scattered over a 2 GB shard
# map all of it. Counted per region touched, the budget sees what a gather maps.
MAPPED_REGION_BYTES = 2 << 20


def mapped_window_bytes() -> int:
    """The span of a shard one step of a gather reads before the budget is checked."""
    return max(MAPPED_REGION_BYTES, defaults.MAPPED_RESIDENT_BYTES // 4)


def mapped_resident_ceiling(nbytes: int, read_bytes: int | None = None) -> int:
    """The most of a side's ``nbytes`` of shards that a ``SelectedRows`` view keeps mapped:
    the budget, plus the read that crosses it: a block of consecutive rows (``read_bytes``),
    or a gather's window, each with a region more (a read may start and end mid-region)."""
    last_read = mapped_window_bytes() if read_bytes is None else read_bytes
    return min(nbytes, defaults.MAPPED_RESIDENT_BYTES + last_read + MAPPED_REGION_BYTES)


def release_pages(array: np.ndarray) -> None:
    """Drop the mapped pages of a memory-mapped shard from this process's resident set.

    The data stays in the page cache, so a later read is a cheap minor fault; without
    this, a pass over a large corpus counts every page it touched in the RSS.
    """
    handle = getattr(array, "_mmap", None)
    if handle is not None and hasattr(mmap, "MADV_DONTNEED"):
        handle.madvise(mmap.MADV_DONTNEED)
