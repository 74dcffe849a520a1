"""Reference sentences and documents made of them, for the `prepare` benchmarks.

Every reference line is one sentence. Documents are runs of 2-10 consecutive lines (of a
seeded shuffle), joined by a space (Chinese also without one, as it is written); a line
is *recovered* when it comes out as a whole number of output sentences of its document:
its start and its end are both sentence boundaries of the output.

Sources, per language (``../shared/data``, or where BITEXTMINE_SHARED_DATA points):

- news: the WMT newstest sentences of ``news_pools`` (fra, ces, hin, and English);
  measurement only, never training;
- tatoeba: the Tatoeba test files (short conversational sentences, 1,000 a language);
- more Tatoeba-domain sentences from ``train``: manythings German, tatoeba_known Mandarin,
  tatoeba_more Hindi, the Tatoeba Challenge Czech.

Russian, Chinese and German have no news here: their Tatoeba lines (and the larger
Tatoeba-domain sets) stand in.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path

DEFAULT_DATA = Path(os.environ.get("BITEXTMINE_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))
LANGS = ("deu", "rus", "zho", "hin", "ces", "fra", "eng")
SEPARATORS = {"zho": ("", " ")}  # Chinese is written without spaces between sentences; both are measured


def _lines(path: Path, column: int | None = None) -> list[str]:
    out = []
    if not path.is_file():
        return out
    for line in path.read_text(encoding="utf-8").split("\n"):
        if column is not None:
            parts = line.split("\t")
            line = parts[column] if len(parts) > column else ""
        line = " ".join(line.split())
        if line:
            out.append(line)
    return out


def _unique(lines: list[str]) -> list[str]:
    return list(dict.fromkeys(lines))


def _news(data: Path, pools: list[str], side: str) -> list[str]:
    return _unique([s for pool in pools for s in _lines(data / "news_pools" / pool / f"{side}.txt")])


def sources(lang: str, data: Path = DEFAULT_DATA) -> dict[str, list[str]]:
    """name -> reference lines of ``lang`` (empty sources left out)."""
    tatoeba = {"zho": "cmn"}.get(lang, lang)
    train = data / "train"
    found = {
        "deu": {"manythings": _lines(train / "tatoeba_manythings_deu-eng" / "train.eng-deu.tsv", 1)},
        "zho": {"tatoeba_known": _lines(train / "tatoeba_known" / "train.eng-cmn.tsv", 1)},
        "hin": {"news": _news(data, ["hin-en.15", "hin-en.3"], "hin"),
                "tatoeba_more": _lines(train / "tatoeba_more" / "train.eng-hin.tsv", 1)},
        "ces": {"news": _news(data, ["ces-en.15", "ces-en.3"], "ces"),
                "challenge": _lines(train / "tatoeba_challenge_test_ces-eng" / "train.eng-ces.tsv", 1)},
        "fra": {"news": _news(data, ["fra-en.15", "fra-en.3"], "fra")},
        "eng": {"news": _news(data, ["ces-en.15", "fra-en.15", "hin-en.15"], "en")},
    }.get(lang, {})
    if lang != "eng":
        found["tatoeba"] = _lines(data / "tatoeba" / f"tatoeba.{tatoeba}-eng.{tatoeba}")
    return {name: lines for name, lines in found.items() if lines}


def sample(lines: list[str], n: int, seed: int = 1) -> list[str]:
    lines = list(lines)
    random.Random(seed).shuffle(lines)
    return lines[:n]


def documents(lines: list[str], seed: int = 2, shortest: int = 2, longest: int = 10) -> list[list[str]]:
    """Runs of ``shortest``-``longest`` consecutive lines."""
    rng = random.Random(seed)
    docs, i = [], 0
    while i < len(lines):
        k = rng.randint(shortest, longest)
        docs.append(lines[i:i + k])
        i += k
    return docs


@dataclass
class Recovery:
    lines: int = 0
    recovered: int = 0
    pieces: int = 0  # output sentences
    extra_cuts: int = 0  # output boundaries inside a reference line

    def add(self, other: Recovery) -> None:
        self.lines += other.lines
        self.recovered += other.recovered
        self.pieces += other.pieces
        self.extra_cuts += other.extra_cuts

    @property
    def share(self) -> float:
        return self.recovered / self.lines if self.lines else float("nan")


def recovery(doc: list[str], sentences: list[str], separator: str) -> Recovery:
    """Which lines of ``doc`` (joined by ``separator``) come out as whole output ``sentences``.

    The output is located in the text in order (each sentence as written, stripped), so a
    segmenter that changes the text fails loudly."""
    text = separator.join(doc)
    starts, ends, position = set(), set(), 0
    for sentence in sentences:
        sentence = sentence.strip()
        if not sentence:
            continue
        found = text.find(sentence, position)
        if found < 0:
            raise ValueError(f"output not in the document: {sentence[:60]!r}")
        starts.add(found)
        ends.add(found + len(sentence))
        position = found + len(sentence)
    result = Recovery(lines=len(doc), pieces=len(ends))
    position = 0
    for line in doc:
        start, end = position, position + len(line)
        result.recovered += start in starts and end in ends
        result.extra_cuts += sum(start < e < end for e in ends)
        position = end + len(separator)
    return result
