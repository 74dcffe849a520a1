"""The filter's settings (``FilterConfig``, each field a command-line option) and its counts."""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from bitextmine import defaults
from bitextmine.choices import DEDUP_MODES, RULES  # RULES: in the order they run, dedup last
from bitextmine.errors import BitextmineError
from bitextmine.languages import language_key

# the range of each number setting, (least, most) with None for no bound; the command line's limits too
RANGES = {"min_chars": (0, None), "max_chars": (0, None), "min_tokens": (0, None), "max_side_tokens": (0, None),
          "max_ratio": (1.0, None), "min_letters": (0.0, 1.0), "near_copy": (0.0, 1.0), "boilerplate": (2, None),
          "max_score": (None, None)}
WHOLE_NUMBERS = ("min_chars", "max_chars", "min_tokens", "max_side_tokens", "boilerplate")


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
        if isinstance(self.skip, str):  # one rule's name, not its letters
            object.__setattr__(self, "skip", (self.skip,))
        if self.skip is None or not isinstance(self.skip, Iterable):
            raise BitextmineError(f"skip: give rule names, not {self.skip!r}")
        object.__setattr__(self, "skip", tuple(self.skip))
        for name in RANGES:  # library callers get the command line's types
            value, option = getattr(self, name), f"--{name.replace('_', '-')}"
            if value is None and name == "max_score":
                continue
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise BitextmineError(f"{option} must be a number, not {value!r}")
            if name in WHOLE_NUMBERS and not isinstance(value, numbers.Integral):
                raise BitextmineError(f"{option} must be a whole number, not {value!r}")
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
