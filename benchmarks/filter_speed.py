"""Filter throughput in pairs/s, with and without language ID.

    python -m benchmarks.filter_speed [--data ../shared/data/tatoeba] [--pairs 200000]

Pairs: the Tatoeba German-English test pairs repeated with a counter appended (so that
deduplication does not make the work trivial), run through the default rules in one
process (the `bitextmine filter` code path without file I/O). Language ID decides each
distinct text once (digits aside), as mined data repeats sentences; the last rows make every
text distinct (a letter code instead of the counter), so that every text is classified, the
very last with news-length lines (four test sentences joined, about 210 characters a side).
Before the table, the language decisions of the whole run are compared with those made
pair by pair, one text at a time, on a sample. The filter judges pairs in one worker
process per CPU on large inputs (``workers``); the rows marked "one process" run without
workers, where pairs/s of CPU time (what the process got of the processor) is the steadier
figure on a shared, busy machine.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "tatoeba"


def letter_code(i: int) -> str:
    """A distinct lower-case word for each number (no digits, so language ID reads it)."""
    code = ""
    while True:
        i, rest = divmod(i, 26)
        code = chr(ord("a") + rest) + code
        if not i:
            return "q" + code


def make_pairs(data: Path, count: int, distinct: bool = False, sentences: int = 1):
    from bitextmine.filter import Pair

    src = (data / "tatoeba.deu-eng.deu").read_text(encoding="utf-8").split("\n")[:-1]
    tgt = (data / "tatoeba.deu-eng.eng").read_text(encoding="utf-8").split("\n")[:-1]
    base = list(zip(src, tgt, strict=True))
    step = len(base) // sentences + 1  # sentences far apart in the file, so that no two lines share one
    pairs = []
    for i in range(count):
        joined = [base[(i + j * step) % len(base)] for j in range(sentences)]
        tag = letter_code(i) if distinct else str(i)
        pairs.append(Pair(1.1, " ".join(s for s, _ in joined) + f" {tag}", " ".join(t for _, t in joined) + f" {tag}"))
    return pairs


def same_decisions(pairs, sample: int = 2000) -> bool:
    """Language ID decisions of one batched, cached run equal those made pair by pair."""
    from bitextmine.filter.langid import PairLanguages

    pairs = pairs[:: max(1, len(pairs) // sample)]
    at_once = PairLanguages("de", "en").matches(pairs)
    one_by_one = PairLanguages("de", "en")
    return at_once == [one_by_one.matches([p])[0] for p in pairs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--pairs", type=int, default=200_000)
    args = parser.parse_args()

    from bitextmine.devices import available_cpus
    from bitextmine.filter import FilterConfig, PairFilter

    pairs = make_pairs(args.data, args.pairs)
    distinct = make_pairs(args.data, args.pairs, distinct=True)
    long_lines = make_pairs(args.data, args.pairs, distinct=True, sentences=4)
    print(f"{len(pairs):,} pairs; language decisions batched and cached = pair by pair: "
          f"{same_decisions(pairs) and same_decisions(distinct) and same_decisions(long_lines)}\n")
    both = FilterConfig(src_lang="de", tgt_lang="en")
    print(f"workers: {available_cpus()} (the CPUs this process may use)\n")
    print("| setting | workers | pairs/s | pairs/s of CPU time (this process) | kept |")
    print("|---|---:|---:|---:|---:|")
    for name, cfg, data, workers in (
            ("default rules, no language ID", FilterConfig(), pairs, 1),
            ("default rules + language ID of both sides", both, pairs, 1),
            ("default rules, no language ID", FilterConfig(), pairs, None),
            ("default rules + language ID of the target side (en)", FilterConfig(tgt_lang="en"), pairs, None),
            ("default rules + language ID of both sides", both, pairs, None),
            ("the same, every text distinct (no decision reused)", both, distinct, None),
            ("the same, news-length lines, every text distinct", both, long_lines, None)):
        pair_filter = PairFilter(cfg)  # not timed: loading the language ID model takes about a second, once
        start, cpu = time.perf_counter(), time.process_time()
        kept = sum(reason is None for _, reason in pair_filter.run(data, workers=workers))
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        print(f"| {name} | {workers or available_cpus()} | {len(data) / seconds:,.0f} | {len(data) / cpu:,.0f} "
              f"| {kept:,} |", flush=True)


if __name__ == "__main__":
    main()
