"""One text shard -> one ``.npy`` file of its rows, written block by block and atomically."""

from __future__ import annotations

import gzip
import hashlib
import io
import logging
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from bitextmine import defaults
from bitextmine.embed.config import EmbedConfig
from bitextmine.embed.embedding_set import ShardEntry
from bitextmine.encoders.base import Encoder, token_budget_batches
from bitextmine.errors import BitextmineError
from bitextmine.io.atomic import atomic_path
from bitextmine.io.text import STDIN, read_shard

log = logging.getLogger(__name__)
NPY_HEADER_BYTES = 4096  # room for a .npy header (128 bytes in practice) when checking free space


def embed_texts(
    encoder: Encoder,
    lines: list[str],
    blank: list[bool],
    write: Callable[[np.ndarray], None],
    batch_tokens: int,
    max_tokens: int,
    on_progress=lambda n: None,
) -> int:
    """Embed ``lines``, handing ``write`` their rows in order, a block at a time.

    Blank lines get zero rows. Returns the number of truncated sentences. The next block
    is tokenized in a thread while this one is embedded (SentencePiece releases the
    interpreter while it works), so that a GPU does not wait for its tokens.
    """
    import torch  # torch: 2.5 s, loaded where used (ARCHITECTURE.md, start-up)

    def tokenized(start: int) -> tuple[int, int, list[int], list[list[int]], int]:
        stop = min(start + defaults.EMBED_SORT_CHUNK_LINES, len(lines))
        todo = [i for i in range(start, stop) if not blank[i]]
        ids, cut = encoder.tokenize_truncated([lines[i] for i in todo], max_tokens) if todo else ([], 0)
        return start, stop, todo, ids, cut

    narrow = getattr(torch, defaults.EMBEDDING_DTYPE)
    truncated = 0
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tokenize") as ahead:
        following = ahead.submit(tokenized, 0) if lines else None
        while following is not None:
            start, stop, todo, ids, cut = following.result()
            following = ahead.submit(tokenized, stop) if stop < len(lines) else None
            truncated += cut
            block = np.zeros((stop - start, encoder.dim), dtype=defaults.EMBEDDING_DTYPE)
            # a batch's rows are read once the next batch is under way: on a GPU, its forward
            # pass runs while the host packs the next batch's tokens
            previous = None
            for batch in token_budget_batches([len(x) for x in ids], batch_tokens):
                rows = encoder.embed_token_batch_on_device([ids[j] for j in batch])
                if previous is not None:
                    _read_rows(block, *previous, on_progress)
                previous = [todo[j] - start for j in batch], rows.to(narrow)  # narrowed by torch: 3x numpy
            if previous is not None:
                _read_rows(block, *previous, on_progress)
            on_progress(stop - start - len(todo))
            write(block)
    return truncated


def _read_rows(block: np.ndarray, positions: list[int], rows, on_progress) -> None:
    block[positions] = rows.cpu().numpy()
    on_progress(len(positions))


def _check_free_space(directory: Path, needed: int, target: Path) -> None:
    """Fail before writing when the file cannot fit (a full disk would otherwise stop it half-way)."""
    stats = os.statvfs(directory)
    free = stats.f_bavail * stats.f_frsize
    if free < needed:
        raise BitextmineError(f"not enough free space: the file needs {needed / 2**20:.1f} MiB, "
                              f"{free / 2**20:.1f} MiB are free", path=target)


def _write_shard_file(target: Path, rows: int, dim: int,
                      fill: Callable[[Callable[[np.ndarray], None]], int]) -> tuple[int, str]:
    """Write a ``(rows, dim)`` .npy file block by block, atomically; return what ``fill``
    returns and the file's SHA-256.

    Plain sequential writes, not a writable memory map: a full disk then raises an
    error here instead of killing the process with SIGBUS. Each block is written and
    hashed in a thread while ``fill`` computes the next (both release the interpreter),
    from the array's own buffer (a ``tobytes`` copy made writing 4x slower), so the
    manifest's hash needs no second read of the file.
    """
    dtype = np.dtype(defaults.EMBEDDING_DTYPE)
    _check_free_space(target.parent, rows * dim * dtype.itemsize + NPY_HEADER_BYTES, target)
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": (rows, dim)})
    digest = hashlib.sha256()
    with atomic_path(target) as tmp, open(tmp, "wb") as f, \
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="write") as writer:

        def store(data) -> None:
            f.write(data)
            digest.update(data)

        store(header.getvalue())
        written, pending = 0, None

        def write(block: np.ndarray) -> None:
            nonlocal written, pending
            data = np.ascontiguousarray(block, dtype=dtype)
            if pending is not None:
                pending.result()  # one block in flight: memory stays bounded, errors surface here
            pending = writer.submit(store, memoryview(data).cast("B"))
            written += len(block)

        result = fill(write)
        if pending is not None:
            pending.result()
        if written != rows:
            raise BitextmineError(f"wrote {written} rows, expected {rows}", path=target)
    return result, digest.hexdigest()


def embed_shard(encoder: Encoder, source: str, out_dir: Path, file: str, cfg: EmbedConfig,
                on_progress=lambda n: None) -> ShardEntry:
    """Embed one text shard into ``out_dir/file``; return its manifest entry."""
    shard = read_shard(source, errors=cfg.errors, replace_option="--errors replace")
    target = out_dir / file
    truncated, target_sha256 = _write_shard_file(
        target, len(shard.lines), encoder.dim,
        lambda write: embed_texts(encoder, shard.lines, shard.blank, write, cfg.batch_tokens_for(encoder.device),
                                  cfg.max_tokens, on_progress))
    text_file = text_sha256 = None
    if source == STDIN:  # keep the text: it cannot be read again at mining time
        text_file = file.removesuffix(".npy") + ".txt.gz"
        data = gzip.compress("".join(line + "\n" for line in shard.lines).encode("utf-8"), mtime=0)
        with atomic_path(out_dir / text_file) as tmp:
            tmp.write_bytes(data)
        text_sha256 = hashlib.sha256(data).hexdigest()
    if truncated:
        log.warning("%s: %d sentence(s) longer than %d tokens were truncated", source, truncated, cfg.max_tokens)
    return ShardEntry(
        source=source if source == STDIN else os.path.abspath(source),
        source_size=shard.source_size,
        source_sha256=shard.source_sha256,
        lines=len(shard.lines),
        blank_lines=shard.blank_count,
        truncated_lines=truncated,
        file=file,
        file_sha256=target_sha256,
        text_file=text_file,
        text_file_sha256=text_sha256,
    )
