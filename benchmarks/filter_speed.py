"""Filter throughput in pairs/s, with and without language ID.

    python benchmarks/filter_speed.py [--data ../shared/data/tatoeba] [--pairs 200000]

Pairs: the Tatoeba German-English test pairs repeated with a counter appended (so that
deduplication does not make the work trivial), run through the default rules in one
process (the `bitextmine filter` code path without file I/O).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "tatoeba"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--pairs", type=int, default=200_000)
    args = parser.parse_args()

    from bitextmine.filter import FilterConfig, Pair, PairFilter

    base = []
    for lang in ("deu",):
        src = (args.data / f"tatoeba.{lang}-eng.{lang}").read_text(encoding="utf-8").split("\n")[:-1]
        tgt = (args.data / f"tatoeba.{lang}-eng.eng").read_text(encoding="utf-8").split("\n")[:-1]
        base += list(zip(src, tgt, strict=True))
    pairs = [Pair(1.1, f"{s} {i}", f"{t} {i}") for i in range(args.pairs // len(base) + 1) for s, t in base]
    pairs = pairs[: args.pairs]
    print(f"{len(pairs):,} pairs\n")
    print("| setting | pairs/s | kept |")
    print("|---|---:|---:|")
    for name, cfg in (("default rules, no language ID", FilterConfig()),
                      ("default rules + language ID of the target side (en)", FilterConfig(tgt_lang="en")),
                      ("default rules + language ID of both sides", FilterConfig(src_lang="de", tgt_lang="en"))):
        pair_filter = PairFilter(cfg)
        start = time.perf_counter()
        kept = sum(reason is None for _, reason in pair_filter.run(pairs))
        seconds = time.perf_counter() - start
        print(f"| {name} | {len(pairs) / seconds:,.0f} | {kept:,} |", flush=True)


if __name__ == "__main__":
    main()
