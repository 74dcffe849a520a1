"""Sentence-pair files: the one reader of every TSV of pairs the toolkit takes.

Two layouts, told apart by the first non-blank line:

- scored, as ``bitextmine mine`` and ``score-pairs`` write it: ``score<TAB>src<TAB>tgt``,
  then any further columns (``src_id``, ``tgt_id``);
- plain: ``src<TAB>tgt``, then any further columns (an NLI triple's contradiction).

A file keeps one layout throughout, so that a sentence that happens to be a number is
never taken for a score. Blank lines are skipped; sides are trimmed; a tab inside a
sentence cannot be told from a column break, so every line is split on all its tabs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from bitextmine.errors import BitextmineError
from bitextmine.io.text import read_lines


@dataclass(slots=True)
class Pair:
    score: float | None  # None: a plain file
    src: str
    tgt: str
    extra: list[str] | tuple[str, ...] = ()  # further columns (ids, ...), passed through
    line: int = 0  # where it was read (1-based), for messages

    def fields(self) -> list[str]:
        head = [] if self.score is None else [f"{self.score:.6f}"]
        return [*head, self.src, self.tgt, *self.extra]


_NOT_FINITE = ("nan", "inf", "-inf", "+inf")  # as Python and numpy write them


def _score(column: str) -> float | None:
    try:
        value = float(column)
    except ValueError:
        return None
    if not math.isfinite(value) and column.strip().lower() not in _NOT_FINITE:
        return None  # "Infinity", "NaN" as a word: a sentence, not a score a program wrote
    return value


def parse_pairs(lines: Iterable[str], path: str = "-", allow_empty_side: bool = True) -> list[Pair]:
    """Pairs from the lines of a pairs file (see the module docs for the layouts).

    ``allow_empty_side=False`` refuses a pair with a blank side (for embedding or
    training, where it would be meaningless; the filter counts and drops such pairs).
    """
    pairs: list[Pair] = []
    scored = None
    for number, line in enumerate(lines, 1):
        line = line.rstrip("\n").rstrip("\r")
        if not line.strip():
            continue
        cols = line.split("\t")
        if scored is None:
            scored = len(cols) >= 3 and _score(cols[0]) is not None
        if scored:
            score = _score(cols[0]) if len(cols) >= 3 else None
            if score is None:
                found = (f"the score {cols[0][:40]!r} is not a number" if len(cols) >= 3
                         else f"{len(cols)} column{'s' if len(cols) > 1 else ''}")
                raise BitextmineError(f"expected score<TAB>src<TAB>tgt, as the file's first line ({found})",
                                      path=path, line=number)
            cols = cols[1:]
        elif len(cols) < 2:
            raise BitextmineError("expected src<TAB>tgt", path=path, line=number)
        src, tgt = cols[0].strip(), cols[1].strip()
        if not allow_empty_side and not (src and tgt):
            raise BitextmineError("empty side in a pair", path=path, line=number)
        pairs.append(Pair(score if scored else None, src, tgt, tuple(c.strip() for c in cols[2:]), number))
    return pairs


def read_pairs(path: str, allow_empty_side: bool = True) -> list[Pair]:
    """The pairs of a file (compressed by extension) or of standard input (``-``)."""

    return parse_pairs(read_lines(path), path, allow_empty_side)
