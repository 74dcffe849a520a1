"""Validate `bitextmine calibrate` by simulation on Tatoeba, where the truth is known.

    python benchmarks/calibration_check.py [--langs deu,fra,spa,...]

For each language, the 1000 Tatoeba test pairs are split: 200 seed pairs, 300 true pairs
planted in both pools, 250 sentences only in the source pool and 250 only in the target
pool (their translations are left out). Both calibration modes estimate precision at
each threshold; the true precision is counted against the planted pairs. Reported: the
mean and largest absolute error over thresholds keeping at least 20 pairs, and the error
at the recommended threshold for 90 % precision.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "tatoeba"
LANGS = "deu,fra,spa,ita,por,nld,rus,pol,tur,ara,cmn,jpn"


def simulate(encoder, data: Path, lang: str, seed: int = 0):
    """(x pool, y pool, seed src, seed tgt, gold set) for one language."""
    src = (data / f"tatoeba.{lang}-eng.{lang}").read_text(encoding="utf-8").split("\n")[:-1]
    tgt = (data / f"tatoeba.{lang}-eng.eng").read_text(encoding="utf-8").split("\n")[:-1]
    order = np.random.default_rng(seed).permutation(len(src))
    seeds, true, src_only, tgt_only = order[:200], order[200:500], order[500:750], order[750:1000]
    x_rows = np.concatenate([true, src_only])
    y_rows = np.concatenate([true, tgt_only])
    rng = np.random.default_rng(seed + 1)
    x_rows, y_rows = rng.permutation(x_rows), rng.permutation(y_rows)
    x = encoder.encode([src[i] for i in x_rows]).astype(np.float16)
    y = encoder.encode([tgt[i] for i in y_rows]).astype(np.float16)
    where_y = {row: j for j, row in enumerate(y_rows)}
    gold = {(i, where_y[row]) for i, row in enumerate(x_rows) if row in where_y}
    seed_src = encoder.encode([src[i] for i in seeds])
    seed_tgt = encoder.encode([tgt[i] for i in seeds])
    return x, y, seed_src, seed_tgt, gold


def true_precision(x, y, gold, grid, cfg):
    from bitextmine.mine import mine_vectors

    pairs = mine_vectors(x, y, cfg, threshold=-np.inf)
    correct = np.array([(s, t) in gold for s, t in zip(pairs.src.tolist(), pairs.tgt.tolist(), strict=True)])
    out, counts = [], []
    for t in grid:
        keep = pairs.score >= t
        counts.append(int(keep.sum()))
        out.append(correct[keep].mean() if keep.any() else np.nan)
    return np.array(out), np.array(counts)


def errors(estimated, truth, counts):
    use = (counts >= 20) & ~np.isnan(estimated) & ~np.isnan(truth)
    diff = np.abs(estimated[use] - truth[use]) * 100
    return float(diff.mean()), float(diff.max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--langs", default=LANGS)
    args = parser.parse_args()

    from bitextmine.encoders import load_encoder
    from bitextmine.evaluate.calibrate import calibrate_with_seeds, calibrate_without_gold
    from bitextmine.mine import MineConfig

    encoder = load_encoder("usem3", device="cpu")
    cfg = MineConfig()
    print("| language | seeds: mean / max error (points) | at recommended t (90 %): est. / true | "
          "no gold: mean / max error |")
    print("|---|---:|---:|---:|")
    all_seed, all_mix = [], []
    for lang in args.langs.split(","):
        x, y, seed_src, seed_tgt, gold = simulate(encoder, args.data, lang)
        seeded = calibrate_with_seeds(x, y, seed_src, seed_tgt, cfg)
        truth, counts = true_precision(x, y, gold, seeded.thresholds, cfg)
        mean_s, max_s = errors(seeded.precision, truth, counts)
        t90 = seeded.recommend(0.9)
        if t90 is None:
            at = "none"
        else:
            i = int(np.argmin(np.abs(seeded.thresholds - t90)))
            at = f"{100 * seeded.precision[i]:.1f} / {100 * truth[i]:.1f}"
        mixed = calibrate_without_gold(x, y, cfg)
        truth_m, counts_m = true_precision(x, y, gold, mixed.thresholds, cfg)
        mean_m, max_m = errors(mixed.precision, truth_m, counts_m)
        all_seed.append(mean_s)
        all_mix.append(mean_m)
        print(f"| {lang} | {mean_s:.1f} / {max_s:.1f} | {at} | {mean_m:.1f} / {max_m:.1f} |", flush=True)
    print(f"| mean | {np.mean(all_seed):.1f} | | {np.mean(all_mix):.1f} |")


if __name__ == "__main__":
    main()
