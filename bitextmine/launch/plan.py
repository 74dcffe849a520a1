"""``bitextmine plan``: what a pipeline will cost, before it runs.

Line counts come from the corpus itself (a newline count, no decoding). Throughputs
come from a quick calibration on this machine: the encoder embeds a sample of the
first shard, and a block matmul measures the exact-search speed. The rest is
arithmetic, stated per stage in ``basis`` so that a user can check it.
"""

from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass

import numpy as np

from bitextmine import defaults
from bitextmine.launch.config import PipelineConfig

GB = 1024**3
FILTER_PAIRS_PER_SECOND = 30_000  # measured by benchmarks/filter_speed.py on 2 cores
PQ_LOOKUPS_PER_SECOND = 1.5e9  # IVF-PQ code scanning on one CPU core, order of magnitude


@dataclass
class StageEstimate:
    stage: str
    tasks: int
    ram_gb: float  # per task, peak
    gpu_gb: float
    disk_gb: float  # written by the stage
    seconds: float  # wall time with the configured parallelism
    basis: str


def _rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def measure(cfg: PipelineConfig, device: str, sample_lines: int = 400, progress: bool = False) -> dict:
    """Throughputs on this machine: embedding (sentences/s) and exact search (GFLOP/s)."""
    import subprocess
    import sys

    import torch

    from bitextmine.devices import resolve_device
    from bitextmine.encoders import load_encoder
    from bitextmine.io.text import read_lines
    from bitextmine.progress import progress_bar

    device = resolve_device(device)
    bar = progress_bar(total=4, desc="calibrate", unit="step", disable=not progress)  # start, load, embed, search
    # every task is a fresh process: interpreter, torch and faiss imports, then its work
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch, faiss, numpy, bitextmine.cli"], check=True)
    startup = time.perf_counter() - start
    bar.update(1)
    before = _rss_gb()
    start = time.perf_counter()
    encoder = load_encoder(cfg.encoder, device=device, precision=cfg.embed.precision)
    first = next(iter(cfg.languages.values()))[0]
    lines = [x for x in read_lines(first, errors="replace")[:sample_lines] if x.strip()] or ["a sentence"]
    encoder.encode(lines[:32])
    model_load = time.perf_counter() - start
    bar.update(1)
    encoder.encode(lines)  # warm-up: the kernels of these batch shapes
    start = time.perf_counter()
    encoder.encode(lines)
    sps = len(lines) / max(time.perf_counter() - start, 1e-6)
    model_gb = max(_rss_gb() - before, 0.1)
    bar.update(1)
    a = torch.randn(4096, encoder.dim, device=device)
    b = torch.randn(4096, encoder.dim, device=device)
    (a @ b.T).sum().item()
    start = time.perf_counter()
    for _ in range(3):
        (a @ b.T).sum().item()
    gflops = 3 * 2 * 4096 * 4096 * encoder.dim / max(time.perf_counter() - start, 1e-6) / 1e9
    bar.update(1)
    bar.close()
    return {"device": device, "embed_sentences_per_second": sps, "knn_gflops": gflops, "dim": encoder.dim,
            "model_ram_gb": model_gb, "sample_lines": len(lines), "task_startup_seconds": startup,
            "model_load_seconds": model_load}


def _index_estimate(cfg: PipelineConfig, m: dict, rows: dict[str, int], workers: int) -> StageEstimate:
    """One index task per language part: k-means on the training sample, then assignment."""
    from bitextmine.index import choose_index_type

    dim = m["dim"]
    index_tasks, index_disk, index_ram, index_seconds = 0, 0.0, 0.0, 0.0
    for lang in sorted({x for p in cfg.pairs for x in p}):
        remaining = rows[lang]
        while remaining > 0:
            part = min(remaining, cfg.index.max_rows)
            remaining -= part
            index_tasks += 1
            factory = choose_index_type(part, dim) if cfg.index.type == "auto" else cfg.index.type
            lists = int(factory.split("IVF")[1].split(",")[0]) if "IVF" in factory else 0
            if lists:
                sample = max(defaults.TRAIN_SAMPLES_PER_LIST * lists, defaults.PQ_MIN_TRAIN_ROWS)
                flops = 25 * 2 * min(sample, part) * lists * dim + 2 * part * lists * dim
                disk = part * (defaults.PQ_BYTES + 8) + lists * dim * 4
                ram = disk + min(sample, part) * dim * 4
            else:
                flops, disk, ram = 0, part * (dim * 4 + 8), part * (dim * 4 + 8)
            index_disk += disk / GB
            index_ram = max(index_ram, ram / GB + 0.5)
            index_seconds += flops / (m["knn_gflops"] * 1e9) + part * dim * 2 / 2e9
    waves = -(-index_tasks // workers)
    return StageEstimate("index", index_tasks, index_ram, 0.0, index_disk,
                         index_seconds / workers + waves * m["task_startup_seconds"],
                         "k-means 25 iterations on the training sample + assignment, at the measured "
                         "GFLOP/s; Flat = the fp32 vectors")


def estimate(cfg: PipelineConfig, device: str = "auto", progress: bool = False) -> tuple[list[StageEstimate], dict]:
    from bitextmine.index import choose_index_type
    from bitextmine.io.text import count_lines

    m = measure(cfg, device, progress=progress)
    dim, gpu = m["dim"], m["device"].startswith("cuda")
    workers = max(1, cfg.launcher.workers or 1)
    lines = {lang: [count_lines(s) for s in shards] for lang, shards in cfg.languages.items()}
    sizes = {lang: [os.path.getsize(s) for s in shards] for lang, shards in cfg.languages.items()}
    rows = {lang: sum(v) for lang, v in lines.items()}
    total = sum(rows.values())
    out = []

    def waves(tasks: int) -> int:  # task start-ups paid one after the other
        return -(-tasks // workers)

    startup = m["task_startup_seconds"]

    # embed: one task per shard, run `workers` at a time
    shards = sum(len(v) for v in lines.values())
    largest = max(max(v) for v in lines.values())
    out.append(StageEstimate(
        "embed", shards,
        ram_gb=m["model_ram_gb"] + 0.4 + largest * (dim * 4 + 300) / GB,
        gpu_gb=(m["model_ram_gb"] + 1.0) if gpu else 0.0,
        disk_gb=total * dim * 2 / GB,
        seconds=total / m["embed_sentences_per_second"] / workers + waves(shards) * (startup + m["model_load_seconds"]),
        basis=f"{total:,} lines at {m['embed_sentences_per_second']:.0f} sent/s, {workers} worker(s), "
              f"{startup + m['model_load_seconds']:.1f} s start-up a task; fp16 rows"))

    if not cfg.index.exact:
        out.append(_index_estimate(cfg, m, rows, workers))

    # mine: per pair
    mine_seconds, mine_ram = 0.0, 0.0
    for src, tgt in cfg.pairs:
        n, mm = rows[src], rows[tgt]
        if cfg.index.exact:
            exact = True
        elif cfg.index.type == "auto":
            exact = all(choose_index_type(min(r, cfg.index.max_rows), dim) == "Flat" for r in (n, mm))
        else:
            exact = cfg.index.type == "Flat"
        if exact:
            mine_seconds += 2 * n * mm * dim / (m["knn_gflops"] * 1e9)
        else:
            lists = int(choose_index_type(cfg.index.max_rows if mm > cfg.index.max_rows else mm, dim)
                        .split("IVF")[1].split(",")[0])
            scanned = cfg.index.nprobe / lists
            mine_seconds += (n + mm) * 2 * lists * dim / (m["knn_gflops"] * 1e9)
            mine_seconds += (n * mm + mm * n) * scanned * defaults.PQ_BYTES / (PQ_LOOKUPS_PER_SECOND * 2)
        text_bytes = sum(sizes[src]) + sum(sizes[tgt])
        block = defaults.KNN_BLOCK_ROWS
        mine_ram = max(mine_ram, 0.6 + 3 * text_bytes / GB + (n + mm) * 2 * cfg.mine.k * 12 / GB
                       + block * block * 4 * 2 / GB + 2 * block * dim * 4 / GB)
    out.append(StageEstimate("mine", len(cfg.pairs), mine_ram, 0.0,
                             sum(min(rows[s], rows[t]) for s, t in cfg.pairs) * 200 / GB,
                             mine_seconds / min(workers, len(cfg.pairs)) + waves(len(cfg.pairs)) * startup,
                             "exact: 2·N·M·dim FLOP once for both directions; IVF-PQ: nprobe/lists of the codes"))

    # filter: per pair, at most one pair per source sentence
    pairs = sum(min(rows[s], rows[t]) for s, t in cfg.pairs)
    out.append(StageEstimate("filter", len(cfg.pairs), 0.3 + pairs * 400 / GB, 0.0, pairs * 200 / GB,
                             pairs / FILTER_PAIRS_PER_SECOND + waves(len(cfg.pairs)) * startup,
                             f"at most {pairs:,} pairs at {FILTER_PAIRS_PER_SECOND:,} pairs/s"))
    m["lines"] = {lang: int(np.sum(v)) for lang, v in lines.items()}
    return out, m


# --- on Slurm ---------------------------------------------------------------------------------

@dataclass
class SlurmStageEstimate:
    stage: str
    tasks: int
    arrays: int  # job arrays of at most launcher.slurm.max_array tasks
    cpus: int  # per task, as asked in resources.STAGE
    gpus: int
    mem_gb: float
    timeout_min: int
    concurrent: int  # tasks of this size the partition runs at once; 0: none fits
    task_seconds: float  # one task, as estimated on this machine
    seconds: float | None  # queue-free wall time: waves of `concurrent` tasks; None when nothing fits


def slurm_estimates(cfg: PipelineConfig, estimates: list[StageEstimate], partition) -> list[SlurmStageEstimate]:
    """Array sizes, resources per task and queue-free wall time of each stage on a Slurm partition.

    A stage's wall time is ceil(tasks / concurrent) x the time of one task, where
    ``concurrent`` is how many tasks of its size the partition's usable nodes hold at
    once (at most ``launcher.slurm.max_array``) and one task's time is the stage's
    estimate spread over its tasks (the estimate ran ``launcher.workers`` at a time).
    """
    from bitextmine.launch.slurm import concurrent_tasks

    workers = max(1, cfg.launcher.workers or 1)
    out = []
    for e in estimates:
        r = cfg.resources_for(e.stage)
        concurrent = min(concurrent_tasks(partition, r.cpus, r.mem_gb, r.gpus), cfg.launcher.slurm.max_array)
        task_seconds = e.seconds * min(workers, e.tasks) / max(e.tasks, 1)
        waves = -(-e.tasks // concurrent) if concurrent else None
        out.append(SlurmStageEstimate(e.stage, e.tasks, -(-e.tasks // cfg.launcher.slurm.max_array), r.cpus, r.gpus,
                                      r.mem_gb, r.timeout_min, concurrent, task_seconds,
                                      waves * task_seconds if waves is not None else None))
    return out
