"""Parallel training data: TSV (``src<TAB>tgt``) or two aligned files, .gz welcome."""

from __future__ import annotations

import logging
import random
import re
from dataclasses import dataclass

from bitextmine.errors import BitextmineError
from bitextmine.io.pairs import read_pairs
from bitextmine.io.paths import data_stem
from bitextmine.io.text import read_shard
from bitextmine.languages import find_language_key

log = logging.getLogger(__name__)

JOINED_MIN, JOINED_MAX = 2, 4  # training pairs in a joined pair (``ParallelData.with_joined``)


@dataclass
class ParallelData:
    src: list[str]
    tgt: list[str]
    # NLI triples (mSimCSE): a contradiction of each source, used as a hard negative
    negative: list[str] | None = None
    # the language of each pair: the training file it came from (see ``language_of_file``)
    language: list[str] | None = None

    def __len__(self) -> int:
        return len(self.src)

    def split(self, dev_size: int, seed: int) -> tuple[ParallelData, ParallelData]:
        """A seeded held-out slice (dev) and the rest (train)."""
        order = list(range(len(self)))
        random.Random(seed).shuffle(order)
        dev, train = sorted(order[:dev_size]), sorted(order[dev_size:])
        return self.subset(train), self.subset(dev)

    def split_by_language(self, per_language: int, seed: int) -> tuple[ParallelData, ParallelData]:
        """(train, dev): up to ``per_language`` held-out pairs of each language, at most a
        tenth of it, seeded; no two dev pairs share a text, so that P@1 over the dev slice
        has one right answer per sentence."""
        by_language: dict[str, list[int]] = {}
        for i, lang in enumerate(self.language or [""] * len(self)):
            by_language.setdefault(lang, []).append(i)
        taken: set[str] = set()
        dev: list[int] = []
        for k, lang in enumerate(sorted(by_language)):
            rows = by_language[lang]
            random.Random(seed * 1_000_003 + k).shuffle(rows)
            wanted, chosen = min(per_language, len(rows) // 10), 0
            for i in rows:
                if chosen == wanted:
                    break
                if self.src[i] not in taken and self.tgt[i] not in taken:
                    taken.update((self.src[i], self.tgt[i]))
                    dev.append(i)
                    chosen += 1
        held = set(dev)
        return self.subset([i for i in range(len(self)) if i not in held]), self.subset(sorted(dev))

    def with_joined(self, times: float, seed: int) -> ParallelData:
        """These pairs and ``times`` as many more, each 2-4 of them joined (both sides, in the
        same order), drawn from one language (training file) at a time, seeded.

        Tatoeba-like data is a few words a sentence, news and web text twenty and more: an
        encoder that saw only short pairs loses its way in long ones. Joined pairs show it
        long inputs made of known translations (LASER and LaBSE trained on documents' worth
        of text; this is the cheap way for short-pair data).
        """
        if times <= 0 or len(self) < 2 or self.negative is not None:
            return self
        rng = random.Random(seed * 7_919 + 17)
        labels = self.language or [""] * len(self)
        by_language: dict[str, list[int]] = {}
        for i, lang in enumerate(labels):
            by_language.setdefault(lang, []).append(i)
        src, tgt, language = list(self.src), list(self.tgt), list(labels)
        for lang, rows in by_language.items():
            for _ in range(round(times * len(rows)) if len(rows) >= JOINED_MIN else 0):
                picked = rng.sample(rows, rng.randint(JOINED_MIN, min(JOINED_MAX, len(rows))))
                src.append(" ".join(self.src[i] for i in picked))
                tgt.append(" ".join(self.tgt[i] for i in picked))
                language.append(lang)
        return ParallelData(src, tgt, None, language if self.language is not None else None)

    def subset(self, rows: list[int]) -> ParallelData:
        negative = None if self.negative is None else [self.negative[i] for i in rows]
        language = None if self.language is None else [self.language[i] for i in rows]
        return ParallelData([self.src[i] for i in rows], [self.tgt[i] for i in rows], negative, language)


def with_dev_slice(data: ParallelData, dev: ParallelData | None, dev_size: int, seed: int,
                   per_language: int = 0, files: tuple = ()) -> tuple[ParallelData, ParallelData]:
    """(train, dev): ``dev`` when given, else a seeded slice of at most a tenth of ``data``
    (``per_language`` > 0: that many pairs of each language); ``files``: where ``data`` was read."""
    if len(data) < 2:
        held = f"{len(data)} pair{'' if len(data) == 1 else 's'}"
        across = f" (in {len(files)} files)" if len(files) > 1 else ""
        raise BitextmineError(f"{held}: training needs at least two pairs{across}",
                              path=files[0] if len(files) == 1 else None)
    if dev is None and per_language > 0:
        train, dev = data.split_by_language(per_language, seed)
        if len(dev) < 2:
            raise BitextmineError("too few pairs for a dev slice per language: give --dev")
        return train, dev
    if dev is None:
        return data.split(min(dev_size, len(data) // 10), seed)
    return data, dev


def language_of_file(path: str) -> str:
    """The language a training file holds, as its pairs record it: the file's name without
    the directory and the compression and format suffixes (``train.eng-ces.tsv.gz`` ->
    ``train.eng-ces``); for two aligned files, both names. Codes in it name the language
    (``language_codes``)."""

    return ",".join(data_stem(name) for name in path.split(","))


def language_codes(language: str) -> list[str]:
    """The ISO 639 language keys named in a file's language (``train.eng-deu`` -> ``en``,
    ``de``): its two- and three-letter words that are language codes, English included."""

    keys: list[str] = []
    for word in re.split(r"[^A-Za-z]+", language):
        key = find_language_key(word) if 2 <= len(word) <= 3 else None
        if key is not None and key not in keys:
            keys.append(key)
    return keys


def read_tsv_pairs(path: str, triples: bool | None = None) -> ParallelData:
    """``src<TAB>tgt`` per line (or mined ``score<TAB>src<TAB>tgt``, further columns kept);
    ``anchor<TAB>entailment<TAB>contradiction`` for NLI triples. ``triples``: which the file
    holds, where the task says so; None: three unscored columns are triples."""

    pairs = read_pairs(path, allow_empty_side=False)
    if not pairs:
        raise BitextmineError("no pairs in the file", path=path)
    three = pairs[0].score is None and len(pairs[0].extra) == 1
    if three and triples is False:
        log.warning("%s: a third column, left aside: the pairs are the first two (NLI triples go as "
                    "--task nli=FILE)", path)
    nli = three and triples is not False
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


def read_parallel(paths: list[str], triples: bool | None = None) -> ParallelData:
    """Each argument is a TSV file, or ``SRC,TGT`` for two aligned files; all concatenated
    (``triples``: as ``read_tsv_pairs``)."""
    if not paths:
        raise BitextmineError("no training data given")
    parts = [read_aligned_pairs(*spec.split(",", 1)) if "," in spec else read_tsv_pairs(spec, triples)
             for spec in paths]
    if len({p.negative is None for p in parts}) > 1:
        raise BitextmineError("mix of NLI triples and translation pairs: give the triples as --task nli=FILE")
    for spec, part in zip(paths, parts, strict=True):
        part.language = [language_of_file(spec)] * len(part)
    return concatenate(parts)


def concatenate(parts: list[ParallelData]) -> ParallelData:
    """One ParallelData of several of the same kind (all pairs, or all triples)."""
    negative = None if parts[0].negative is None else [x for p in parts for x in p.negative]
    language = None if any(p.language is None for p in parts) else [x for p in parts for x in p.language]
    return ParallelData([x for p in parts for x in p.src], [x for p in parts for x in p.tgt], negative, language)
