"""The embedding set: a directory of fp16 ``.npy`` shards described by ``manifest.json``.

Row *i* of ``<shard>.npy`` is line *i* of its source shard. Rows are L2-normalised; a
blank source line has an all-zero row, so that it can never be a neighbour with a
positive score and later stages can drop it (``row_is_blank``).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from bitextmine.encoders.base import EncoderIdentity
from bitextmine.errors import BitextmineError
from bitextmine.io.atomic import write_json
from bitextmine.io.text import file_sha256

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


@dataclass
class EmbeddingSet:
    path: Path
    encoder: EncoderIdentity
    dtype: str
    max_tokens: int
    precision: str  # the matmul precision used; for provenance, sets stay comparable across it
    shards: list[ShardEntry] = field(default_factory=list)
    normalized: bool = True

    # --- reading ------------------------------------------------------------------------
    @classmethod
    def exists(cls, path: str | Path) -> bool:
        return (Path(path) / MANIFEST_NAME).is_file()

    @classmethod
    def load(cls, path: str | Path, verify: bool = False) -> EmbeddingSet:
        """Open a set; ``verify`` also checks every shard's checksum (reads all files)."""
        path = Path(path)
        manifest = path / MANIFEST_NAME
        if not manifest.is_file():
            what = "no such directory" if not path.exists() else f"not an embedding set (no {MANIFEST_NAME})"
            raise BitextmineError(what, path=path)
        try:
            data = json.loads(manifest.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise BitextmineError(f"unreadable manifest: {e}", path=manifest) from None
        if data.get("format") != FORMAT_NAME:
            raise BitextmineError(f"not a {FORMAT_NAME} manifest", path=manifest)
        if data.get("format_version") != FORMAT_VERSION:
            raise BitextmineError(
                f"manifest format version {data.get('format_version')} is not supported "
                f"(this bitextmine reads version {FORMAT_VERSION})", path=manifest)
        try:
            emb_set = cls(
                path=path,
                encoder=EncoderIdentity.from_dict(data["encoder"]),
                dtype=data["dtype"],
                max_tokens=int(data["max_tokens"]),
                precision=data.get("precision", "fp32"),
                shards=[ShardEntry(**s) for s in data["shards"]],  # unknown keys fail here
                normalized=bool(data["normalized"]),
            )
        except (KeyError, TypeError) as e:
            raise BitextmineError(f"malformed manifest: {e}", path=manifest) from None
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
        """Global id of each shard's first row; ids run over the shards in manifest order."""
        return np.concatenate([[0], np.cumsum([s.lines for s in self.shards])]).astype(np.int64)

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
        from bitextmine.io.text import read_shard

        entry = self.shards[index]
        if entry.text_file is not None:
            return read_shard(str(self.path / entry.text_file), errors="replace").lines
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
            "shards": [asdict(s) for s in self.shards],
        }

    def save(self) -> None:
        write_json(self.path / MANIFEST_NAME, self.to_dict())


def row_is_blank(rows: np.ndarray) -> np.ndarray:
    """True for the all-zero rows that stand for blank lines."""
    return ~np.any(rows != 0, axis=1)

