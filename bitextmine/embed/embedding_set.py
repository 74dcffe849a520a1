"""The embedding set: a directory of fp16 ``.npy`` shards described by ``manifest.json``.

Row *i* of ``<shard>.npy`` is line *i* of its source shard. Rows are L2-normalised; a
blank source line has an all-zero row, so that it can never be a neighbour with a
positive score and later stages can drop it (``row_is_blank``).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
from pydantic import Field, model_validator

from bitextmine.encoders.base import EncoderIdentity
from bitextmine.errors import BitextmineError
from bitextmine.io.atomic import save_json
from bitextmine.io.paths import confined, plain_file_name
from bitextmine.io.text import file_sha256, read_shard
from bitextmine.io.validate import Bool, Float, Int, Model, Str, parse

MANIFEST_NAME = "manifest.json"
FORMAT_NAME = "bitextmine-embeddings"
FORMAT_VERSION = 1


@dataclass
class ShardEntry:
    source: str  # absolute path of the text shard, or "-" for standard input
    source_size: int
    source_sha256: str
    lines: int
    blank_lines: int
    truncated_lines: int  # sentences cut to max_tokens
    file: str  # the .npy file, relative to the set's directory
    file_sha256: str
    # A gzip copy of the text, kept in the set when the source cannot be read again
    # (standard input), so that mining can still print the sentences.
    text_file: str | None = None
    text_file_sha256: str | None = None  # absent in sets written before it was recorded


@dataclass
class EmbeddingSet:
    path: Path
    encoder: EncoderIdentity
    dtype: str
    max_tokens: int
    precision: str  # the matmul precision asked for (one a set: embed refuses to add shards of another)
    shards: list[ShardEntry] = field(default_factory=list)
    normalized: bool = True

    # --- reading ------------------------------------------------------------------------
    @classmethod
    def exists(cls, path: str | Path) -> bool:
        return (Path(path) / MANIFEST_NAME).is_file()

    @classmethod
    def load(cls, path: str | Path, verify: bool = False) -> EmbeddingSet:
        """Open a set; ``verify`` also checks every shard's checksum (reads all files).

        The manifest is checked for shape and types, and every file name in it must
        lie inside the set's directory.
        """
        path = Path(path)
        manifest = path / MANIFEST_NAME
        if not manifest.is_file():
            what = "no such directory" if not path.exists() else f"not an embedding set (no {MANIFEST_NAME})"
            raise BitextmineError(what, path=path)
        confined(path, MANIFEST_NAME, "the manifest", manifest)  # a link out of the set is not this set's
        data = _read_manifest(manifest)
        if data.get("format") != FORMAT_NAME:
            raise BitextmineError(f"not a {FORMAT_NAME} manifest", path=manifest)
        if data.get("format_version") != FORMAT_VERSION:
            raise BitextmineError(
                f"manifest format version {data.get('format_version')!r} is not supported "
                f"(this bitextmine reads version {FORMAT_VERSION})", path=manifest)
        checked = parse(ManifestSchema, data, manifest, "a manifest")
        emb_set = cls(
            path=path,
            encoder=EncoderIdentity.from_dict(checked.encoder.model_dump()),
            dtype=checked.dtype,
            max_tokens=checked.max_tokens,
            precision=checked.precision,
            shards=[ShardEntry(**s.model_dump()) for s in checked.shards],
            normalized=checked.normalized,
        )
        for i, entry in enumerate(emb_set.shards):
            plain_file_name(path, entry.file, ".npy", f"shards.{i}.file", manifest)
            if entry.text_file is not None:
                plain_file_name(path, entry.text_file, ".txt.gz", f"shards.{i}.text_file", manifest)
        if verify:
            emb_set.verify()
        return emb_set

    @property
    def dim(self) -> int:
        return self.encoder.dim

    @property
    def total_rows(self) -> int:
        return sum(s.lines for s in self.shards)

    def shard_offsets(self) -> np.ndarray:
        return shard_offsets(self.shards)

    def open_shard(self, index: int) -> np.ndarray:
        """A memory map of one shard, checked against the manifest."""
        entry = self.shards[index]
        file = self.path / entry.file
        if not file.is_file():
            raise BitextmineError("shard file listed in the manifest is missing", path=file)
        try:
            array = np.load(file, mmap_mode="r", allow_pickle=False)
        except ValueError as e:
            raise BitextmineError(f"not a valid .npy file: {e}", path=file) from None
        if array.shape != (entry.lines, self.dim) or array.dtype != np.dtype(self.dtype):
            raise BitextmineError(
                f"shape {array.shape} {array.dtype} does not match the manifest "
                f"({entry.lines}, {self.dim}) {self.dtype}", path=file)
        return array

    def verify(self) -> None:
        """Checksums and shapes of every shard against the manifest."""
        for i, entry in enumerate(self.shards):
            file = self.path / entry.file
            if not file.is_file():
                raise BitextmineError("shard file listed in the manifest is missing", path=file)
            if file_sha256(file) != entry.file_sha256:
                raise BitextmineError("checksum mismatch: the file is corrupted or was changed "
                                      "after embedding; embed it again", path=file)
            self.open_shard(i)

    def read_lines(self, index: int) -> list[str]:
        """The text of one shard, for writing mined pairs (the source must be unchanged)."""

        entry = self.shards[index]
        if entry.text_file is not None:
            text = self.path / entry.text_file
            if entry.text_file_sha256 is not None and file_sha256(text) != entry.text_file_sha256:
                raise BitextmineError("checksum mismatch: the kept text is damaged or was changed", path=text)
            return read_shard(str(text), errors="replace").lines
        # the text the set was made from, outside it by nature: read only when it is the same
        # regular file by its size first (a manifest edited to name another file is not opened)
        if not os.path.isfile(entry.source) or os.path.getsize(entry.source) != entry.source_size:
            raise BitextmineError("the text changed since it was embedded (or is gone); embed it again",
                                  path=entry.source)
        shard = read_shard(entry.source, errors="replace")
        if shard.source_sha256 != entry.source_sha256:
            raise BitextmineError("the text changed since it was embedded; embed it again", path=entry.source)
        return shard.lines

    # --- writing ------------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "encoder": self.encoder.to_dict(),
            "dtype": self.dtype,
            "normalized": self.normalized,
            "max_tokens": self.max_tokens,
            "precision": self.precision,
            "shards": [_entry_dict(s) for s in self.shards],
        }

    def save(self) -> None:
        save_json(self.path / MANIFEST_NAME, self.to_dict())

    def summary(self) -> dict:
        """What ``embed --json`` reports: the set, its encoder and counts (plain strings and ints)."""
        return {"output": str(self.path), "encoder": self.encoder.to_dict(), "dtype": self.dtype,
                "shards": [{"source": s.source, "file": s.file, "lines": s.lines} for s in self.shards],
                "rows": self.total_rows, "blank_lines": sum(s.blank_lines for s in self.shards),
                "truncated_lines": sum(s.truncated_lines for s in self.shards)}


def _entry_dict(entry: ShardEntry) -> dict:
    data = asdict(entry)
    if data["text_file_sha256"] is None:
        del data["text_file_sha256"]  # only stdin shards keep a text file, and so a checksum of it
    return data


def _read_manifest(manifest: Path) -> dict:
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (ValueError, RecursionError) as e:  # bad JSON or UTF-8, a 5000-digit number, deep nesting
        raise BitextmineError(f"unreadable manifest: {e}", path=manifest) from None
    except OSError as e:
        raise BitextmineError(f"cannot read: {(e.strerror or str(e)).lower()}", path=manifest) from None
    if not isinstance(data, dict):
        raise BitextmineError(f"malformed manifest: a JSON object is expected, not a {type(data).__name__}",
                              path=manifest)
    return data


class ThresholdsSchema(Model):
    scores: dict[Str, Float]
    measured: Str


class PoolDigestSchema(Model):
    sentences: Annotated[Int, Field(ge=0)]
    sha256: Str


class AdaptedPoolsSchema(Model):
    threshold: Float
    score: Str
    k: Annotated[Int, Field(gt=0)]
    pools: Annotated[list[PoolDigestSchema], Field(min_length=2, max_length=2)]


class EncoderSchema(Model):
    name: Str
    version: Str
    dim: Annotated[Int, Field(gt=0)]
    weights_sha256: Str
    compatible_with: Str | None = None
    # what the encoder declares (absent in sets written before encoders declared it)
    languages: list[Str] | None = None
    mining_thresholds: ThresholdsSchema | None = None
    teacher_languages: list[Str] | None = None
    adapted_pools: AdaptedPoolsSchema | None = None


class ShardSchema(Model):
    source: Str
    source_size: Annotated[Int, Field(ge=0)]
    source_sha256: Str
    lines: Annotated[Int, Field(ge=0)]
    blank_lines: Annotated[Int, Field(ge=0)]
    truncated_lines: Annotated[Int, Field(ge=0)]
    file: Str
    file_sha256: Str
    text_file: Str | None = None
    text_file_sha256: Str | None = None

    @model_validator(mode="after")
    def _counts_within_lines(self):
        if self.blank_lines > self.lines or self.truncated_lines > self.lines:
            raise ValueError(f"blank_lines {self.blank_lines} and truncated_lines {self.truncated_lines} must be at "
                             f"most lines {self.lines}")
        return self


class ManifestSchema(Model):
    """What ``manifest.json`` must hold (the format and version are checked first)."""

    format: Str
    format_version: Int
    encoder: EncoderSchema
    dtype: Literal["float16", "float32"]
    normalized: Bool
    max_tokens: Int
    precision: Str = "fp32"
    shards: list[ShardSchema]


def shard_offsets(shards: list[ShardEntry]) -> np.ndarray:
    """Global id of each shard's first row, and the total last; ids run over the shards in order."""
    return np.concatenate([[0], np.cumsum([s.lines for s in shards])]).astype(np.int64)


def row_is_blank(rows: np.ndarray) -> np.ndarray:
    """True for the all-zero rows that stand for blank lines."""
    return ~np.any(rows != 0, axis=1)

