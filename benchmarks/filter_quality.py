"""Filter quality on clean news-style pairs and on injected noise: the figures behind
tests/test_filter.py.

    python -m benchmarks.filter_quality [--n 2000] [--noisy 300] [--data ../shared/data]

Kept clean: the share of ``--n`` clean news-style pairs per language (benchmarks/filter_sets.py)
that the default rules keep, without and with language ID of both sides; and the numbers
rule alone on the human translations with digits on both sides in the manythings exports
(German, French). Caught: for each
kind of injected noise (``filter_sets.NOISE``), made from ``--noisy`` of those pairs, the share
caught by its own rule alone and by all default rules with language ID.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks.filter_sets import DEFAULT_DATA, LANGS, NOISE, inject, news_pairs


def judge(pairs: list[tuple[str, str]], score: float = 1.2, **cfg) -> list[str | None]:
    """The reason each (src, tgt) pair is rejected, or None where it is kept."""
    from bitextmine.filter import FilterConfig, Pair, PairFilter

    pair_filter = PairFilter(FilterConfig(**cfg))
    return [reason for _, reason in pair_filter.run([Pair(score, s, t) for s, t in pairs])]


def only(rule: str, **cfg) -> dict:
    """A config with every rule off but ``rule``."""
    from bitextmine.filter import RULES

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
    import re

    path = data / "train" / f"tatoeba_manythings_{code}-eng" / f"train.eng-{code}.tsv"
    rows = [line.split("\t") for line in path.read_text(encoding="utf-8").split("\n") if line]
    digit = re.compile(r"\d")
    return [(r[1], r[0]) for r in rows if len(r) >= 2 and digit.search(r[0]) and digit.search(r[1])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--noisy", type=int, default=300)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    sets = {lang: [(p.src, p.tgt) for p in news_pairs(lang, args.n, data=args.data)] for lang in LANGS}
    print(f"Kept of {args.n:,} clean news-style pairs per language\n")
    print("| language | kept (default rules) | kept (+ language ID) | rejected by (+ language ID) |")
    print("|---|---:|---:|---|")
    for lang, pairs in sets.items():
        plain = judge(pairs)
        with_lid = judge(pairs, src_lang=lang, tgt_lang="en")
        why = {r: with_lid.count(r) for r in sorted(set(with_lid) - {None})}
        print(f"| {lang}-en | {plain.count(None) / len(pairs):.2%} | {with_lid.count(None) / len(pairs):.2%} | "
              f"{', '.join(f'{r} {c}' for r, c in why.items()) or '-'} |", flush=True)
    print("\nThe numbers rule alone on all manythings pairs with digits on both sides\n")
    print("| pairs | with digits on both sides | rejected by numbers |\n|---|---:|---:|")
    for code in ("deu", "fra"):
        pairs = real_pairs_with_numbers(code, args.data)
        rejected = judge(pairs, **only("numbers")).count("numbers")
        print(f"| {code}-eng | {len(pairs):,} | {rejected} ({rejected / len(pairs):.1%}) |", flush=True)
    print(f"\nCaught of {args.noisy} noisy pairs per kind: by its own rule alone / by all default rules "
          "with language ID\n")
    print(f"| noise | rule | {' | '.join(f'{lang}-en' for lang in LANGS)} |")
    print(f"|---|---|{'---:|' * len(LANGS)}")
    for kind, rule in NOISE.items():
        cells = []
        for lang, pairs in sets.items():
            alone, together, count = catch_rates(kind, pairs[: args.noisy], lang, args.data)
            cells.append(f"{alone:.1%} / {together:.1%}" + (f" (n={count})" if count != args.noisy else ""))
        print(f"| {kind} | {rule} | {' | '.join(cells)} |", flush=True)


if __name__ == "__main__":
    main()
