"""The teacher's vectors of the sentences a run distils toward, each computed once.

The student learns the teacher's vector of each English sentence (and of the guard
sentences). The teacher embeds a text the first time a batch needs it, never again: a
run pays for the texts it draws, so a short run on a large corpus (or a slow machine)
does not spend its time budget embedding sentences it will never train on, and a long
one pays once per text, as a cache computed up front would.

Every vector computed is appended at once to ``DIR/vectors.bin`` (``OUT/state/teacher``),
so a resumed run (or one killed at any point) finds them all again and the teacher never
embeds a text twice:

    DIR/cache.json     the key: teacher identity, max_tokens, SHA-256 of the texts
    DIR/vectors.bin    records: n (int64), n row numbers (int64), n x dim float16 vectors

A record cut short by a kill is ignored (its texts are embedded again). A cache of other
texts or another teacher is replaced.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from pathlib import Path

import numpy as np
import torch

from bitextmine import defaults
from bitextmine.encoders.base import Encoder
from bitextmine.io.atomic import write_json

log = logging.getLogger(__name__)

META = "cache.json"
RECORDS = "vectors.bin"


def cache_key(teacher: Encoder, texts: list[str], max_tokens: int) -> dict:
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8") + b"\n")
    return {"teacher": teacher.identity.to_dict(), "max_tokens": max_tokens, "texts": len(texts),
            "texts_sha256": digest.hexdigest()}


class TeacherCache:
    """The teacher's vectors of ``texts`` by row number, computed on first use.

    ``directory``: where they are kept across runs (None: in memory only).
    """

    def __init__(self, teacher: Encoder, texts: list[str], directory: Path | None = None,
                 max_tokens: int = defaults.MAX_TOKENS):
        self.teacher, self.texts, self.directory, self.max_tokens = teacher, texts, directory, max_tokens
        self.vectors = torch.zeros(len(texts), teacher.dim, dtype=torch.float16)  # (n, D)
        self.done = torch.zeros(len(texts), dtype=torch.bool)
        self.computed = 0  # texts embedded by this process
        if directory is not None:
            self._open(cache_key(teacher, texts, max_tokens))

    def __len__(self) -> int:
        return len(self.texts)

    def get(self, rows: torch.Tensor) -> torch.Tensor:
        """(len(rows), D) float32 teacher vectors of the texts at ``rows``."""
        rows = torch.as_tensor(rows, dtype=torch.long)
        missing = torch.unique(rows[~self.done[rows]])  # sorted: the same texts in the same order on a rerun
        if len(missing):
            # the teacher's own precision, whatever autocast the training step runs under
            with torch.autocast(torch.device(self.teacher.device).type, enabled=False):
                vectors = self.teacher.encode([self.texts[i] for i in missing.tolist()], max_tokens=self.max_tokens)
            self._store(missing, torch.from_numpy(np.asarray(vectors, dtype=np.float16)))
        return self.vectors[rows].float()

    def _store(self, rows: torch.Tensor, vectors: torch.Tensor) -> None:
        self.vectors[rows], self.done[rows] = vectors, True
        self.computed += len(rows)
        if self.directory is not None:
            with open(self.directory / RECORDS, "ab") as f:
                f.write(np.int64(len(rows)).tobytes() + rows.numpy().astype(np.int64).tobytes()
                        + vectors.numpy().tobytes())

    def _open(self, key: dict) -> None:
        """Read the vectors kept in ``directory`` for ``key``; else start it afresh."""
        meta = self.directory / META
        if meta.is_file():
            try:
                same = json.loads(meta.read_text(encoding="utf-8")) == key
            except json.JSONDecodeError:
                same = False
            if same:
                self._read_records()
                return
            log.info("teacher cache %s holds other texts or another teacher: replaced", self.directory)
        if self.directory.exists():
            shutil.rmtree(self.directory)
        self.directory.mkdir(parents=True)
        write_json(meta, key)

    def _read_records(self) -> None:
        path = self.directory / RECORDS
        data = path.read_bytes() if path.is_file() else b""
        position, dim, whole = 0, self.teacher.dim, 0
        while position + 8 <= len(data):
            n = int(np.frombuffer(data, np.int64, 1, position)[0])
            end = position + 8 + 8 * n + 2 * n * dim
            if n <= 0 or end > len(data):
                break  # cut short by a kill: its texts are embedded again
            rows = torch.from_numpy(np.frombuffer(data, np.int64, n, position + 8).copy())
            vectors = np.frombuffer(data, np.float16, n * dim, position + 8 + 8 * n).reshape(n, dim)
            self.vectors[rows], self.done[rows] = torch.from_numpy(vectors.copy()), True
            position, whole = end, end
        if whole < len(data):  # drop the broken tail, so that new records follow whole ones
            with open(path, "r+b") as f:
                f.truncate(whole)
        log.info("teacher cache: %d of %d vectors already computed", int(self.done.sum()), len(self))


__all__ = ["TeacherCache", "cache_key"]
