"""Filter quality on clean news-style pairs and on injected noise: the figures behind
tests/test_filter.py.

    python -m benchmarks.filter_quality [--n 2000] [--noisy 300] [--data ../shared/data]

Kept clean: the share of ``--n`` clean news-style pairs per language (tests/support/filter_sets.py)
that the default rules keep, without and with language ID of both sides; and the numbers
rule alone on the human translations with digits on both sides in the manythings exports
(German, French). Caught: for each
kind of injected noise (``filter_sets.NOISE``), made from ``--noisy`` of those pairs, the share
caught by its own rule alone and by all default rules with language ID.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tests.support.filter_judging import catch_rates, judge, only, real_pairs_with_numbers
from tests.support.filter_sets import DEFAULT_DATA, LANGS, NOISE, news_pairs


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
