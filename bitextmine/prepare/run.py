"""Inputs -> a prepared directory: read, judge in worker processes, deduplicate, write in order.

The parent reads documents and hands batches of them (``defaults.PREPARE_BATCH_CHARS`` of
text) to forked workers, at most two a worker in flight, so memory stays bounded whatever
the input's size; it takes the judged batches back in input order, drops the sentences
already written (``dedup.py``) and writes the rest with their provenance. A run killed or
stopped by bad input resumes: the shards recorded in ``prepare.json`` stay, the documents
they cover are read again but not judged, and the rest is done as before, so the output is
the one an uninterrupted run writes.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import time
import warnings
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from bitextmine import defaults
from bitextmine.devices import available_cpus, ignore_interrupts
from bitextmine.errors import BitextmineError, warn
from bitextmine.io.atomic import (
    prepare_output_dir,
    refuse_other_files,
    refuse_overwriting_inputs,
    remove_stale_temporaries,
)
from bitextmine.io.lock import output_lock
from bitextmine.io.provenance import Origin
from bitextmine.prepare.config import PrepareConfig
from bitextmine.prepare.dedup import SeenSentences
from bitextmine.prepare.documents import Document, ReadCounts
from bitextmine.prepare.judge import DocumentJudge, JudgedBatch
from bitextmine.prepare.readers import read_documents
from bitextmine.prepare.shards import (
    DEDUP_NAME,
    MANIFEST_NAME,
    Counts,
    Manifest,
    ShardWriter,
    input_identity,
    load_manifest,
    shard_stem,
)
from bitextmine.progress import progress_bar

log = logging.getLogger(__name__)


@dataclass
class Batch:
    """Documents sent to a worker together, with where the input's reading stood after them."""

    documents: list[Document]
    end: int  # documents of the input read once this batch was taken (its last one's number + 1)
    read: dict  # the reader's counts then


def _batches(documents: Iterator[Document], counts: ReadCounts, skip: int) -> Iterator[Batch]:
    """Documents grouped by ``PREPARE_BATCH_CHARS`` of text, the first ``skip`` left out (done before)."""
    batch, size, number = [], 0, 0
    for number, document in enumerate(documents, 1):
        if number <= skip:
            continue
        batch.append(document)
        size += len(document.text)
        if size >= defaults.PREPARE_BATCH_CHARS:
            yield Batch(batch, number, counts.to_dict())
            batch, size = [], 0
    if batch:
        yield Batch(batch, number, counts.to_dict())


# --- the workers ----------------------------------------------------------------------------

_JUDGE: DocumentJudge | None = None  # in a worker: set before the fork


def _judge_texts(texts: list[str]) -> JudgedBatch:
    return _JUDGE.judge(texts)


class Judges:
    """``DocumentJudge`` in forked worker processes (or here, with one worker), results in order.

    A worker that dies (killed, out of memory) breaks the pool: the run stops with that error
    (a crash, which ``run`` retries), rather than waiting for a result that never comes."""

    def __init__(self, cfg: PrepareConfig):
        global _JUDGE
        _JUDGE = DocumentJudge(cfg)  # the language model loaded once, shared by the forks
        self.lid_unsupported = _JUDGE.languages is not None and not _JUDGE.languages.supported
        self.workers = cfg.workers or available_cpus()
        self._pool = None
        if self.workers > 1:
            self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("fork"),
                                             initializer=ignore_interrupts,
                                             initargs=(os.getpid(),))

    def judged(self, batches: Iterator[Batch]) -> Iterator[tuple[Batch, JudgedBatch]]:
        if self._pool is None:
            for batch in batches:
                yield batch, _JUDGE.judge([d.text for d in batch.documents])
            return
        pending: deque = deque()
        for batch in batches:
            pending.append((batch, self._submit([d.text for d in batch.documents])))
            if len(pending) >= 2 * self.workers:
                done, result = pending.popleft()
                yield done, result.result()
        while pending:
            done, result = pending.popleft()
            yield done, result.result()

    def _submit(self, texts: list[str]):
        with warnings.catch_warnings():
            # Python 3.12+ warns about fork in a threaded process (numpy's BLAS threads, the pool's
            # own manager thread): the workers, forked on demand, use none of them
            warnings.filterwarnings("ignore", message=".*fork.*", category=DeprecationWarning)
            return self._pool.submit(_judge_texts, texts)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)


# --- one run ------------------------------------------------------------------------------

def _manifest_for(output: Path, inputs: list[str], cfg: PrepareConfig, overwrite: bool) -> Manifest:
    """The manifest to continue: this run's, or a new one (an old one of other inputs or
    settings is refused, or with ``overwrite`` removed with its files)."""
    identities = [input_identity(path) for path in inputs]
    fresh = Manifest(output, cfg.to_dict(), [{**identity, "done": False} for identity in identities])
    try:
        old = load_manifest(output)
    except BitextmineError:
        if not overwrite:
            raise
        old = None  # unreadable: its shards unknown, the new manifest lists only what this run writes
        for path in (output / MANIFEST_NAME, output / DEDUP_NAME, output / f"{DEDUP_NAME}-journal"):
            path.unlink(missing_ok=True)
    if old is None:
        if not overwrite:  # another tool's folder, an embedding set: never mixed with shards
            refuse_other_files(output, "prepared sentences", "use another -o, or --overwrite to write the shards "
                               "there", ignore=(DEDUP_NAME, f"{DEDUP_NAME}-journal"))
        return fresh
    if "-" in inputs and not overwrite:
        raise BitextmineError("holds sentences prepared before, and standard input cannot be told apart from "
                              "what was read then; give --overwrite to prepare it again, or another directory",
                              path=output)
    same = "-" not in inputs and _continues(old, fresh)
    changed = old.changed_shard() if same else None
    if same and changed is None:
        return old
    if not overwrite:
        if changed is not None:
            raise BitextmineError("changed since it was prepared (or is gone); give --overwrite to prepare "
                                  "again", path=changed)
        raise BitextmineError("holds sentences prepared from other inputs or settings; give --overwrite to "
                              "replace them, or another directory", path=output)
    for path in [*old.shard_files(), *(output / s["provenance"] for s in old.shards), output / DEDUP_NAME,
                 output / f"{DEDUP_NAME}-journal"]:
        path.unlink(missing_ok=True)
    return fresh


def _continues(old: Manifest, fresh: Manifest) -> bool:
    """Whether this run continues ``old`` (updated to this run's settings where they may differ).

    A run stopped by bad input continues with ``--errors skip`` (what it wrote met no bad input
    under ``strict``), and with an input it had not begun fixed or replaced meanwhile.
    """
    settings = dict(old.config)
    if settings.get("errors") == "strict":
        settings["errors"] = fresh.config["errors"]
    if settings != fresh.config or len(old.inputs) != len(fresh.inputs):
        return False
    for i, (record, identity) in enumerate(zip(old.inputs, fresh.inputs, strict=True)):
        if record.get("path") != identity["path"]:
            return False
        begun = record.get("done") or old.parts(i)
        if begun and (record.get("size"), record.get("mtime_ns")) != (identity["size"], identity["mtime_ns"]):
            return False
    old.config = fresh.config
    for record, identity in zip(old.inputs, fresh.inputs, strict=True):
        record.update(size=identity["size"], mtime_ns=identity["mtime_ns"])
    return True


def prepare_inputs(inputs: list[str], output: str | Path, cfg: PrepareConfig, overwrite: bool = False,
                   progress: bool = False) -> dict:
    """Prepare ``inputs`` into the directory ``output``; the report (``Manifest.report``)."""

    output = Path(output)
    refuse_overwriting_inputs([output], inputs)
    prepare_output_dir(output)
    with output_lock(output, directory=True):
        remove_stale_temporaries(output)
        manifest = _manifest_for(output, inputs, cfg, overwrite)
        if manifest.complete:
            log.info("%s: already prepared (%d shards)", output, len(manifest.shards))
            return manifest.report()
        started = time.time()
        seen = SeenSentences(output / DEDUP_NAME)
        judges = None
        try:
            seen.forget_shards_from(len(manifest.shards))
            judges = Judges(cfg)
            manifest.lid_unsupported = judges.lid_unsupported
            if judges.lid_unsupported:
                log.warning("the language detector does not know %s: language ID keeps every sentence", cfg.lang)
            _run(inputs, cfg, manifest, seen, judges, progress)
        finally:
            if judges is not None:
                judges.close()
            seen.close()
            manifest.seconds += time.time() - started
        manifest.complete = True
        manifest.save()
        for suffix in ("", "-journal"):
            (output / f"{DEDUP_NAME}{suffix}").unlink(missing_ok=True)
    return manifest.report()


def _run(inputs: list[str], cfg: PrepareConfig, manifest: Manifest, seen: SeenSentences, judges: Judges,
         progress: bool) -> None:
    taken: set[str] = set()
    stems = [shard_stem(path, taken) for path in inputs]
    with progress_bar(total=None, desc="prepare", unit="sent", disable=not progress) as bar:
        for index, path in enumerate(inputs):
            record = manifest.inputs[index]
            if record.get("done"):
                continue
            counts = ReadCounts()
            documents = read_documents(path, cfg.read_options(), counts)
            judged = judges.judged(_batches(documents, counts, manifest.documents_done(index)))
            tail = _write_input(index, path, stems[index], judged, cfg, manifest, seen, bar)
            record.update(done=True, read=counts.to_dict(), tail=tail.to_dict())
            manifest.save()
            if counts.bad:
                log.warning("%s: left out %d bad record(s) (--errors skip), the first: %s", path, counts.bad,
                            counts.bad_examples[0])
            elif not counts.documents and not counts.not_text:
                warn("no documents: the input is empty", path=path)  # embed would refuse it: say so here


def _write_input(index: int, path: str, stem: str, judged: Iterator[tuple[Batch, JudgedBatch]], cfg: PrepareConfig,
                 manifest: Manifest, seen: SeenSentences, bar) -> Counts:
    """Write an input's shards, each recorded as it is finished; the counts after the last one."""
    counts = Counts()
    writer, last = None, None
    try:
        for batch, result in judged:
            if writer is None:
                writer = ShardWriter(manifest.directory, stem, manifest.parts(index))
            _write_batch(batch, result, path, cfg, writer, seen, len(manifest.shards), counts)
            bar.update(result.sentences)
            last = batch
            if writer.lines >= cfg.shard_lines:
                _finish_shard(writer, index, last, counts, manifest, seen)
                writer, counts = None, Counts()
    except BaseException:
        if writer is not None:
            writer.abort()
        raise
    if writer is not None and writer.lines:
        _finish_shard(writer, index, last, counts, manifest, seen)
        return Counts()
    if writer is not None:
        writer.abort()  # the last documents kept nothing: no empty shard (embed refuses them)
    seen.commit()
    return counts


def _write_batch(batch: Batch, result: JudgedBatch, path: str, cfg: PrepareConfig, writer: ShardWriter,
                 seen: SeenSentences, shard: int, counts: Counts) -> None:
    counts.sentences += result.sentences
    counts.rejected.update(result.rejected)
    flat = [(document, number, sentence) for document, kept in zip(batch.documents, result.kept, strict=True)
            for number, sentence in kept]
    new = seen.claim(result.hashes, shard) if cfg.active("dedup") else [True] * len(flat)
    writer.write_many([(sentence, Origin(path, document.id, document.url, number))
                       for (document, number, sentence), fresh in zip(flat, new, strict=True) if fresh])
    counts.kept += sum(new)
    counts.rejected["dedup"] += len(new) - sum(new)


def _finish_shard(writer: ShardWriter, index: int, last: Batch, counts: Counts, manifest: Manifest,
                  seen: SeenSentences) -> None:
    """Rename the shard into place, commit its hashes, then record it (in that order: a shard
    not recorded is written again, and its hashes forgotten first)."""
    entry = writer.finish()
    seen.commit()
    manifest.shards.append({**entry, "input": index, "read": {**last.read, "documents": last.end},
                            "counts": counts.to_dict()})
    manifest.save()
