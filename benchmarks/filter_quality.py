"""Filter quality on Tatoeba pairs with injected noise: the figures behind tests/test_filter.py.

    python benchmarks/filter_quality.py

Kept-clean rate: the share of 1,000 clean Tatoeba pairs per language that the default
rules keep. Catch rates: for each kind of injected noise (300 German-English pairs made
noisy the way the tests do it), the share caught by its own rule alone, and by all
default rules together.
"""

from __future__ import annotations

import random

from tests.test_filter import clean_pairs, inject, judge, only

NOISE = [("copy", "copy", {}), ("near_copy", "copy", {}), ("numbers", "numbers", {}), ("urls", "urls", {}),
         ("letters", "letters", {}), ("ratio", "ratio", {}), ("length", "length", {}),
         ("wrong_language", "lid", {"src_lang": "de", "tgt_lang": "en"}), ("score", "score_cap", {"max_score": 2.0})]


def main() -> None:
    print("| language | kept (default rules) | kept (+ language ID) |\n|---|---:|---:|")
    codes = {"deu": "de", "fra": "fr", "spa": "es", "rus": "ru", "cmn": "zh", "jpn": "ja", "ara": "ar"}
    for lang, code in codes.items():
        pairs = clean_pairs(lang)
        plain, _ = judge(pairs)
        with_lid, _ = judge(pairs, src_lang=code, tgt_lang="en")
        print(f"| {lang} | {plain.count(None) / len(pairs):.1%} | {with_lid.count(None) / len(pairs):.1%} |")
    print("\n| noise | rule | caught by its rule alone | caught by all default rules |\n|---|---|---:|---:|")
    for kind, rule, cfg in NOISE:
        noisy = inject(kind, clean_pairs("deu", 300), random.Random(0))
        alone, _ = judge(noisy, **only(rule, **cfg))
        together, _ = judge(noisy, **cfg)
        print(f"| {kind} | {rule} | {alone.count(rule) / len(noisy):.1%} | "
              f"{1 - together.count(None) / len(noisy):.1%} |")


if __name__ == "__main__":
    main()
