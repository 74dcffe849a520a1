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
    # NLI triples (mSimCSE): a contradiction of each source, used as a hard negative
    negative: list[str] | None = None

    def __len__(self) -> int:
        return len(self.src)

    def split(self, dev_size: int, seed: int) -> tuple[ParallelData, ParallelData]:
        """A seeded held-out slice (dev) and the rest (train)."""
        order = list(range(len(self)))
        random.Random(seed).shuffle(order)
        dev, train = sorted(order[:dev_size]), sorted(order[dev_size:])
        return self.subset(train), self.subset(dev)

    def subset(self, rows: list[int]) -> ParallelData:
        negative = None if self.negative is None else [self.negative[i] for i in rows]
        return ParallelData([self.src[i] for i in rows], [self.tgt[i] for i in rows], negative)


def with_dev_slice(data: ParallelData, dev: ParallelData | None, dev_size: int,
                   seed: int) -> tuple[ParallelData, ParallelData]:
    """(train, dev): ``dev`` when given, else a seeded slice of at most a tenth of ``data``."""
    if len(data) < 2:
        raise BitextmineError("training needs at least two pairs")
    if dev is None:
        return data.split(min(dev_size, len(data) // 10), seed)
    return data, dev


def read_tsv_pairs(path: str) -> ParallelData:
    """``src<TAB>tgt`` per line (or mined ``score<TAB>src<TAB>tgt``); ``anchor<TAB>entailment<TAB>contradiction``
    for NLI triples."""
    from bitextmine.io.pairs import read_pairs

    pairs = read_pairs(path, allow_empty_side=False)
    if not pairs:
        raise BitextmineError("no pairs in the file", path=path)
    nli = bool(pairs) and pairs[0].score is None and len(pairs[0].extra) == 1
    for pair in pairs if nli else ():
        if len(pair.extra) != 1 or not pair.extra[0]:
            raise BitextmineError("expected anchor<TAB>entailment<TAB>contradiction", path=path, line=pair.line)
    return ParallelData([p.src for p in pairs], [p.tgt for p in pairs], [p.extra[0] for p in pairs] if nli else None)


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
    parts = [read_aligned_pairs(*spec.split(",", 1)) if "," in spec else read_tsv_pairs(spec) for spec in paths]
    if len({p.negative is None for p in parts}) > 1:
        raise BitextmineError("mix of NLI triples and translation pairs: give the triples as --task nli=FILE")
    return concatenate(parts)


def concatenate(parts: list[ParallelData]) -> ParallelData:
    """One ParallelData of several of the same kind (all pairs, or all triples)."""
    negative = None if parts[0].negative is None else [x for p in parts for x in p.negative]
    return ParallelData([x for p in parts for x in p.src], [x for p in parts for x in p.tgt], negative)
