"""Parallel training data: TSV (``src<TAB>tgt``) or two aligned files, .gz welcome."""

from __future__ import annotations

import random
from dataclasses import dataclass

from bitextmine.errors import BitextmineError
from bitextmine.io.text import read_shard


@dataclass
class ParallelData:
    src: list[str]
    tgt: list[str]

    def __len__(self) -> int:
        return len(self.src)

    def split(self, dev_size: int, seed: int) -> tuple[ParallelData, ParallelData]:
        """A seeded held-out slice (dev) and the rest (train)."""
        order = list(range(len(self)))
        random.Random(seed).shuffle(order)
        dev, train = sorted(order[:dev_size]), sorted(order[dev_size:])
        return self.subset(train), self.subset(dev)

    def subset(self, rows: list[int]) -> ParallelData:
        return ParallelData([self.src[i] for i in rows], [self.tgt[i] for i in rows])

    def head(self, n: int) -> ParallelData:
        return ParallelData(self.src[:n], self.tgt[:n])


def read_tsv_pairs(path: str) -> ParallelData:
    src, tgt = [], []
    for number, line in enumerate(read_shard(path).lines, 1):
        fields = line.split("\t")
        if len(fields) < 2:
            raise BitextmineError("expected src<TAB>tgt", path=path, line=number)
        a, b = fields[0].strip(), fields[1].strip()
        if not a or not b:
            raise BitextmineError("empty side in a pair", path=path, line=number)
        src.append(a)
        tgt.append(b)
    return ParallelData(src, tgt)


def read_aligned_pairs(src_path: str, tgt_path: str) -> ParallelData:
    src, tgt = read_shard(src_path).lines, read_shard(tgt_path).lines
    if len(src) != len(tgt):
        raise BitextmineError(f"{len(src)} lines, but {tgt_path} has {len(tgt)}: aligned files must match",
                              path=src_path)
    for number, (a, b) in enumerate(zip(src, tgt, strict=True), 1):
        if not a.strip() or not b.strip():
            raise BitextmineError("empty side in a pair", path=src_path if not a.strip() else tgt_path, line=number)
    return ParallelData([s.strip() for s in src], [t.strip() for t in tgt])


def read_parallel(paths: list[str]) -> ParallelData:
    """Each argument is a TSV file, or ``SRC,TGT`` for two aligned files; all concatenated."""
    if not paths:
        raise BitextmineError("no training data given")
    src, tgt = [], []
    for spec in paths:
        if "," in spec:
            a, b = spec.split(",", 1)
            part = read_aligned_pairs(a, b)
        else:
            part = read_tsv_pairs(spec)
        src += part.src
        tgt += part.tgt
    return ParallelData(src, tgt)
