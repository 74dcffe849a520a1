"""The batches of the target-side objective: languages tempered, guards and negatives drawn.

Each batch holds ``batch_size`` pairs of the new languages, a language drawn for each
with p ~ pairs^alpha (alpha 1: as in the data; 0.5 lifts small languages, as XLM-R
and LASER3 sample) and a pair drawn within it; then English sentences and sentences of
languages the teacher knows (the guards). The bank of extra negatives is the pairs of the
batches just before (a queue, as in MoCo): their English sides' teacher vectors were
needed then, so they cost nothing now. Batch ``b`` is drawn from (seed, b) alone, so a
resumed run draws the same batches as an uninterrupted one.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np


@dataclass
class TargetBatch:
    """Rows of one step: ``pairs`` of the new languages, ``english`` and ``known`` guard
    sentences, ``bank``: pairs of earlier batches whose English sides are extra negatives."""

    pairs: np.ndarray
    english: np.ndarray
    known: np.ndarray
    bank: np.ndarray

    def __len__(self) -> int:  # what the loop counts as pairs trained
        return len(self.pairs)

    def share(self, rank: int, world_size: int) -> TargetBatch:
        """This process's part of the batch (the bank is everyone's)."""
        part = lambda rows: np.array_split(rows, world_size)[rank]  # noqa: E731
        return TargetBatch(part(self.pairs), part(self.english), part(self.known), self.bank)


class TargetBatches:
    """Seeded batches over pairs grouped by language (``language_sizes``: consecutive rows)."""

    def __init__(self, language_sizes: list[int], alpha: float, batch_size: int, english_texts: int,
                 known_texts: int, english_share: float, known_share: float, bank: int, seed: int):
        sizes = np.asarray(language_sizes, dtype=np.float64)
        self.starts = np.concatenate([[0], np.cumsum(language_sizes)[:-1]]).astype(np.int64)
        self.sizes = np.asarray(language_sizes, dtype=np.int64)
        weights = sizes**alpha
        self.p = weights / weights.sum()
        self.batch_size, self.seed, self.bank = batch_size, seed, bank
        self.english_texts, self.known_texts = english_texts, known_texts
        self.n_english = round(english_share * batch_size) if english_texts else 0
        self.n_known = round(known_share * batch_size) if known_texts else 0

    def _draw_pairs(self, rng: np.random.Generator) -> np.ndarray:
        languages = rng.choice(len(self.p), size=self.batch_size, p=self.p)
        return self.starts[languages] + (rng.random(self.batch_size) * self.sizes[languages]).astype(np.int64)

    def batch(self, number: int) -> TargetBatch:
        rng = np.random.default_rng([self.seed, number])
        pairs = self._draw_pairs(rng)
        english = rng.integers(0, max(1, self.english_texts), size=self.n_english)
        known = rng.integers(0, max(1, self.known_texts), size=self.n_known)
        return TargetBatch(pairs, english, known, self._bank(number))

    def _bank(self, number: int) -> np.ndarray:
        """The last ``bank`` pairs of the batches before ``number`` (fewer at the start)."""
        earlier = range(max(0, number - math.ceil(self.bank / self.batch_size)), number) if self.bank else ()
        drawn = [self._draw_pairs(np.random.default_rng([self.seed, b])) for b in earlier]
        return np.concatenate(drawn)[-self.bank :] if drawn else np.zeros(0, np.int64)

    def iterate(self, start: int, rank: int = 0, world_size: int = 1) -> Iterator[TargetBatch]:
        number = start
        while True:
            batch = self.batch(number)
            yield batch if world_size == 1 else batch.share(rank, world_size)
            number += 1


__all__ = ["TargetBatch", "TargetBatches"]
