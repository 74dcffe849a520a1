"""The prepared directory: sentence shards, their provenance sidecars and ``prepare.json``.

    DIR/NAME.NNNN.txt        one sentence a line: what `embed` reads
    DIR/NAME.NNNN.prov.tsv   line i: where line i of the shard came from (bitextmine/io/provenance.py)
    DIR/prepare.json         the settings, the inputs, every shard (lines, SHA-256 of both files,
                             the input's documents read when it was finished, its counts) and
                             the counts per rule of the whole run
    DIR/dedup.sqlite         while the run is not finished: the hashes of the sentences written

NAME comes from the input's file name; a shard holds whole documents and is cut after the
batch that takes it past ``shard_lines``. A shard is written under a temporary name and
renamed, then recorded in ``prepare.json``; a shard that is not recorded is written again
by the next run.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import ConfigDict, Field

from bitextmine import __version__
from bitextmine.choices import PREPARE_RULES
from bitextmine.errors import BitextmineError
from bitextmine.io.atomic import save_json, write_error
from bitextmine.io.paths import plain_file_name
from bitextmine.io.provenance import SIDECAR_SUFFIX, Origin
from bitextmine.io.text import file_sha256
from bitextmine.io.validate import Bool, Count, Float, Model, Str, parse

MANIFEST_NAME = "prepare.json"
DEDUP_NAME = "dedup.sqlite"
FORMAT_NAME = "bitextmine-prepared"
FORMAT_VERSION = 1
_SUFFIXES = (".gz", ".zst", ".xz", ".txt", ".jsonl", ".ndjson", ".json", ".parquet", ".warc", ".wet", ".arc")


def shard_stem(source: str, taken: set[str]) -> str:
    """A readable name for an input's shards, unique in the run: ``cc/de.jsonl.gz`` -> ``de``."""
    base = "stdin" if source == "-" else os.path.basename(source)
    while base.lower().endswith(_SUFFIXES):
        base = base[: base.lower().rindex(".")]
    base = re.sub(r"[^\w.+-]", "_", base).strip(".") or "input"
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}-{n}"
    taken.add(name)
    return name


def input_identity(path: str) -> dict:
    """What tells that an input changed between runs (size and time; stdin has none)."""
    if path == "-":
        return {"path": path, "size": None, "mtime_ns": None}
    stat = os.stat(path)
    return {"path": path, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


@dataclass
class Counts:
    """What the rules did, summed over documents."""

    sentences: int = 0
    kept: int = 0
    rejected: Counter = field(default_factory=Counter)

    def add(self, other: Counts) -> None:
        self.sentences += other.sentences
        self.kept += other.kept
        self.rejected.update(other.rejected)

    def to_dict(self) -> dict:
        return {"sentences": self.sentences, "kept": self.kept,
                "rejected": {rule: int(self.rejected.get(rule, 0)) for rule in PREPARE_RULES}}

    @classmethod
    def from_dict(cls, data: dict) -> Counts:
        return cls(int(data.get("sentences", 0)), int(data.get("kept", 0)), Counter(data.get("rejected", {})))


class ShardWriter:
    """One shard and its sidecar, written under temporary names and renamed by ``finish``."""

    def __init__(self, directory: Path, stem: str, part: int):
        self.name = f"{stem}.{part:04d}.txt"
        self.sidecar = f"{stem}.{part:04d}{SIDECAR_SUFFIX}"
        self.lines = 0
        self._paths = [directory / self.name, directory / self.sidecar]
        self._digests = [hashlib.sha256(), hashlib.sha256()]
        self._temps = [path.with_name(f".{path.name}.{os.getpid()}.tmp") for path in self._paths]
        self._files = [open(tmp, "wb") for tmp in self._temps]  # closed by finish or abort

    def write_many(self, lines: list[tuple[str, Origin]]) -> None:
        """Sentences and their origins, in order."""
        if not lines:
            return
        for out, digest, data in zip(self._files, self._digests,
                                     ("".join(s + "\n" for s, _ in lines), "".join(o.row() for _, o in lines)),
                                     strict=True):
            data = data.encode()
            out.write(data)
            digest.update(data)
        self.lines += len(lines)

    def finish(self) -> dict:
        """Rename both files into place; their record (names, lines, checksums)."""
        for out in self._files:
            out.flush()
            os.fsync(out.fileno())
            out.close()
        for tmp, path in zip(self._temps, self._paths, strict=True):
            try:
                os.replace(tmp, path)  # the directory is locked by this run: no other writer renames here
            except OSError as e:
                raise write_error(e, path) from None
        return {"file": self.name, "provenance": self.sidecar, "lines": self.lines,
                "sha256": self._digests[0].hexdigest(), "provenance_sha256": self._digests[1].hexdigest()}

    def abort(self) -> None:
        for out, tmp in zip(self._files, self._temps, strict=True):
            out.close()
            tmp.unlink(missing_ok=True)


@dataclass
class Manifest:
    """``prepare.json``: what a run was asked, and what it has written so far."""

    directory: Path
    config: dict
    inputs: list[dict]  # input_identity + done, read (the reader's counts), tail (counts after the last shard)
    shards: list[dict] = field(default_factory=list)
    complete: bool = False
    seconds: float = 0.0
    lid_unsupported: bool = False  # the detector does not know the language: language ID kept everything

    @property
    def path(self) -> Path:
        return self.directory / MANIFEST_NAME

    def save(self) -> None:
        save_json(self.path, {"format": FORMAT_NAME, "format_version": FORMAT_VERSION,
                              "bitextmine_version": __version__, **self.report()})

    def report(self) -> dict:
        """The settings and the counts per rule (of the whole run so far), and every shard."""
        totals, read = Counts(), Counter()
        for shard in self.shards:
            totals.add(Counts.from_dict(shard["counts"]))
        for record in self.inputs:
            totals.add(Counts.from_dict(record.get("tail", {})))
            read.update({k: v for k, v in record.get("read", {}).items() if isinstance(v, int)})
        return {"config": self.config, "complete": self.complete, "seconds": round(self.seconds, 3),
                "lid_unsupported": self.lid_unsupported,
                "documents": read["documents"], "bad_input": read["bad"], "not_text": read["not_text"],
                **totals.to_dict(), "lines": sum(s["lines"] for s in self.shards), "inputs": self.inputs,
                "shards": self.shards}

    def documents_done(self, input_index: int) -> int:
        return max((s["read"]["documents"] for s in self.shards if s["input"] == input_index), default=0)

    def parts(self, input_index: int) -> int:
        return sum(s["input"] == input_index for s in self.shards)

    def shard_files(self) -> list[Path]:
        return [self.directory / s["file"] for s in self.shards]

    def changed_shard(self) -> Path | None:
        """The first shard (or provenance file) written that is gone or no longer what was written."""
        for shard in self.shards:
            for name, digest in ((shard["file"], shard.get("sha256")), (shard["provenance"],
                                                                        shard.get("provenance_sha256"))):
                path = self.directory / name
                if not path.is_file() or (digest is not None and file_sha256(path) != digest):
                    return path
        return None


class _CountsRecord(Model):
    sentences: Count = 0
    kept: Count = 0
    rejected: dict[Str, Count] = {}


class _ReadRecord(Model):
    model_config = ConfigDict(extra="allow", frozen=True)
    documents: Count = 0
    bad: Count = 0
    not_text: Count = 0


class _ShardRecord(Model):
    model_config = ConfigDict(extra="allow", frozen=True)
    file: Str
    provenance: Str
    lines: Count
    input: Count
    read: _ReadRecord
    counts: _CountsRecord


class _InputRecord(Model):
    model_config = ConfigDict(extra="allow", frozen=True)
    done: Bool = False
    read: _ReadRecord | None = None
    tail: _CountsRecord | None = None


class _ManifestRecord(Model):
    """What ``prepare.json`` must hold to be continued or read (the format and version checked first)."""
    model_config = ConfigDict(extra="allow", frozen=True)
    config: dict[Str, Any]
    complete: Bool
    seconds: Annotated[Float, Field(ge=0)] = 0.0
    lid_unsupported: Bool = False
    inputs: list[_InputRecord]
    shards: list[_ShardRecord]


def load_manifest(directory: Path) -> Manifest | None:
    """The manifest of a prepared directory, None where there is none; names checked to stay inside."""
    path = directory / MANIFEST_NAME
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as e:
        raise BitextmineError(f"cannot read the manifest ({e}); prepare again with --overwrite", path=path) from None
    if not isinstance(data, dict):
        raise BitextmineError("not a manifest (no JSON object)", path=path)
    if data.get("format") != FORMAT_NAME or data.get("format_version") != FORMAT_VERSION:
        raise BitextmineError(f"not a {FORMAT_NAME} manifest of version {FORMAT_VERSION}", path=path)
    parse(_ManifestRecord, data, path, "a prepare manifest")
    for i, shard in enumerate(data["shards"]):
        plain_file_name(directory, shard["file"], ".txt", f"shards.{i}.file", path)
        plain_file_name(directory, shard["provenance"], SIDECAR_SUFFIX, f"shards.{i}.provenance", path)
        if shard["input"] >= len(data["inputs"]):
            raise BitextmineError(f"shards.{i}.input: {shard['input']}, but the manifest has "
                                  f"{len(data['inputs'])} input(s)", path=path)
    return Manifest(directory, data["config"], data["inputs"], data["shards"], data["complete"],
                    float(data.get("seconds", 0.0)), data.get("lid_unsupported", False))


def prepared_shards(directory: str | Path) -> list[Path]:
    """The shards of a finished prepared directory, in order (what `run` hands to embed)."""
    manifest = load_manifest(Path(directory))
    if manifest is None:
        raise BitextmineError(f"not a prepared directory (no {MANIFEST_NAME}); run prepare first", path=directory)
    if not manifest.complete:
        raise BitextmineError("the preparation is not finished; run it again to finish it", path=directory)
    return manifest.shard_files()
