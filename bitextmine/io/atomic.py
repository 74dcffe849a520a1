"""Atomic file writes: a reader sees the old file or the complete new one, never half."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it over ``path`` on success.

    On an exception the temporary file is removed and ``path`` is left as it was. The
    temporary name starts with ``.`` and ends with ``.tmp`` so that it is easy to tell
    apart from finished outputs (and to clean up after a killed run).
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        yield tmp
        with open(tmp, "rb+") as f:  # the data reaches the disk before the rename does
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def write_json(path: str | Path, data: dict) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def remove_stale_temporaries(directory: str | Path) -> int:
    """Delete ``.*.tmp`` files left in ``directory`` by a killed run; return how many."""
    removed = 0
    for tmp in Path(directory).glob(".*.tmp"):
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
            removed += 1
    return removed


@contextlib.contextmanager
def atomic_text_writer(path: str | Path):
    """A UTF-8 text stream to ``path``, compressed by extension, renamed into place on success.

    ``-`` writes to standard output (no atomicity there: the reader sees the stream).
    """
    import io
    import sys

    if str(path) == "-":
        stream = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", newline="\n", write_through=False)
        try:
            yield stream
        finally:
            stream.flush()
            stream.detach()
        return
    path = Path(path)
    with atomic_path(path) as tmp:
        suffix = path.suffix
        if suffix == ".gz":
            import gzip

            raw = gzip.open(tmp, "wb")
        elif suffix == ".xz":
            import lzma

            raw = lzma.open(tmp, "wb")
        elif suffix == ".zst":
            import zstandard

            raw = zstandard.ZstdCompressor().stream_writer(open(tmp, "wb"), closefd=True)
        else:
            raw = open(tmp, "wb")
        with io.TextIOWrapper(raw, encoding="utf-8", newline="\n") as stream:
            yield stream
