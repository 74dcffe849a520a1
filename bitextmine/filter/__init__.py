"""Make mined pairs NMT-ready: rules that drop junk, each switchable, each counted.

High-margin pairs still hold junk (WikiMatrix and LASER users report it): the wrong
language on one side, copies, boilerplate, numbers or URLs that differ, duplicates that
cost BLEU. Rules run in a fixed order (``RULES``), the ones that judge a pair by itself
first, then language ID (of all remaining pairs at once), then deduplication; a rejected
pair is charged to the first rule it fails. Deduplication keeps the first kept occurrence,
the best-scoring one since mined files are sorted by score. Numbers are compared in
``numerals``, languages identified in ``langid``.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from itertools import chain

from bitextmine import defaults
from bitextmine.choices import DEDUP_MODES, RULES  # RULES: in the order they run, dedup last
from bitextmine.devices import available_cpus
from bitextmine.errors import BitextmineError, warn
from bitextmine.io.pairs import Pair

# the range of each number setting, (least, most) with None for no bound; the command line's limits too
RANGES = {"min_chars": (0, None), "max_chars": (0, None), "min_tokens": (0, None), "max_side_tokens": (0, None),
          "max_ratio": (1.0, None), "min_letters": (0.0, 1.0), "near_copy": (0.0, 1.0), "boilerplate": (1, None),
          "max_score": (None, None)}


@dataclass(frozen=True)
class FilterConfig:
    """The rules' settings; each field is the command-line option of that name (``--max-side-tokens``)."""

    skip: tuple[str, ...] = ()  # rules switched off
    min_chars: int = defaults.FILTER_MIN_CHARS
    max_chars: int = defaults.FILTER_MAX_CHARS
    min_tokens: int = defaults.FILTER_MIN_TOKENS
    max_side_tokens: int = defaults.FILTER_MAX_TOKENS
    max_ratio: float = defaults.FILTER_MAX_LENGTH_RATIO
    min_letters: float = defaults.FILTER_MIN_LETTER_SHARE
    near_copy: float = defaults.FILTER_NEAR_COPY_JACCARD
    boilerplate: int = defaults.FILTER_BOILERPLATE_COUNT  # a side seen this many times is boilerplate
    dedup: str = defaults.FILTER_DEDUP  # pair: identical pairs; src / tgt: one side seen before; both: either
    max_score: float | None = None  # the score cap is off until given
    src_lang: str | None = None  # language ID is off until a language is given
    tgt_lang: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "skip", tuple(self.skip))
        unknown = set(self.skip) - set(RULES)
        if unknown:
            raise BitextmineError(f"unknown filter rule(s) {', '.join(sorted(unknown))}: rules are {', '.join(RULES)}")
        if self.dedup not in DEDUP_MODES:
            raise BitextmineError(f"unknown dedup mode {self.dedup!r}: use {', '.join(DEDUP_MODES)}")
        for name, (least, most) in RANGES.items():
            value, option = getattr(self, name), f"--{name.replace('_', '-')}"
            if value is not None and not math.isfinite(value):
                raise BitextmineError(f"{option} must be a finite number, not {value}")
            if value is not None and ((least is not None and value < least) or (most is not None and value > most)):
                raise BitextmineError(f"{option} must be in [{least}, {most if most is not None else 'inf'}], "
                                      f"not {value}")
        for low, high in (("min_chars", "max_chars"), ("min_tokens", "max_side_tokens")):
            if getattr(self, low) > getattr(self, high):  # every pair would fail
                raise BitextmineError(f"--{low.replace('_', '-')} {getattr(self, low)} is above "
                                      f"--{high.replace('_', '-')} {getattr(self, high)}: no pair could pass")
        for option, lang in (("--src-lang", self.src_lang), ("--tgt-lang", self.tgt_lang)):
            if lang is not None:
                from bitextmine.languages import language_key

                language_key(lang, option)  # an unknown code is an error, never language ID silently off

    def to_dict(self) -> dict:
        return {**asdict(self), "skip": list(self.skip)}

    def active(self, rule: str) -> bool:
        if rule in self.skip:
            return False
        if rule == "score_cap":  # on: a score that is no number (nan, inf) fails it even without a cap
            return True
        if rule == "lid":
            return self.src_lang is not None or self.tgt_lang is not None
        return True


@dataclass
class FilterReport:
    total: int = 0
    kept: int = 0
    rejected: dict[str, int] = field(default_factory=lambda: {r: 0 for r in RULES})
    lid_unsupported: int = 0  # pairs that passed language ID because the detector does not know the language
    warnings: list[str] = field(default_factory=list)  # what looked like a mistake in the settings

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


# ASCII characters that are not letters, and ASCII white space, as bytes to delete with
# bytes.translate (C speed)
_ASCII_NOT_LETTER = bytes(c for c in range(128) if not chr(c).isalpha())
_ASCII_SPACE = bytes(c for c in range(128) if chr(c).isspace())
_SPACE = re.compile(r"\s")


_NON_ASCII_NOT_WORD = re.compile(r"[^\w\s\x00-\x7f]")  # symbols, punctuation, combining marks
# CJK, kana and Hangul: a character is a syllable or a word, where a Latin letter is a sound
_WIDE = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def letter_share(text: str) -> float:
    """Share of letters (word characters other than digits and _, and combining marks such
    as Devanagari vowel signs) among the visible (not white space) characters, a CJK, kana
    or Hangul character counting as three (as in ``text_length``): a Chinese side with a
    few numbers is no junk, and spaces neither help nor hurt."""
    data = text.encode()
    # fast path: drop the ASCII non-letters; when all that is left is letters, count it
    rest = data.translate(None, _ASCII_NOT_LETTER)
    visible = len(text) - len(data) + len(data.translate(None, _ASCII_SPACE))
    if text.isascii():
        return len(rest) / visible if visible else 0.0
    letters = rest.decode()
    if letters.isalpha() and _WIDE.search(letters) is None:
        return len(letters) / visible
    letters = _NOT_LETTER.sub("", text)
    marks = sum(unicodedata.category(c)[0] == "M" for c in _NON_ASCII_NOT_WORD.findall(text))
    visible = _SPACE.sub("", text)
    weight = len(visible) + 2 * len(_WIDE.findall(visible))
    return (len(letters) + 2 * len(_WIDE.findall(letters)) + marks) / weight if weight else 0.0


def text_length(text: str) -> int:
    """Characters, a CJK, kana or Hangul character counting as three: lengths comparable
    across scripts (UTF-8 bytes would count a Cyrillic letter twice)."""
    if text.isascii():
        return len(text)
    return len(text) + 2 * len(_WIDE.findall(text))


def token_count(text: str) -> int:
    # scripts without spaces count characters, so the bounds mean about the same
    count = len(text.split())
    if text.isascii() or _UNSPACED.search(text) is None:
        return count
    return max(count, len(_UNSPACED.findall(text)))


# --- the rules ------------------------------------------------------------------------------

class PairFilter:
    """Applies the rules of a ``FilterConfig`` to pairs. ``run`` needs the whole input:
    boilerplate counts are over all pairs, and language ID runs on many texts at once."""

    def __init__(self, cfg: FilterConfig = FilterConfig()):
        self.cfg = cfg
        self.report = FilterReport()
        self._seen_pairs: set[tuple[str, str]] = set()
        self._seen_src: set[str] = set()
        self._seen_tgt: set[str] = set()
        self._boilerplate: set[str] = set()
        self._dedup = cfg.active("dedup")
        self._languages = None
        if cfg.active("lid"):
            from bitextmine.filter.langid import PairLanguages

            self._languages = PairLanguages(cfg.src_lang, cfg.tgt_lang)
        methods = {"score_cap": self._score_cap, "length": self._length, "tokens": self._tokens,
                   "ratio": self._ratio, "letters": self._letters, "copy": self._copy, "numbers": self._numbers,
                   "urls": self._urls}
        # the rules that judge a pair by itself, which run in the workers; the boilerplate rule
        # (which needs every pair's texts counted), language ID's verdict and dedup, the last
        # three of RULES, follow in that order in ``_finish``
        self._checks = [(rule, methods[rule]) for rule in RULES if rule in methods and cfg.active(rule)]

    def _count_boilerplate(self, normalised: Iterable[tuple[str, str]]) -> None:
        """Texts that occur at least ``boilerplate`` times on one side."""
        counts = Counter(chain.from_iterable(normalised))
        self._boilerplate = {t for t, c in counts.items() if c >= self.cfg.boilerplate and t}

    def _pair_rules(self, pair: Pair, norm_src: str, norm_tgt: str) -> str | None:
        for rule, fails in self._checks:
            if fails(pair, norm_src, norm_tgt):
                return rule
        return None

    def _finish(self, norm_src: str, norm_tgt: str, languages_match: bool | None) -> str | None:
        """The boilerplate rule, language ID's verdict, then dedup against the kept pairs; a
        pair that passes is kept and claims its sentences."""
        if norm_src in self._boilerplate or norm_tgt in self._boilerplate:
            return "boilerplate"
        if self._languages is not None:
            self.report.lid_unsupported += self._languages.unsupported_sides
            if not languages_match:
                return "lid"
        if self._dedup:
            if self._seen(norm_src, norm_tgt):
                return "dedup"
            self._claim(norm_src, norm_tgt)
        return None

    # one method per rule: (pair, normalised source, normalised target) -> fails?
    def _score_cap(self, p, ns, nt):
        # a NaN or infinite score says nothing of the pair: it fails, cap or no cap
        cap = math.inf if self.cfg.max_score is None else self.cfg.max_score
        return p.score is not None and not (math.isfinite(p.score) and p.score <= cap)

    def _length(self, p, ns, nt):
        lo, hi = self.cfg.min_chars, self.cfg.max_chars
        return not (lo <= len(p.src) <= hi and lo <= len(p.tgt) <= hi)

    def _tokens(self, p, ns, nt):
        lo, hi = self.cfg.min_tokens, self.cfg.max_side_tokens
        a, b = token_count(p.src), token_count(p.tgt)
        return not (lo <= a <= hi and lo <= b <= hi)

    def _ratio(self, p, ns, nt):
        a, b = text_length(p.src), text_length(p.tgt)
        return max(a, b) > self.cfg.max_ratio * max(1, min(a, b))

    def _letters(self, p, ns, nt):
        return letter_share(p.src) < self.cfg.min_letters or letter_share(p.tgt) < self.cfg.min_letters

    def _copy(self, p, ns, nt):
        return ns == nt or _near_copy(ns, nt, self.cfg.near_copy)

    def _numbers(self, p, ns, nt):
        return not _numbers_agree(p.src, p.tgt)

    def _urls(self, p, ns, nt):
        return urls(p.src) != urls(p.tgt)

    def _seen(self, src: str, tgt: str) -> bool:
        mode = self.cfg.dedup
        if mode == "pair":
            return (src, tgt) in self._seen_pairs
        if mode == "src":
            return src in self._seen_src
        if mode == "tgt":
            return tgt in self._seen_tgt
        return src in self._seen_src or tgt in self._seen_tgt

    def _claim(self, src: str, tgt: str) -> None:
        mode = self.cfg.dedup
        if mode == "pair":
            self._seen_pairs.add((src, tgt))
        if mode in ("src", "both"):
            self._seen_src.add(src)
        if mode in ("tgt", "both"):
            self._seen_tgt.add(tgt)

    def run(self, pairs: list[Pair], workers: int | None = None) -> Iterator[tuple[Pair, str | None]]:
        """(pair, reason) for each pair in order; reason None means kept.

        Normalising the texts, the rules of each pair and language ID run in ``workers``
        processes (default: the CPUs this process may use) on large inputs; boilerplate
        counts and deduplication, which depend on the other pairs, run here in order, so the
        result is that of one process."""
        judged = self._judge_all(pairs, workers)
        if self._languages is not None:
            self._check_languages(pairs, judged)
        if self.cfg.active("boilerplate"):
            self._count_boilerplate((ns, nt) for ns, nt, _, _ in judged)
        reasons = (reason or self._finish(ns, nt, languages_match) for ns, nt, reason, languages_match in judged)
        report = self.report
        for pair, reason in zip(pairs, reasons, strict=True):
            report.total += 1
            if reason is None:
                report.kept += 1
            else:
                report.rejected[reason] += 1
            yield pair, reason

    def _check_languages(self, pairs: list[Pair], judged) -> None:
        """Warn when language ID rejects most of the pairs it judges: the languages given are
        then more likely wrong (swapped, or another pair's) than the data."""
        verdicts = [match for _, _, _, match in judged if match is not None]
        failed = [p for p, (_, _, _, match) in zip(pairs, judged, strict=True) if match is False]
        if len(failed) < max(defaults.FILTER_LID_WARN_MIN_PAIRS, defaults.FILTER_LID_WARN_SHARE * len(verdicts)):
            return
        src, tgt = self.cfg.src_lang, self.cfg.tgt_lang
        message = f"language ID rejects {len(failed)} of {len(verdicts)} pairs"
        if src is not None and tgt is not None:
            from bitextmine.filter.langid import PairLanguages

            sample = failed[:: max(1, len(failed) // defaults.FILTER_LID_SWAP_SAMPLE)]
            swapped = sum(PairLanguages(tgt, src).matches(sample))
            if 2 * swapped > len(sample):
                message += (f"; {swapped} of {len(sample)} of them pass with the languages the other way round: "
                            f"the columns look swapped (--src-lang {tgt} --tgt-lang {src}?)")
            else:
                message += f": are --src-lang {src} and --tgt-lang {tgt} the languages of the two columns?"
        else:
            message += f": is {'--src-lang ' + src if src else '--tgt-lang ' + str(tgt)} the language of its column?"
        self.report.warnings.append(message)
        warn(message)

    def judge(self, pairs: list[Pair]) -> list[tuple[str, str, str | None, bool | None]]:
        """(normalised source, normalised target, first rule failed, languages match) per
        pair, for the rules that judge a pair by itself and language ID (of all survivors at
        once; None where not run)."""
        judged = []
        for p in pairs:
            ns, nt = normalise(p.src), normalise(p.tgt)  # once, for the copy rule, boilerplate and dedup
            judged.append((ns, nt, self._pair_rules(p, ns, nt), None))
        if self._languages is None:
            return judged
        verdicts = iter(self._languages.matches([p for p, (_, _, reason, _) in zip(pairs, judged, strict=True)
                                                 if reason is None]))
        return [(ns, nt, reason, None if reason else next(verdicts)) for ns, nt, reason, _ in judged]

    def _judge_all(self, pairs, workers):
        workers = available_cpus() if workers is None else workers
        chunk = defaults.FILTER_PARALLEL_CHUNK
        if workers < 2 or len(pairs) < defaults.FILTER_PARALLEL_MIN_PAIRS or not _can_fork():
            return self.judge(pairs)
        import multiprocessing
        import warnings

        global _FORKED
        _FORKED = (self, pairs)
        try:
            with warnings.catch_warnings():
                # Python 3.12+ warns about fork in a threaded process (numpy's BLAS threads):
                # the workers use none of them, and BLAS libraries reset their pools on fork
                warnings.filterwarnings("ignore", message=".*fork.*", category=DeprecationWarning)
                with multiprocessing.get_context("fork").Pool(workers) as pool:
                    parts = pool.map(_judge_forked_chunk, range(0, len(pairs), chunk))
        finally:
            _FORKED = None
        return [judgement for part in parts for judgement in part]


# what forked workers judge: (filter, pairs), set just before the fork
_FORKED = None


def _judge_forked_chunk(start: int) -> list[tuple[str, str, str | None, bool | None]]:
    pair_filter, pairs = _FORKED
    return pair_filter.judge(pairs[start:start + defaults.FILTER_PARALLEL_CHUNK])


def _can_fork() -> bool:
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()


_NEAR_COPY_PROBES = 4  # words of one side looked up in the other before building word sets (+1 per 8 words)


def _near_copy(a: str, b: str, threshold: float) -> bool:
    """Normalised texts of about the same length (within 2x in characters), with at least
    three distinct words each, whose word sets overlap by ``threshold`` (Jaccard) or more."""
    if 2 * min(len(a), len(b)) < max(len(a), len(b)):
        return False
    # Before any set is built (most pairs are translations, far from copies): each distinct
    # word of b missing from a caps the overlap further, at most words_a / (words_a + missing);
    # b's first few words settle most pairs (at 0.9, one word in nine missing)
    words_a, padded, missing = a.count(" ") + 1, f" {a} ", set()
    probes = _NEAR_COPY_PROBES + words_a // 8
    for word in b.split(" ", probes)[:probes]:
        if f" {word} " not in padded:
            missing.add(word)
            if words_a / (words_a + len(missing)) < threshold:
                return False
    x = set(a.split())
    if len(x) < 3:  # too short to call a near copy by overlap
        return False
    y = set(b.split())
    if len(y) < 3 or min(len(x), len(y)) / max(len(x), len(y)) < threshold:  # the overlap is at most this ratio
        return False
    shared = len(x & y)
    return shared / (len(x) + len(y) - shared) >= threshold


def _numbers_agree(src: str, tgt: str) -> bool:
    """Both sides write the same numbers (``bitextmine.filter.numerals``). The same digits on
    both sides, or digits on one side only (the other spelled them out: "at 2:30" / "a las
    dos y media"), settle it without reading the numbers."""
    a, b = _NUMBER.findall(src), _NUMBER.findall(tgt)
    if a == b or not a or not b:  # written alike, or on one side only
        return True
    a, b = numbers(src), numbers(tgt)
    if a == b:
        return True
    from bitextmine.filter.numerals import numbers_agree

    return numbers_agree(src, tgt)
