"""The distinct sentences of a side: what mining searches, once per sentence.

Identical sentences (after trimming) are searched once and mapped back, so that
duplicates cost no time and do not crowd a neighbourhood. ``score-pairs`` finds the
sentences of a bitext among a pool's the same way, so that it scores as ``mine`` does.
"""

from __future__ import annotations

import operator
import zlib
from dataclasses import dataclass

import numpy as np

from bitextmine.embed.corpus import EmbeddingCorpus
from bitextmine.errors import BitextmineError


@dataclass
class UniqueSentences:
    """The distinct non-blank sentences of one side, each with the row that stands for it.

    Held as row numbers, not strings (at 100M rows a side the strings and their dict would
    take ~50 GB): ``texts`` reads the sentences it is asked for back from the shards.
    """

    corpus: EmbeddingCorpus
    rows: np.ndarray  # global row of each distinct sentence's first occurrence, ascending
    inverse: np.ndarray  # for every global row, its distinct-sentence number (-1: blank)
    total_rows: int
    blank_rows: int
    # with ``lookup``: the distinct sentences' digests in digest order, and their numbers
    digests: np.ndarray | None = None
    digest_numbers: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.rows)

    def find(self, texts: list[str]) -> np.ndarray:
        """The distinct-sentence number of each (trimmed) text, -1 where the side lacks it."""
        if self.digests is None:
            raise ValueError("unique_sentences(corpus, lookup=True) keeps what find needs")
        wanted = _as_keys(line_digests(texts)[0])
        at = np.minimum(np.searchsorted(self.digests, wanted), max(len(self.digests) - 1, 0))
        found = (self.digests[at] == wanted) if len(self.digests) else np.zeros(len(texts), dtype=bool)
        return np.where(found, self.digest_numbers[at] if len(self.digests) else -1, -1)

    def texts(self, numbers: np.ndarray) -> list[str]:
        """The (trimmed) sentences with these distinct-sentence numbers, in that order."""
        wanted = self.rows[np.asarray(numbers, dtype=np.int64)]
        offsets = self.corpus.shard_offsets()
        shard_of = np.searchsorted(offsets, wanted, side="right") - 1
        out: list[str] = [""] * len(wanted)
        for s in np.unique(shard_of).tolist():
            lines = self.corpus.read_lines(s)
            for i in np.flatnonzero(shard_of == s).tolist():
                out[i] = lines[int(wanted[i] - offsets[s])].strip()
        return out


def line_digests(lines: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(a 96-bit digest of each trimmed line as two uint64, which lines are blank).

    The digest is Python's string hash (SipHash, 64 bits, keyed per process: digests are
    compared within one process only) beside CRC-32 of the UTF-8 text: two independent
    hashes, computed in C, ~10x cheaper than a cryptographic digest a line.
    """
    keys = [line.strip() for line in lines]
    digests = np.empty((len(keys), 2), dtype=np.uint64)
    digests[:, 0] = np.fromiter(map(hash, keys), dtype=np.int64, count=len(keys)).view(np.uint64)
    digests[:, 1] = np.fromiter((zlib.crc32(key.encode("utf-8", "surrogatepass")) for key in keys), dtype=np.uint64,
                                count=len(keys))
    return digests, np.fromiter(map(operator.not_, keys), dtype=bool, count=len(keys))


def check_k(k: int, sides: dict[str, int], paths: tuple = ()) -> None:
    """``-k`` against the distinct sentences of each side: a neighbourhood as large as the side
    averages over all of it, and the margin then says nothing about the pair. ``paths``: each
    side's file or set, in the order of ``sides``, for the error to name the one that fails."""
    for i, (side, count) in enumerate(sides.items()):
        path = paths[i] if i < len(paths) else None
        if k >= count:
            raise BitextmineError(f"-k {k} needs more than {k} distinct sentences on each side, but the {side} side "
                                  f"has {count}: give a smaller -k (the margin compares a pair with the k nearest "
                                  "other sentences)", path=path)


def _as_keys(digests: np.ndarray) -> np.ndarray:
    """(n, 2) uint64 digests as n records, which numpy sorts and searches as one key."""
    return np.ascontiguousarray(digests).view([("high", np.uint64), ("low", np.uint64)]).reshape(-1)


def unique_sentences(corpus: EmbeddingCorpus, lookup: bool = False) -> UniqueSentences:
    """Read the text of every shard; identical sentences (after trimming) share one entry.

    Sentences are told apart by a 96-bit digest of their text (``line_digests``: a
    collision among 1e9 sentences has odds of about 1e-11), sorted as two 64-bit keys.
    ``lookup``: keep the distinct digests (16 bytes a sentence), for ``find``.
    """
    total = corpus.total_rows
    digests = np.zeros((total, 2), dtype=np.uint64)
    blank = np.zeros(total, dtype=bool)
    offsets = corpus.shard_offsets()
    for s, entry in enumerate(corpus.shards):
        lines = corpus.read_lines(s)
        if len(lines) != entry.lines:
            raise BitextmineError(f"has {len(lines)} lines, the embedding set {entry.lines}", path=entry.source)
        base = int(offsets[s])
        digests[base : base + len(lines)], blank[base : base + len(lines)] = line_digests(lines)
    present = np.flatnonzero(~blank)
    # by digest; stable, so a digest's first row comes first
    by_digest = present[np.lexsort((digests[present, 1], digests[present, 0]))]
    ordered = digests[by_digest]
    starts = np.ones(len(by_digest), dtype=bool)
    starts[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    kept = _as_keys(ordered[starts]) if lookup else None
    del ordered, digests
    group = np.cumsum(starts) - 1  # each row's distinct sentence, numbered in digest order
    first_rows = by_digest[starts]
    by_first_row = np.argsort(first_rows, kind="stable")  # number them by first occurrence instead
    number = np.empty(len(first_rows), dtype=np.int64)
    number[by_first_row] = np.arange(len(first_rows))
    inverse = np.full(total, -1, dtype=np.int64)
    inverse[by_digest] = number[group]
    return UniqueSentences(corpus, first_rows[by_first_row].astype(np.int64), inverse, total, int(blank.sum()),
                           kept, number if lookup else None)
