"""Text shards -> an embedding set, resuming a previous run: which shards are done, which
to embed, and the manifest rewritten after each."""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path

from bitextmine import defaults
from bitextmine.devices import resolve_devices
from bitextmine.embed.config import EmbedConfig
from bitextmine.embed.embedding_set import MANIFEST_NAME, EmbeddingSet, ShardEntry
from bitextmine.embed.shard import embed_shard
from bitextmine.embed.workers import embed_on_devices
from bitextmine.encoders import Encoder, load_encoder
from bitextmine.errors import BitextmineError, printable
from bitextmine.io.atomic import (
    prepare_output_dir,
    refuse_other_files,
    refuse_overwriting_inputs,
    remove_stale_temporaries,
)
from bitextmine.io.lock import output_lock
from bitextmine.io.text import STDIN, count_lines, file_sha256
from bitextmine.progress import progress_bar

log = logging.getLogger(__name__)


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


def _open_set(out_dir: Path, encoder: Encoder, cfg: EmbedConfig, sources: list[str]) -> EmbeddingSet:
    """The set in ``out_dir`` to add to: existing (same encoder and settings) or new."""
    fresh = EmbeddingSet(path=out_dir, encoder=encoder.identity, dtype=defaults.EMBEDDING_DTYPE,
                         max_tokens=cfg.max_tokens, precision=cfg.precision)
    if not EmbeddingSet.exists(out_dir):
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
    if existing.precision is not None and existing.precision != cfg.precision:  # one precision a set
        differs.append(f"precision {existing.precision} vs {cfg.precision}")
    if not differs:
        if cfg.overwrite:  # the set becomes this run's: shards of other inputs go
            given = _sources_keys(sources)
            _drop_shards(existing, [e for e in existing.shards if e.source not in given])
        return existing
    if not cfg.overwrite:
        raise BitextmineError("holds an embedding set made differently (" + "; ".join(differs)
                              + "); use --overwrite to replace it, or another -o", path=out_dir)
    _drop_shards(existing, existing.shards)
    (out_dir / MANIFEST_NAME).unlink()
    return fresh


def _drop_shards(emb_set: EmbeddingSet, entries: list[ShardEntry]) -> None:
    for entry in entries:  # names were checked to lie inside the set when it was loaded
        for name in (entry.file, entry.text_file):
            if name:
                (emb_set.path / name).unlink(missing_ok=True)
    if entries:
        emb_set.shards = [e for e in emb_set.shards if e not in entries]
        emb_set.save()


def _source_key(source: str) -> str:
    """How the manifest names a source: its absolute path, ``-`` for standard input."""
    return source if source == STDIN else os.path.abspath(source)


def _sources_keys(sources: list[str]) -> set[str]:
    return {_source_key(s) for s in sources}


def _check_output_holds_this_set(out_dir: Path, sources: list[str], overwrite: bool) -> None:
    """Before the encoder loads: ``-o`` names this command's set (to resume or grow) or an empty
    directory, not another set (``embed en.txt -o emb/de`` would mix the languages) or a
    directory of other files; ``--overwrite`` replaces either."""
    if overwrite:
        return
    if not EmbeddingSet.exists(out_dir):
        refuse_other_files(out_dir, "embedding set", "use another -o, or --overwrite to write the set there")
        return
    existing = EmbeddingSet.load(out_dir)  # a damaged manifest fails now too
    given = _sources_keys(sources)
    others = [e.source for e in existing.shards if e.source not in given]
    if others:
        raise BitextmineError(f"holds an embedding set of other inputs ({printable(others[0])}"
                              f"{f' and {len(others) - 1} more' if len(others) > 1 else ''}); name them "
                              "too to add to the set, use --overwrite to replace it, or another -o", path=out_dir)


def plan_shards(emb_set: EmbeddingSet, sources: list[str]) -> tuple[list[ShardTask], list[str]]:
    """Which sources still need embedding, and the sources already done.

    A shard is done when the manifest lists it with the same source checksum and its
    file is present with the recorded checksum. A changed source replaces its entry.
    """
    by_source = {e.source: e for e in emb_set.shards}
    taken = {e.file for e in emb_set.shards}
    tasks, done = [], []
    for source in sources:
        entry = by_source.get(_source_key(source))
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
    _check_output_holds_this_set(out_dir, sources, cfg.overwrite)
    devices = devices or resolve_devices(cfg.device)
    if STDIN in sources:
        devices = devices[:1]  # standard input can be read by one process only
    encoder = load_encoder(cfg.encoder, device=devices[0], precision=cfg.precision).for_language(cfg.lang)
    emb_set = _open_set(out_dir, encoder, cfg, sources)
    _embed_missing(emb_set, sources, encoder, cfg, devices, progress)
    # manifest order follows the command line, whatever order the workers finished in
    order = {_source_key(s): i for i, s in enumerate(sources)}
    emb_set.shards.sort(key=lambda e: order.get(e.source, -1))
    emb_set.save()
    return emb_set


def _embed_missing(emb_set: EmbeddingSet, sources: list[str], encoder: Encoder, cfg: EmbedConfig,
                   devices: list[str], progress: bool) -> None:
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
            for entry in embed_on_devices(tasks, out_dir, cfg, devices, bar.update):
                _record(emb_set, entry)
