"""The filter judging pairs, for the tests and the benchmark that measure its rules: the rule
each pair fails, a config with one rule on, the share of injected noise caught, and human
translations with numbers on both sides."""

from __future__ import annotations

import re
from pathlib import Path

from bitextmine.filter import RULES, FilterConfig, Pair, PairFilter
from tests.support.filter_sets import NOISE, inject


def judge(pairs: list[tuple[str, str]], score: float = 1.2, **cfg) -> list[str | None]:
    """The reason each (src, tgt) pair is rejected, or None where it is kept."""
    pair_filter = PairFilter(FilterConfig(**cfg))
    return [reason for _, reason in pair_filter.run([Pair(score, s, t) for s, t in pairs])]


def only(rule: str, **cfg) -> dict:
    """A config with every rule off but ``rule``."""
    return {"skip": tuple(r for r in RULES if r != rule), **cfg}


def catch_rates(kind: str, clean: list[tuple[str, str]], lang: str, data: Path) -> tuple[float, float, int]:
    """(caught by the kind's own rule alone, caught by all default rules with language ID,
    noisy pairs judged)."""
    rule = NOISE[kind]
    langs = {"src_lang": lang, "tgt_lang": "en"}
    cfg = {"max_score": 2.0} if kind == "score" else langs if rule == "lid" else {}
    noisy = inject(kind, clean, lang, data=data)
    score = 9.9 if kind == "score" else 1.2
    if kind == "duplicates":  # repeats count only after the pairs they repeat
        alone = judge(clean + noisy, **only(rule))[len(clean):]
        together = judge(clean + noisy, **langs)[len(clean):]
    else:
        alone = judge(noisy, score, **only(rule, **cfg))
        together = judge(noisy, score, **{**langs, **cfg})
    return alone.count(rule) / len(noisy), 1 - together.count(None) / len(noisy), len(noisy)


def real_pairs_with_numbers(code: str, data: Path) -> list[tuple[str, str]]:
    """Human translations (the manythings Tatoeba export, lang-English) with digits on both
    sides: the numbers rule judged on pairs nobody wrote for it."""
    path = data / "train" / f"tatoeba_manythings_{code}-eng" / f"train.eng-{code}.tsv"
    rows = [line.split("\t") for line in path.read_text(encoding="utf-8").split("\n") if line]
    digit = re.compile(r"\d")
    return [(r[1], r[0]) for r in rows if len(r) >= 2 and digit.search(r[0]) and digit.search(r[1])]
