"""Clean news-style pairs for judging the filter, generated at run time from ../shared/data.

    python -m tests.support.filter_sets --lang de --show 20

Every pair is a translation, and no side text repeats. They are made to look like news rather
than phrase-book sentences:

- numbers written the way each language writes them, in clauses added to a base sentence:
  times (de "15.30 Uhr", fr "15 h 30", zh "15点30分", en "3:30 p.m."), dates ("3. Oktober
  2019", "2019年10月3日"), money ("1.500 Euro", "1 500 €" with a no-break or thin space,
  "$100,000"), scaled amounts ("7,2 Millionen", "720万", "7.200 millones"), percentages,
  units (with conversions that give English one more number), ordinals, decades ("90er",
  "'90s"), seasons, phone numbers, decimals, ages, match scores and numbers spelled out;
- long sentences: two to four consecutive base sentences joined;
- short headlines and name-heavy lines ("Merkel besucht Paris", "普京与习近平在北京会谈").

Base sentences: German and French from the manythings Tatoeba exports (the longer ones),
Multi30k captions and the Tatoeba test file; Russian, Chinese and Spanish from the Tatoeba test
file only (used here to judge the filter, never to train anything). Nothing is copied into
the repository: the sets exist only in memory.
"""

from __future__ import annotations

import argparse
import gzip
import os
import random
from dataclasses import dataclass
from pathlib import Path

from tests.support import filter_phrases as ph

LANGS = ("de", "fr", "ru", "zh", "es")
TATOEBA = {"de": "deu", "fr": "fra", "ru": "rus", "zh": "cmn", "es": "spa"}
DEFAULT_DATA = Path(os.environ.get("BITEXTMINE_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))
KINDS = {"plain": 0.15, "numbers": 0.33, "numbers2": 0.10, "long": 0.20, "headline": 0.11, "names": 0.11}


@dataclass(frozen=True)
class NewsPair:
    kind: str
    src: str  # the language of the set
    tgt: str  # English


def available(data: Path = DEFAULT_DATA) -> bool:
    return all((data / "tatoeba" / f"tatoeba.{code}-eng.{code}").is_file() for code in TATOEBA.values())


def _lines(path: Path) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


def base_pools(lang: str, data: Path) -> list[list[tuple[str, str]]]:
    """Runs of consecutive (lang, English) base sentences; consecutive ones are joined into long ones."""
    code = TATOEBA[lang]
    tatoeba = data / "tatoeba"
    pools = [list(zip(_lines(tatoeba / f"tatoeba.{code}-eng.{code}"), _lines(tatoeba / f"tatoeba.{code}-eng.eng"),
                      strict=True))]
    many = data / "train" / f"tatoeba_manythings_{code}-eng" / f"train.eng-{code}.tsv"
    if many.is_file():  # the longer phrase-book sentences read most like news
        rows = [line.split("\t") for line in _lines(many)]
        pools.append([(r[1], r[0]) for r in rows if len(r) >= 2 and len(r[1].split()) >= 9][::7])
    captions = data / "train" / "multi30k" / f"train.{lang}.gz"
    if captions.is_file():
        pools.append(list(zip(_lines(captions), _lines(data / "train" / "multi30k" / "train.en.gz"),
                              strict=True))[:4000])
    return [[(s.strip(), t.strip()) for s, t in pool if s.strip() and t.strip()] for pool in pools]


def _end(text: str, lang: str) -> str:
    """A sentence with its final punctuation, so that sentences can be joined."""
    if text[-1] in ".!?。！？…\"»“”":
        return text
    return text + ("。" if lang == "zh" else ".")


def _join(parts: list[str], lang: str) -> str:
    return ("" if lang == "zh" else " ").join(_end(p, lang) for p in parts)


class _Maker:
    def __init__(self, lang: str, data: Path, rng: random.Random):
        self.lang, self.rng = lang, rng
        self.pools = base_pools(lang, data)
        self.headlines = list(ph.HEADLINES)
        rng.shuffle(self.headlines)

    def base(self, count: int = 1) -> list[tuple[str, str]]:
        pool = self.rng.choice([p for p in self.pools if len(p) > count])
        start = self.rng.randrange(len(pool) - count)
        return pool[start:start + count]

    def clause(self) -> tuple[str, str]:
        both = self.rng.choice(ph.CLAUSES)(self.rng)
        return both[self.lang], both["en"]

    def make(self, kind: str) -> tuple[str, str]:
        lang, rng = self.lang, self.rng
        if kind == "plain":
            return self.base()[0]
        if kind in ("numbers", "numbers2"):
            parts = [self.clause(), *self.base()] if rng.random() < 0.4 else [*self.base(), self.clause()]
            if kind == "numbers2":
                parts.append(self.clause())
        elif kind == "long":
            parts = self.base(rng.randint(2, 4))
            if rng.random() < 0.5:
                parts.insert(rng.randint(1, len(parts) - 1), self.clause())
        elif kind == "headline":
            if self.headlines and rng.random() < 0.4:
                line = self.headlines.pop()
                return line[lang], line["en"]
            both = rng.choice(ph.NAME_HEADLINES + ph.NUMBER_HEADLINES)(rng)
            return both[lang], both["en"]
        else:  # names
            both = rng.choice(ph.NAME_SENTENCES)(rng)
            parts = [(both[lang], both["en"])] + (self.base() if rng.random() < 0.5 else [])
        return _join([p[0] for p in parts], lang), _join([p[1] for p in parts], "en")


def news_pairs(lang: str, n: int = 2000, seed: int = 0, data: Path = DEFAULT_DATA) -> list[NewsPair]:
    """``n`` clean news-style (lang, English) pairs; the same for the same arguments."""
    from bitextmine.filter import normalise

    rng = random.Random(f"{lang}-{seed}")
    maker = _Maker(lang, data, rng)
    kinds, weights = list(KINDS), list(KINDS.values())
    out: list[NewsPair] = []
    seen: set[str] = set()
    for _ in range(50 * n):
        if len(out) == n:
            break
        kind = rng.choices(kinds, weights)[0]
        src, tgt = maker.make(kind)
        keys = (normalise(src), normalise(tgt))
        if keys[0] in seen or keys[1] in seen:  # a clean set repeats no text
            continue
        seen.update(keys)
        out.append(NewsPair(kind, src, tgt))
    return out


# --- noise: what the filter must catch -----------------------------------------------------

# the kinds of noise and the rule meant to catch each (duplicates: repeats of kept pairs)
NOISE = {"copy": "copy", "near_copy": "copy", "numbers": "numbers", "number_changed": "numbers", "urls": "urls",
         "letters": "letters", "ratio": "ratio", "length": "length", "wrong_language": "lid",
         "other_language": "lid", "score": "score_cap", "boilerplate": "boilerplate", "duplicates": "dedup"}
# a close language whose sentences stand in for the source: the hard case for language ID
CLOSE = {"de": "nld", "fr": "ita", "es": "por", "ru": "ukr", "zh": "jpn"}
BOILERPLATE = {"de": "Klicken Sie hier, um sich anzumelden.", "fr": "Cliquez ici pour vous connecter.",
               "ru": "Нажмите здесь, чтобы войти.", "zh": "点击此处登录。", "es": "Haga clic aquí para iniciar sesión."}


def _change_a_number(text: str, rng: random.Random) -> str | None:
    import re

    runs = list(re.finditer(r"\d+", text))
    if not runs:
        return None
    run = rng.choice(runs)
    other = str(int(run.group()) + rng.randint(13, 97))  # another number, never one spelled out
    return text[:run.start()] + other + text[run.end():]


def inject(kind: str, pairs: list[tuple[str, str]], lang: str, seed: int = 0,
           data: Path = DEFAULT_DATA) -> list[tuple[str, str]]:
    """Noisy versions of clean (src, tgt) pairs, one kind of noise (see ``NOISE``). For
    ``number_changed`` only pairs with digits on both sides count; ``duplicates`` returns
    repeats (case and punctuation changed) to put after the clean pairs."""
    rng = random.Random(f"{kind}-{lang}-{seed}")
    out = []
    close = _lines(data / "tatoeba" / f"tatoeba.{CLOSE[lang]}-eng.{CLOSE[lang]}") if kind == "other_language" else []
    for i, (src, tgt) in enumerate(pairs):
        if kind == "copy":
            out.append((tgt, tgt))
        elif kind == "near_copy":
            out.append((tgt.upper().replace(".", "!"), tgt))
        elif kind == "numbers":
            out.append((f"{src} ({rng.randint(10, 99)})", f"{tgt} ({rng.randint(100, 999)})"))
        elif kind == "number_changed":
            changed = _change_a_number(tgt, rng) if any(c.isdigit() for c in src) else None
            if changed is not None:
                out.append((src, changed))
        elif kind == "urls":
            out.append((f"{src} https://a.example/{rng.randint(1, 9)}", f"{tgt} https://b.example/"))
        elif kind == "letters":
            out.append(("1234 5678 90 -- ## " + src[:3], tgt))
        elif kind == "ratio":
            out.append((src, " ".join([tgt] * 5)))
        elif kind == "length":
            out.append((src[:2], tgt))
        elif kind == "wrong_language":
            out.append((tgt, src))  # sides swapped: English where the other language belongs
        elif kind == "other_language":
            start = (7 * i) % (len(close) - 3)
            out.append((_join(close[start:start + rng.randint(2, 3)], "zh" if lang == "zh" else "x"), tgt))
        elif kind == "boilerplate":
            out.append((BOILERPLATE[lang], tgt))
        elif kind == "duplicates":
            out.append((src.upper() if rng.random() < 0.5 else src.rstrip(".。!?") + "!", tgt))
        elif kind != "score":  # the score cap looks at the score alone: the pairs stay as they are
            raise ValueError(f"unknown noise {kind!r}")
    return list(pairs) if kind == "score" else out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lang", choices=LANGS, default="de")
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--show", type=int, default=20, help="print this many pairs")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    pairs = news_pairs(args.lang, args.n, data=args.data)
    for pair in pairs[: args.show]:
        print(f"{pair.kind}\t{pair.src}\t{pair.tgt}")


if __name__ == "__main__":
    main()
