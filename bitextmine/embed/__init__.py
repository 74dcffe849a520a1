"""Text shards -> an embedding set (fp16 ``.npy`` shards + ``manifest.json``).

The unit of work and of resumption is the shard: a shard is done once its entry is in
the manifest, and a re-run skips done shards whose source is unchanged. Each ``.npy``
is written under a temporary name and renamed, and the manifest is rewritten
atomically after every shard, so a killed run leaves only finished shards behind.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bitextmine import defaults
from bitextmine.embed.embedding_set import MANIFEST_NAME, EmbeddingSet, ShardEntry
from bitextmine.encoders.base import Encoder, token_budget_batches
from bitextmine.errors import BitextmineError
from bitextmine.io.atomic import atomic_path, remove_stale_temporaries
from bitextmine.io.text import STDIN, count_lines, file_sha256, read_shard

log = logging.getLogger(__name__)
NPY_HEADER_BYTES = 4096  # room for a .npy header (128 bytes in practice) when checking free space


@dataclass(frozen=True)
class EmbedConfig:
    encoder: str = defaults.ENCODER
    device: str = defaults.DEVICE
    precision: str = defaults.PRECISION
    batch_tokens: int | None = None  # None: defaults.BATCH_TOKENS, scaled up on GPU
    max_tokens: int = defaults.MAX_TOKENS
    errors: str = defaults.TEXT_ERRORS
    overwrite: bool = False
    lang: str | None = None  # the text's language: an encoder that routes languages picks its part by it

    def batch_tokens_for(self, device: str) -> int:
        if self.batch_tokens is not None:
            return self.batch_tokens
        factor = defaults.GPU_BATCH_TOKENS_FACTOR if device.startswith("cuda") else 1
        return defaults.BATCH_TOKENS * factor


@dataclass
class ShardTask:
    source: str
    file: str  # output .npy name inside the set


def shard_file_name(source: str, taken: set[str]) -> str:
    """A readable, unique ``.npy`` name for a source shard: ``news.de.txt.gz`` -> ``news.de.npy``."""
    base = "stdin" if source == STDIN else os.path.basename(source)
    for suffix in (".gz", ".zst", ".xz", ".txt"):
        base = base.removesuffix(suffix)
    base = re.sub(r"[^\w.+-]", "_", base).lstrip(".") or "shard"  # never "." or "..", never hidden
    name, n = f"{base}.npy", 1
    while name in taken:
        n += 1
        name = f"{base}-{n}.npy"
    return name


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
    import torch

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
    shard = read_shard(source, errors=cfg.errors)
    target = out_dir / file
    truncated, target_sha256 = _write_shard_file(
        target, len(shard.lines), encoder.dim,
        lambda write: embed_texts(encoder, shard.lines, shard.blank, write, cfg.batch_tokens_for(encoder.device),
                                  cfg.max_tokens, on_progress))
    text_file = text_sha256 = None
    if source == STDIN:  # keep the text: it cannot be read again at mining time
        import gzip

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


def _open_set(out_dir: Path, encoder: Encoder, cfg: EmbedConfig) -> EmbeddingSet:
    """The set in ``out_dir`` to add to: existing (same encoder and settings) or new."""
    fresh = EmbeddingSet(path=out_dir, encoder=encoder.identity, dtype=defaults.EMBEDDING_DTYPE,
                         max_tokens=cfg.max_tokens, precision=cfg.precision)
    if not EmbeddingSet.exists(out_dir):
        if cfg.overwrite is False and any(p.suffix == ".npy" for p in out_dir.iterdir()):
            raise BitextmineError("directory holds .npy files but no manifest; use --overwrite to replace them",
                                  path=out_dir)
        return fresh
    existing = EmbeddingSet.load(out_dir)
    differs = []
    if existing.encoder != encoder.identity:
        differs.append(f"encoder {existing.encoder.name} ({existing.encoder.weights_sha256[:12]}) "
                       f"vs {encoder.identity.name} ({encoder.identity.weights_sha256[:12]})")
    if existing.max_tokens != cfg.max_tokens:
        differs.append(f"max_tokens {existing.max_tokens} vs {cfg.max_tokens}")
    if existing.dtype != defaults.EMBEDDING_DTYPE:
        differs.append(f"dtype {existing.dtype} vs {defaults.EMBEDDING_DTYPE}")
    if not differs:
        return existing
    if not cfg.overwrite:
        raise BitextmineError("holds an embedding set made differently (" + "; ".join(differs)
                              + "); use --overwrite to replace it, or another -o", path=out_dir)
    for entry in existing.shards:  # names were checked to lie inside the set when it was loaded
        for name in (entry.file, entry.text_file):
            if name:
                (out_dir / name).unlink(missing_ok=True)
    (out_dir / MANIFEST_NAME).unlink()
    return fresh


def plan_shards(emb_set: EmbeddingSet, sources: list[str]) -> tuple[list[ShardTask], list[str]]:
    """Which sources still need embedding, and the sources already done.

    A shard is done when the manifest lists it with the same source checksum and its
    file is present with the recorded checksum. A changed source replaces its entry.
    """
    by_source = {e.source: e for e in emb_set.shards}
    taken = {e.file for e in emb_set.shards}
    tasks, done = [], []
    for source in sources:
        key = source if source == STDIN else os.path.abspath(source)
        entry = by_source.get(key)
        if entry is not None and source != STDIN and _is_done(emb_set.path, entry, source):
            done.append(source)
            continue
        if entry is not None:
            file = entry.file  # re-embed under the same name
        else:
            file = shard_file_name(source, taken)
            taken.add(file)
        tasks.append(ShardTask(source=source, file=file))
    return tasks, done


def _is_done(out_dir: Path, entry: ShardEntry, source: str) -> bool:
    if os.path.getsize(source) != entry.source_size or file_sha256(source) != entry.source_sha256:
        log.info("%s changed since it was embedded: embedding it again", source)
        return False
    file = out_dir / entry.file
    return file.is_file() and file_sha256(file) == entry.file_sha256


def _record(emb_set: EmbeddingSet, entry: ShardEntry) -> None:
    """Add or replace a shard's entry and rewrite the manifest (atomically)."""
    emb_set.shards = [e for e in emb_set.shards if e.source != entry.source]
    emb_set.shards.append(entry)
    emb_set.save()


def embed_shards(sources: list[str], out_dir: str | Path, cfg: EmbedConfig = EmbedConfig(),
                 devices: list[str] | None = None, progress: bool = True) -> EmbeddingSet:
    """Embed text shards into the set at ``out_dir``, resuming a previous run.

    ``devices``: the workers to use; default from ``cfg.device`` (one worker per visible
    GPU). With several devices, each runs in its own process over its share of shards.
    One writer at a time: the set's directory is locked for the run.
    """
    from bitextmine.io.atomic import prepare_output_dir, refuse_overwriting_inputs
    from bitextmine.io.lock import output_lock

    out_dir = Path(out_dir)
    refuse_overwriting_inputs([out_dir], sources)  # `embed 'corpus/*' -o corpus` would embed the set itself
    created = prepare_output_dir(out_dir)
    try:
        with output_lock(out_dir, directory=True):
            emb_set = _embed_locked(sources, out_dir, cfg, devices, progress)
    except BaseException:
        if created and not any(out_dir.iterdir()):
            out_dir.rmdir()  # leave no trace of a run that produced nothing
        raise
    return emb_set


def _embed_locked(sources: list[str], out_dir: Path, cfg: EmbedConfig, devices: list[str] | None,
                  progress: bool) -> EmbeddingSet:
    from bitextmine.devices import resolve_devices
    from bitextmine.encoders import load_encoder

    if EmbeddingSet.exists(out_dir):
        EmbeddingSet.load(out_dir)  # a damaged manifest fails now, before the encoder loads
    devices = devices or resolve_devices(cfg.device)
    if STDIN in sources:
        devices = devices[:1]  # standard input can be read by one process only
    encoder = load_encoder(cfg.encoder, device=devices[0], precision=cfg.precision).for_language(cfg.lang)
    emb_set = _open_set(out_dir, encoder, cfg)
    _embed_missing(emb_set, sources, encoder, cfg, devices, progress)
    # manifest order follows the command line, whatever order the workers finished in
    order = {os.path.abspath(s) if s != STDIN else s: i for i, s in enumerate(sources)}
    emb_set.shards.sort(key=lambda e: order.get(e.source, -1))
    emb_set.save()
    return emb_set


def _embed_missing(emb_set: EmbeddingSet, sources: list[str], encoder: Encoder, cfg: EmbedConfig,
                   devices: list[str], progress: bool) -> None:
    from bitextmine.progress import progress_bar

    out_dir = emb_set.path
    remove_stale_temporaries(out_dir)
    tasks, done = plan_shards(emb_set, sources)
    if done:
        log.info("%d shard(s) already embedded, skipped", len(done))
    if not tasks:
        return

    # A quick newline count gives the progress bar its total (and so an ETA).
    total = None if any(t.source == STDIN for t in tasks) else sum(count_lines(t.source) for t in tasks)
    with progress_bar(total=total, desc="embed", unit="sent", disable=not progress) as bar:
        if len(devices) == 1:
            for task in tasks:
                _record(emb_set, embed_shard(encoder, task.source, out_dir, task.file, cfg, bar.update))
        else:
            from bitextmine.embed.workers import embed_on_devices

            for entry in embed_on_devices(tasks, out_dir, cfg, devices, bar.update):
                _record(emb_set, entry)
