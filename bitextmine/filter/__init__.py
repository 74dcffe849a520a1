"""Make mined pairs NMT-ready: rules that drop junk, each switchable, each counted.

High-margin pairs still hold junk (WikiMatrix and LASER users report it): the wrong
language on one side, copies, boilerplate, numbers or URLs that differ, duplicates that
cost BLEU. Rules run in a fixed order, cheapest first; a rejected pair is charged to
the first rule it fails. Deduplication keeps the first occurrence, which is the
best-scoring one since mined files are sorted by score.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field

from bitextmine import defaults
from bitextmine.errors import BitextmineError
from bitextmine.io.pairs import Pair

RULES = ("score_cap", "length", "tokens", "ratio", "letters", "copy", "numbers", "urls", "boilerplate", "dedup",
         "lid")
DEDUP_MODES = ("pair", "src", "tgt", "both")


@dataclass(frozen=True)
class FilterConfig:
    disabled: tuple[str, ...] = ()
    min_chars: int = defaults.FILTER_MIN_CHARS
    max_chars: int = defaults.FILTER_MAX_CHARS
    min_tokens: int = defaults.FILTER_MIN_TOKENS
    max_tokens: int = defaults.FILTER_MAX_TOKENS
    max_ratio: float = defaults.FILTER_MAX_LENGTH_RATIO
    min_letters: float = defaults.FILTER_MIN_LETTER_SHARE
    near_copy: float = defaults.FILTER_NEAR_COPY_JACCARD
    boilerplate_count: int = defaults.FILTER_BOILERPLATE_COUNT
    dedup: str = "both"  # pair: identical pairs; src / tgt: one side seen before; both: src or tgt
    max_score: float | None = None  # the score cap is off until given
    src_lang: str | None = None  # language ID is off until a language is given
    tgt_lang: str | None = None

    def __post_init__(self):
        unknown = set(self.disabled) - set(RULES)
        if unknown:
            raise BitextmineError(f"unknown filter rule(s) {', '.join(sorted(unknown))}: rules are {', '.join(RULES)}")
        if self.dedup not in DEDUP_MODES:
            raise BitextmineError(f"unknown dedup mode {self.dedup!r}: use {', '.join(DEDUP_MODES)}")
        for name in ("max_ratio", "min_letters", "near_copy", "max_score"):
            value = getattr(self, name)
            if value is not None and not math.isfinite(value):
                raise BitextmineError(f"--{name.replace('_', '-')} must be a finite number, not {value}")

    def active(self, rule: str) -> bool:
        if rule in self.disabled:
            return False
        if rule == "score_cap":
            return self.max_score is not None
        if rule == "lid":
            return self.src_lang is not None or self.tgt_lang is not None
        return True


@dataclass
class FilterReport:
    total: int = 0
    kept: int = 0
    rejected: dict[str, int] = field(default_factory=lambda: {r: 0 for r in RULES})
    lid_unsupported: int = 0  # pairs that passed language ID because the detector does not know the language

    def to_dict(self) -> dict:
        return asdict(self)


# --- text helpers -------------------------------------------------------------------------

_URL = re.compile(r"(?:https?://|www\.)[^\s<>\"']+|[\w.+-]+@[\w-]+\.[\w.-]+", re.IGNORECASE)
_NUMBER = re.compile(r"\d(?:[\d.,'\u00a0\u202f]*\d)?")  # 1,000 / 1.000 / 1 000 (narrow spaces)
_WORD = re.compile(r"\w+")


# ASCII characters that are not word characters (\w), mapped to spaces with bytes.translate
_ASCII_NOT_WORD = bytes(c for c in range(128) if not (chr(c).isalnum() or chr(c) == "_"))
_ASCII_NOT_WORD_TO_SPACE = bytes.maketrans(_ASCII_NOT_WORD, b" " * len(_ASCII_NOT_WORD))


def normalise(text: str) -> str:
    """For comparisons: NFKC, case-folded, word characters only, single spaces."""
    if text.isascii():  # the same at C speed: NFKC does nothing, casefold is lower
        return " ".join(text.lower().encode().translate(_ASCII_NOT_WORD_TO_SPACE).decode().split())
    return " ".join(_WORD.findall(unicodedata.normalize("NFKC", text).casefold()))


_NON_DIGIT = re.compile(r"\D")
_NOT_LETTER = re.compile(r"[\W\d_]")
# scripts written without spaces: CJK, kana, Hangul, Thai, Lao, Khmer, Myanmar
_UNSPACED = re.compile(r"[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def numbers(text: str) -> set[str]:
    """Digit runs with their separators dropped: 1,000 / 1.000 / 1 000 -> 1000."""
    return {n if n.isdigit() else _NON_DIGIT.sub("", n) for n in _NUMBER.findall(text)}


def urls(text: str) -> set[str]:
    if "://" not in text and "www." not in text and "@" not in text:
        return set()
    return {u.rstrip(".,;:!?)").lower() for u in _URL.findall(text)}


# ASCII characters that are not letters, as bytes to delete with bytes.translate (C speed)
_ASCII_NOT_LETTER = bytes(c for c in range(128) if not chr(c).isalpha())


def letter_share(text: str) -> float:
    """Share of letters (word characters other than digits and _) among characters."""
    if not text:
        return 0.0
    # fast path: drop the ASCII non-letters; when all that is left is letters, count it
    rest = text.encode().translate(None, _ASCII_NOT_LETTER).decode()
    if not rest or rest.isalpha():
        return len(rest) / len(text)
    return len(_NOT_LETTER.sub("", text)) / len(text)


def token_count(text: str) -> int:
    # scripts without spaces count characters, so the bounds mean about the same
    count = len(text.split())
    if text.isascii():
        return count
    return max(count, len(_UNSPACED.findall(text)))


# --- the rules ------------------------------------------------------------------------------

class PairFilter:
    """Applies the rules of a ``FilterConfig`` to pairs; ``run`` needs the whole input
    (boilerplate counts are over all pairs), ``check`` judges one pair."""

    def __init__(self, cfg: FilterConfig = FilterConfig()):
        self.cfg = cfg
        self.report = FilterReport()
        self._seen_pairs: set[tuple[str, str]] = set()
        self._seen_src: set[str] = set()
        self._seen_tgt: set[str] = set()
        self._boilerplate: set[str] = set()
        self._detector = None
        if cfg.active("lid"):
            from bitextmine.filter.langid import LanguageIdentifier

            self._detector = LanguageIdentifier()
        methods = {"score_cap": self._score_cap, "length": self._length, "tokens": self._tokens,
                   "ratio": self._ratio, "letters": self._letters, "copy": self._copy, "numbers": self._numbers,
                   "urls": self._urls, "boilerplate": self._boilerplate_rule, "dedup": self._dedup, "lid": self._lid}
        self._checks = [(rule, methods[rule]) for rule in RULES if cfg.active(rule)]

    def count_boilerplate(self, normalised: Iterable[tuple[str, str]]) -> None:
        """Texts that occur at least ``boilerplate_count`` times on one side."""
        counts: Counter[str] = Counter()
        for src, tgt in normalised:
            counts[src] += 1
            counts[tgt] += 1
        self._boilerplate = {t for t, c in counts.items() if c >= self.cfg.boilerplate_count and t}

    def check(self, pair: Pair, norm_src: str | None = None, norm_tgt: str | None = None) -> str | None:
        """The first rule ``pair`` fails, or None when it passes them all."""
        if norm_src is None:
            norm_src, norm_tgt = normalise(pair.src), normalise(pair.tgt)
        for rule, fails in self._checks:
            if fails(pair, norm_src, norm_tgt):
                return rule
        return None

    # one method per rule: (pair, normalised source, normalised target) -> fails?
    def _score_cap(self, p, ns, nt):
        # written so that a NaN score fails the cap: a pair whose score is unknown is no safer
        return p.score is not None and not p.score <= self.cfg.max_score

    def _length(self, p, ns, nt):
        lo, hi = self.cfg.min_chars, self.cfg.max_chars
        return not (lo <= len(p.src) <= hi and lo <= len(p.tgt) <= hi)

    def _tokens(self, p, ns, nt):
        lo, hi = self.cfg.min_tokens, self.cfg.max_tokens
        a, b = token_count(p.src), token_count(p.tgt)
        return not (lo <= a <= hi and lo <= b <= hi)

    def _ratio(self, p, ns, nt):
        # UTF-8 bytes: fair across scripts (an ASCII string's length is its byte count)
        a = len(p.src) if p.src.isascii() else len(p.src.encode())
        b = len(p.tgt) if p.tgt.isascii() else len(p.tgt.encode())
        return max(a, b) > self.cfg.max_ratio * max(1, min(a, b))

    def _letters(self, p, ns, nt):
        return letter_share(p.src) < self.cfg.min_letters or letter_share(p.tgt) < self.cfg.min_letters

    def _copy(self, p, ns, nt):
        return ns == nt or _jaccard(ns, nt) >= self.cfg.near_copy

    def _numbers(self, p, ns, nt):
        return not _numbers_agree(p.src, p.tgt)

    def _urls(self, p, ns, nt):
        return urls(p.src) != urls(p.tgt)

    def _boilerplate_rule(self, p, ns, nt):
        return ns in self._boilerplate or nt in self._boilerplate

    def _dedup(self, p, ns, nt):
        return self._seen(ns, nt)

    def _lid(self, p, ns, nt):
        return not self._languages_match(p.src, p.tgt)

    def _seen(self, src: str, tgt: str) -> bool:
        mode = self.cfg.dedup
        if mode == "pair":
            seen = (src, tgt) in self._seen_pairs
        elif mode == "src":
            seen = src in self._seen_src
        elif mode == "tgt":
            seen = tgt in self._seen_tgt
        else:
            seen = src in self._seen_src or tgt in self._seen_tgt
        if not seen:  # only a kept pair claims its sentences
            self._seen_pairs.add((src, tgt))
            self._seen_src.add(src)
            self._seen_tgt.add(tgt)
        return seen

    def _languages_match(self, src: str, tgt: str) -> bool:
        for text, want in ((src, self.cfg.src_lang), (tgt, self.cfg.tgt_lang)):
            if want is None:
                continue
            if not self._detector.supports(want):
                self.report.lid_unsupported += 1
                continue
            if self._detector.detect(text) != self._detector.canonical(want):
                return False
        return True

    def run(self, pairs: list[Pair]) -> Iterator[tuple[Pair, str | None]]:
        """(pair, reason) for each pair in order; reason None means kept."""
        normalised = [(normalise(p.src), normalise(p.tgt)) for p in pairs]  # once, for three rules
        if self.cfg.active("boilerplate"):
            self.count_boilerplate(normalised)
        for pair, (norm_src, norm_tgt) in zip(pairs, normalised, strict=True):
            reason = self.check(pair, norm_src, norm_tgt)
            self.report.total += 1
            if reason is None:
                self.report.kept += 1
            else:
                self.report.rejected[reason] += 1
            yield pair, reason


def _jaccard(a: str, b: str) -> float:
    if 2 * min(len(a), len(b)) < max(len(a), len(b)):  # near copies have about the same length
        return 0.0
    x = set(a.split())
    if len(x) < 3:  # too short to call a near copy by overlap
        return 0.0
    y = set(b.split())
    if len(y) < 3:
        return 0.0
    shared = len(x.intersection(y))
    return shared / (len(x) + len(y) - shared)


def _numbers_agree(src: str, tgt: str) -> bool:
    """Both sides write the same numbers. When only one side has digits, the other has
    most likely spelled them out ("at 2:30" / "a las dos y media"), which passes."""
    a, b = numbers(src), numbers(tgt)
    return a == b or not a or not b
