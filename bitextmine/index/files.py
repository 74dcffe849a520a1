"""An index directory: ``index.faiss`` and ``index.json`` (its metadata and checksum), written
and read back checked."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from bitextmine import defaults
from bitextmine.errors import BitextmineError
from bitextmine.io.atomic import atomic_path, save_json
from bitextmine.io.paths import confined
from bitextmine.io.text import file_sha256
from bitextmine.io.validate import Int, Model, Str, parse

log = logging.getLogger(__name__)

INDEX_FILE = "index.faiss"
META_FILE = "index.json"
FORMAT_NAME = "bitextmine-index"
FORMAT_VERSION = 1


def save_index(index, meta: dict, out_dir: str | Path) -> dict:
    """``index.faiss``, then ``index.json`` with the checksum of ``index.faiss``.

    Written in that order, so that a run killed between the two leaves an index.json
    whose checksum no longer matches: the pair is refused, never silently mixed.
    """
    import faiss  # faiss: 0.27 s, loaded where used (ARCHITECTURE.md, start-up)

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
    embedding_sets: Annotated[list[dict[str, Str | Int]], Field(min_length=1)]
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
    except (ValueError, RecursionError) as e:  # bad JSON or UTF-8, a 5000-digit number, deep nesting
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
    import faiss  # faiss: 0.27 s, loaded where used (ARCHITECTURE.md, start-up)

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
