"""Embedding sets -> a FAISS index (``index.faiss`` + ``index.json``).

The index holds every non-blank row under its global row id (rows numbered over the
sets' shards in order), with inner product as the metric. ``auto`` picks exact search
for small databases and IVF + fast-scan PQ beyond (``defaults.IVF_LISTS_BY_SIZE``). IVF
indexes are trained on a seeded sample, then filled shard by shard from the
memory-mapped fp16 shards. Indexes filled from one trained index can be merged.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
from pydantic import ConfigDict, Field

from bitextmine import __version__, defaults
from bitextmine.embed.corpus import EmbeddingCorpus, release_pages
from bitextmine.embed.embedding_set import row_is_blank
from bitextmine.errors import BitextmineError
from bitextmine.io.atomic import atomic_path, prepare_output_dir, refuse_overwriting_inputs, save_json
from bitextmine.io.lock import output_lock
from bitextmine.io.paths import confined
from bitextmine.io.text import file_sha256
from bitextmine.io.validate import Int, Model, Str, parse
from bitextmine.progress import native_stderr_silenced

log = logging.getLogger(__name__)

INDEX_FILE = "index.faiss"
META_FILE = "index.json"
FORMAT_NAME = "bitextmine-index"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class IndexConfig:
    index_type: str = defaults.INDEX_TYPE  # or any FAISS factory string, e.g. "IVF4096,PQ64x4fs"
    nprobe: int = defaults.NPROBE
    candidates: int = defaults.INDEX_CANDIDATES  # proposed per query by the index, re-ranked exactly by mine
    train_sample: int | None = None  # None: TRAIN_SAMPLES_PER_LIST x lists
    seed: int = defaults.SEED
    device: str = defaults.DEVICE  # auto: faiss-gpu when installed and a GPU is visible
    trained_from: str | None = None  # reuse the training of this index (so results can be merged)


def choose_index_type(rows: int, dim: int) -> str:
    """The ``auto`` factory string for a database of ``rows`` vectors."""
    if rows <= defaults.FLAT_MAX_ROWS:
        return "Flat"
    lists = next(n for more_than, n in defaults.IVF_LISTS_BY_SIZE if rows > more_than)
    codes = _largest_divisor(dim, max(1, dim // defaults.PQ_DIMS_PER_CODE))
    return f"IVF{lists},PQ{codes}x4fs"


def default_train_sample(lists: int) -> int:
    """Training vectors for an index of ``lists`` IVF lists (when not given)."""
    return max(defaults.TRAIN_SAMPLES_PER_LIST * lists, defaults.PQ_MIN_TRAIN_ROWS)


def _largest_divisor(n: int, at_most: int) -> int:
    return max(m for m in range(1, at_most + 1) if n % m == 0)


def ivf_of(index):
    """The IVF part of a FAISS index (inside OPQ, id maps, ...), or None for an index without lists."""
    import faiss

    try:
        return faiss.extract_index_ivf(index)
    except RuntimeError:
        return None


def ivf_lists(index) -> int | None:
    ivf = ivf_of(index)
    return None if ivf is None else ivf.nlist


def faiss_gpu_available() -> bool:
    import faiss

    return hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0


SAMPLE_BLOCK_ROWS = 16_384  # sampled rows gathered at once: with their pages, tens of MB


def _training_sample(corpus: EmbeddingCorpus, size: int, seed: int) -> np.ndarray:
    """A seeded uniform sample of non-blank rows, read without loading the corpus."""
    rng = np.random.default_rng(seed)
    total = corpus.total_rows
    picked = np.sort(rng.choice(total, size=min(total, size), replace=False))
    offsets = corpus.shard_offsets()
    shard_of = np.searchsorted(offsets, picked, side="right") - 1
    sample = np.empty((len(picked), corpus.dim), dtype=np.float32)
    for s in np.unique(shard_of):
        where = np.flatnonzero(shard_of == s)
        shard = corpus.open_shard(s)
        # a block of rows at a time, its mapped pages released: a sample of a fifth of the
        # rows touches most pages of the shard, which would otherwise all count as resident
        for block in range(0, len(where), SAMPLE_BLOCK_ROWS):
            at = where[block : block + SAMPLE_BLOCK_ROWS]
            sample[at] = shard[picked[at] - offsets[s]]
            release_pages(shard)
    blank = row_is_blank(sample)
    return sample if not blank.any() else np.ascontiguousarray(sample[~blank])


def _trained_sha256(index) -> str:
    """Digest of the trained, empty index: equal digests mean compatible codebooks."""
    import faiss

    empty = faiss.clone_index(index)
    empty.reset()
    return hashlib.sha256(faiss.serialize_index(empty).tobytes()).hexdigest()


def build_index(emb_dirs: list[str | Path], out_dir: str | Path, cfg: IndexConfig = IndexConfig(),
                quiet: bool = False) -> dict:
    """Build the index of the corpus made of ``emb_dirs``; return its metadata.

    The output directory is locked for the build: one writer at a time. ``quiet``: FAISS's
    own warnings (too few training points) are silenced too.
    """
    with _locked_output(out_dir, [*emb_dirs, cfg.trained_from]):
        return _build_index(emb_dirs, out_dir, cfg, quiet)


@contextlib.contextmanager
def _locked_output(out_dir: str | Path, inputs: list) -> Iterator[None]:
    """Checks and the lock of an index directory being written; an empty new one is removed on failure."""
    refuse_overwriting_inputs([out_dir], inputs)
    created = prepare_output_dir(out_dir)
    try:
        with output_lock(out_dir, directory=True):
            yield
    except BaseException:
        if created and not any(Path(out_dir).iterdir()):
            Path(out_dir).rmdir()
        raise


def _build_index(emb_dirs: list[str | Path], out_dir: str | Path, cfg: IndexConfig, quiet: bool) -> dict:
    import faiss

    started = time.time()
    corpus = EmbeddingCorpus.load(emb_dirs, verify=True)
    rows = corpus.total_rows - sum(e.blank_lines for e in corpus.shards)
    if rows == 0:
        raise BitextmineError("nothing to index: every line is blank", path=emb_dirs[0])
    metric = faiss.METRIC_INNER_PRODUCT
    if cfg.trained_from:
        index, trained_meta = load_index(cfg.trained_from)
        if trained_meta["dim"] != corpus.dim:
            raise BitextmineError(f"dimension {trained_meta['dim']} differs from the embeddings' {corpus.dim}",
                                  path=cfg.trained_from)
        index.reset()
        factory = trained_meta["factory"]
        sample_size = trained_meta["train_sample"]
    else:
        factory = choose_index_type(rows, corpus.dim) if cfg.index_type == "auto" else cfg.index_type
        try:
            index = faiss.index_factory(corpus.dim, factory, metric)
        except RuntimeError as e:
            raise BitextmineError(f"FAISS cannot build index type {factory!r}: {str(e).splitlines()[0]}") from None
        lists = ivf_lists(index)
        sample_size = 0
        if not index.is_trained:
            wanted = cfg.train_sample or default_train_sample(lists or 1)
            sample = _training_sample(corpus, wanted, cfg.seed)
            sample_size = len(sample)
            needed = defaults.FAISS_MIN_POINTS_PER_CENTROID * (lists or 0)
            if sample_size < needed:
                raise BitextmineError(f"{factory} needs at least {needed} training vectors, the corpus has "
                                      f"{sample_size}; use a smaller index type (e.g. Flat)")
            log.info("training %s on %d vectors", factory, sample_size)
            index = _on_gpu(index, cfg.device)
            faiss.omp_set_num_threads(faiss.omp_get_max_threads())
            with native_stderr_silenced(quiet):
                index.train(sample)
            del sample  # not held while every row is added: the peak is the larger of the two phases
            index = _to_cpu(index)
    if ivf_lists(index) is None and not isinstance(index, faiss.IndexIDMap):
        index = faiss.IndexIDMap2(index)  # flat-like indexes need an id map for global ids
    trained = _trained_sha256(index)
    device_index = _on_gpu(index, cfg.device)
    for ids, block in corpus.non_blank_blocks():
        device_index.add_with_ids(np.ascontiguousarray(block, dtype=np.float32), ids.astype(np.int64))
    index = _to_cpu(device_index)
    if index.ntotal != rows:
        raise BitextmineError(f"index holds {index.ntotal} vectors, expected {rows}")
    meta = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "factory": factory,
        "metric": "inner_product",
        "dim": corpus.dim,
        "ntotal": int(index.ntotal),
        "nprobe": cfg.nprobe,
        "candidates": cfg.candidates,
        "train_sample": sample_size,
        "seed": cfg.seed,
        "trained_sha256": trained,
        "encoder": corpus.encoder.to_dict(),
        "embedding_sets": corpus.describe(),
        "shard_offsets": corpus.shard_offsets().tolist(),
        "shard_labels": corpus.labels,
        "bitextmine_version": __version__,
        "seconds": round(time.time() - started, 2),
    }
    return save_index(index, meta, out_dir)


def save_index(index, meta: dict, out_dir: str | Path) -> dict:
    """``index.faiss``, then ``index.json`` with the checksum of ``index.faiss``.

    Written in that order, so that a run killed between the two leaves an index.json
    whose checksum no longer matches: the pair is refused, never silently mixed.
    """
    import faiss

    out_dir = Path(out_dir)
    target = out_dir / INDEX_FILE
    with atomic_path(target) as tmp:
        try:
            faiss.write_index(index, str(tmp))
        except RuntimeError as e:  # faiss reports a full disk as a RuntimeError
            reason = "no space left on the device" if "No space left" in str(e) else _first_line(e)
            raise BitextmineError(f"cannot write: {reason}", path=target) from None
    meta = {**meta, "index_sha256": file_sha256(target)}
    save_json(out_dir / META_FILE, meta)
    return meta


def _first_line(error: Exception) -> str:
    lines = [x.strip() for x in str(error).splitlines() if x.strip()]
    return lines[-1] if lines else type(error).__name__


class IndexMeta(Model):
    """What ``index.json`` must hold (format and version are checked first)."""

    model_config = ConfigDict(extra="allow", frozen=True)  # informational fields may come and go
    format: Str
    format_version: Int
    factory: Str
    metric: Literal["inner_product"]
    dim: Annotated[Int, Field(ge=1)]
    ntotal: Annotated[Int, Field(ge=0)]
    nprobe: Annotated[Int, Field(ge=1)]  # used as it is by mine: -5 once reached FAISS
    candidates: Annotated[Int, Field(ge=1)] = defaults.INDEX_CANDIDATES
    train_sample: Annotated[Int, Field(ge=0)]
    trained_sha256: Str
    embedding_sets: list[dict[str, Str | Int]]
    shard_offsets: list[Annotated[Int, Field(ge=0)]]
    shard_labels: list[Str]
    index_sha256: Str | None = None  # absent in indexes built before it was recorded


def read_meta(index_dir: str | Path) -> dict:
    """``index.json`` of an index directory, checked (shape, types) but without reading the index."""
    index_dir = Path(index_dir)
    meta_path = index_dir / META_FILE
    if not meta_path.is_file() or not (index_dir / INDEX_FILE).is_file():
        raise BitextmineError(f"not an index directory (needs {INDEX_FILE} and {META_FILE})", path=index_dir)
    for name in (META_FILE, INDEX_FILE):  # a link out of the directory is not this index
        confined(index_dir, name, name, index_dir)
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise BitextmineError(f"unreadable index metadata: {e}", path=meta_path) from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT_NAME or meta.get("format_version") != FORMAT_VERSION:
        raise BitextmineError(f"not a {FORMAT_NAME} v{FORMAT_VERSION} index", path=meta_path)
    parse(IndexMeta, meta, meta_path)
    for i, s in enumerate(meta["embedding_sets"]):
        if not isinstance(s.get("fingerprint"), str) or not isinstance(s.get("path"), str):
            raise BitextmineError(f"embedding_sets.{i}: needs a path and a fingerprint", path=meta_path)
    return meta


def verify_index_file(index_dir: str | Path, meta: dict) -> None:
    """The bytes of ``index.faiss`` against the checksum in ``index.json``."""
    path = Path(index_dir) / INDEX_FILE
    expected = meta.get("index_sha256")
    if expected is None:
        log.warning("%s: %s records no checksum of %s (built by an older bitextmine), so it is not verified; "
                    "rebuild the index to add one", index_dir, META_FILE, INDEX_FILE)
    elif file_sha256(path) != expected:
        raise BitextmineError(f"checksum mismatch: {INDEX_FILE} is damaged or does not belong to this {META_FILE}; "
                              "rebuild it with `bitextmine index`", path=path)


def load_index(index_dir: str | Path, mmap: bool = False):
    """(faiss index, metadata) from a directory written by ``build_index``, checksum verified."""
    import faiss

    index_dir = Path(index_dir)
    meta = read_meta(index_dir)
    verify_index_file(index_dir, meta)
    flags = faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY if mmap else 0
    try:
        index = faiss.read_index(str(index_dir / INDEX_FILE), flags)
    except RuntimeError as e:  # truncated or not a FAISS file
        raise BitextmineError(f"not a readable FAISS index ({_first_line(e)}); rebuild it with `bitextmine index`",
                              path=index_dir / INDEX_FILE) from None
    if index.ntotal != meta["ntotal"] or index.d != meta["dim"]:
        raise BitextmineError(f"index holds {index.ntotal} vectors of dimension {index.d}, {META_FILE} says "
                              f"{meta['ntotal']} of {meta['dim']}", path=index_dir / INDEX_FILE)
    return index, meta


def merge_indexes(index_dirs: list[str | Path], out_dir: str | Path) -> dict:
    """Merge IVF indexes filled from the same trained index (``--trained-from``).

    Row ids of the second index onwards are shifted by the rows before them, so the
    merged index addresses the concatenation of their embedding sets.
    """
    if len(index_dirs) < 2:
        raise BitextmineError("merging needs at least two indexes")
    seen: dict[str, str | Path] = {}
    for directory in index_dirs:  # the same rows twice would be found twice, under two ids
        real = os.path.realpath(directory)
        if real in seen:
            raise BitextmineError(f"given twice (also as {seen[real]}): each part can be merged once", path=directory)
        seen[real] = directory
    with _locked_output(out_dir, index_dirs):
        return _merge_indexes(index_dirs, out_dir)


def _merge_indexes(index_dirs: list[str | Path], out_dir: str | Path) -> dict:
    merged, meta = load_index(index_dirs[0])
    merged_ivf = _extract_ivf(merged, index_dirs[0])
    sets, offsets, labels = list(meta["embedding_sets"]), list(meta["shard_offsets"]), list(meta["shard_labels"])
    for directory in index_dirs[1:]:
        index, other = load_index(directory)
        if other["trained_sha256"] != meta["trained_sha256"]:
            raise BitextmineError("trained separately from the first index; build the parts with "
                                  f"--trained-from {index_dirs[0]} to merge them", path=directory)
        shared = {s["fingerprint"] for s in sets} & {s["fingerprint"] for s in other["embedding_sets"]}
        if shared:
            raise BitextmineError("holds embeddings another part holds already (the same set indexed twice): each "
                                  "set can be merged once", path=directory)
        shift = offsets[-1]
        merged_ivf.merge_from(_extract_ivf(index, directory), shift)
        sets += other["embedding_sets"]
        offsets += [o + shift for o in other["shard_offsets"][1:]]
        labels += other["shard_labels"]
    merged.ntotal = merged_ivf.ntotal
    meta = {**meta, "ntotal": int(merged.ntotal), "embedding_sets": sets, "shard_offsets": offsets,
            "shard_labels": labels, "merged_from": [str(Path(d).resolve()) for d in index_dirs]}
    return save_index(merged, meta, out_dir)


def _extract_ivf(index, path):
    ivf = ivf_of(index)
    if ivf is None:
        raise BitextmineError("only IVF indexes can be merged", path=path)
    return ivf


def _on_gpu(index, device: str):
    """The index on all GPUs when faiss-gpu and a GPU are there (and wanted), else itself."""
    if device == "cpu" or not faiss_gpu_available():
        return index
    import faiss

    log.info("using faiss-gpu on %d GPU(s)", faiss.get_num_gpus())
    try:
        return faiss.index_cpu_to_all_gpus(index)
    except RuntimeError as e:  # e.g. a type without a GPU implementation
        log.warning("staying on CPU: %s", str(e).splitlines()[0])
        return index


def _to_cpu(index):
    import faiss

    on_gpu = type(index).__name__.startswith(("Gpu", "IndexReplicas", "IndexShards"))
    if on_gpu and hasattr(faiss, "index_gpu_to_cpu"):
        return faiss.index_gpu_to_cpu(index)
    return index
