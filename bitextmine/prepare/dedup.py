"""Exact duplicates across a whole run, in bounded memory: 64-bit hashes in SQLite on disk.

Each sentence written is recorded as the first 8 bytes of its BLAKE2b digest, with the
number of the shard it went to, in an SQLite table (a B-tree on disk; the process holds
only SQLite's page cache, ``defaults.PREPARE_DEDUP_CACHE_MB``). A sentence whose hash is
already there is a duplicate. Two different sentences share a hash with probability about
n / 2^64 each (one sentence wrongly dropped in ~20 billion at a billion sentences).

Resuming: a shard's hashes are committed with the shard, and a run that resumes first
forgets the hashes of every shard it will write again, so a sentence of a shard that was
never finished does not count as seen.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from bitextmine import defaults
from bitextmine.errors import BitextmineError

_QUERY_CHUNK = 500  # hashes looked up in one statement (SQLite's parameter limit is 999 on old builds)


def sentence_hash(sentence: str) -> int:
    """A signed 64-bit integer (SQLite's INTEGER) from the sentence's UTF-8 bytes."""
    return int.from_bytes(hashlib.blake2b(sentence.encode("utf-8"), digest_size=8).digest(), "little", signed=True)


class SeenSentences:
    """The hashes of the sentences a run has written (see the module docs)."""

    def __init__(self, path: str | Path, cache_mb: int = defaults.PREPARE_DEDUP_CACHE_MB):
        self.path = Path(path)
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None)
            # one process uses it: an exclusive lock and a rollback journal, no shared memory (which a
            # write-ahead log needs and network file systems, where Slurm jobs write, lack)
            self._db.execute("PRAGMA locking_mode=EXCLUSIVE")
            self._db.execute("PRAGMA journal_mode=DELETE")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(f"PRAGMA cache_size={-1024 * int(cache_mb)}")
            self._db.execute("CREATE TABLE IF NOT EXISTS seen (hash INTEGER PRIMARY KEY, shard INTEGER NOT NULL)")
        except sqlite3.DatabaseError as e:
            raise BitextmineError(f"cannot use the deduplication table (damaged? remove it to start again): {e}",
                                  path=self.path) from None
        self._open = False

    def forget_shards_from(self, shard: int) -> None:
        """Forget what shards numbered ``shard`` and later recorded (they are written again)."""
        self._db.execute("DELETE FROM seen WHERE shard >= ?", (shard,))

    def claim(self, hashes: Sequence[int], shard: int) -> list[bool]:
        """Whether each hash is new (never seen, and not earlier in ``hashes``); the new ones are
        recorded for ``shard``, committed by ``commit``."""
        if not self._open:
            self._db.execute("BEGIN")
            self._open = True
        distinct = list(dict.fromkeys(hashes))
        known: set[int] = set()
        for start in range(0, len(distinct), _QUERY_CHUNK):
            chunk = distinct[start:start + _QUERY_CHUNK]
            rows = self._db.execute(f"SELECT hash FROM seen WHERE hash IN ({','.join('?' * len(chunk))})", chunk)
            known.update(row[0] for row in rows)
        new, taken = [], set()
        for value in hashes:
            fresh = value not in known and value not in taken
            new.append(fresh)
            if fresh:
                taken.add(value)
        self._db.executemany("INSERT INTO seen (hash, shard) VALUES (?, ?)", ((h, shard) for h in taken))
        return new

    def commit(self) -> None:
        if self._open:
            self._db.execute("COMMIT")
            self._open = False

    def count(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM seen").fetchone()[0]

    def close(self) -> None:
        if self._open:
            self._db.execute("ROLLBACK")
            self._open = False
        self._db.close()
