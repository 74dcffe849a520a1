"""``bitextmine plan``: what a pipeline will cost, before it runs.

Line counts come from the corpus itself (a newline count, no decoding). Rates come
from a quick calibration on this machine (``measure``): a task's start-up (a fresh
process and its imports), loading the encoder and embedding a sample of the first
shard, exact kNN on a block of random vectors, FAISS's matrix products, a small index
of the configured type (training, adding, scanning its codes, re-ranking candidates)
and the filter on pairs of sample lines. ``estimate_from`` is the arithmetic, stated
per stage in ``basis`` so that a user can check it; it can also be given rates that
were measured elsewhere (another machine, a GPU).

Rates are for the whole calibrated machine (all its cores, or its GPU). A task with
``resources.cpus`` cores gets that share of them: on Slurm each task has its own; run
locally, ``launcher.workers`` tasks share the machine's cores.
"""

from __future__ import annotations

import math
import os
import re
import statistics
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from bitextmine import defaults
from bitextmine.launch.config import PipelineConfig

if TYPE_CHECKING:
    from bitextmine.embed.corpus import EmbeddingCorpus, SelectedRows

GB = 1024**3
# mine's text of a side (benchmarks/mine_text.py): while finding the distinct sentences, a
# shard's lines as Python strings (their bytes and ~60 bytes a string) and the side's digests
# and their sort (~80 bytes a line); kept for the rest of mine, two row arrays (16 bytes a line)
STR_BYTES = 60
DIGEST_BYTES_PER_LINE = 80
DISTINCT_BYTES_PER_LINE = 16
# per candidate of a block of index queries: the index's scores and ids, the ids mapped to rows,
# their exact cosines and best_distinct's sorting temporaries (counted from the code: ~70 bytes)
CANDIDATE_BYTES = 70
# per candidate pair (k a row of each side) in mine's one-to-one selection: the scored
# candidates of both directions, their union, its sort keys and order, the pairs by score
# (measured by benchmarks/selection.py: 106-118 bytes at 1M-10M a side; from 1M a side it
# is mine's peak)
SELECTION_BYTES = 120
PAIR_BYTES = 700  # a mined pair held by filter: the two texts, their normal forms, the Pair object


@dataclass
class StageEstimate:
    stage: str
    tasks: int
    ram_gb: float  # per task, peak
    gpu_gb: float
    disk_gb: float  # written by the stage
    seconds: float  # wall time with the configured parallelism
    basis: str


def _status_gb(field: str) -> float | None:
    """A memory figure of this process from /proc/self/status (VmRSS, VmHWM), None without /proc."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024 / GB
    except (OSError, ValueError):
        pass
    return None


def _peak_gb() -> float:
    """This process's peak resident memory since ``_reset_peak`` (since it started, where Linux
    cannot reset it). Not ``ru_maxrss``: that also keeps the peak of the process it was forked
    from, so a probe started by a large process would report the large one."""
    import resource

    peak = _status_gb("VmHWM")
    return peak if peak is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def _reset_peak() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current resident size
    except OSError:
        pass


def _resident_gb() -> float:
    """This process's resident memory now (its peak where /proc is missing)."""
    now = _status_gb("VmRSS")
    return now if now is not None else _peak_gb()


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


# --- calibration --------------------------------------------------------------------------

def measure(cfg: PipelineConfig, device: str, sample_lines: int = 400, progress: bool = False) -> dict:
    """Rates on this machine (see the module's docstring); every figure is for the whole machine."""
    from bitextmine.devices import resolve_device
    from bitextmine.progress import progress_bar

    device = resolve_device(device)
    with progress_bar(total=5, desc="calibrate", unit="step", disable=not progress) as bar:
        m = {"device": device, "cores": _cores(), **_startup(cfg)}
        bar.update(1)
        m.update(_embedding(cfg, device, sample_lines))
        bar.update(1)
        m.update(_exact_knn(device, m["dim"]))
        bar.update(1)
        m.update(_index_rates(cfg, m["dim"], m["knn_gflops"], device))
        bar.update(1)
        m.update(_filter_rate(cfg, sample_lines))
        m.update(_text_rate(cfg))
        bar.update(1)
    return m


# what ``bitextmine run`` imports before it starts a stage's tasks, and what a task imports beyond
# submitit's job runner (the stage functions; FAISS for index and mine). Embed and mine tasks
# import torch too; index and filter tasks do not.
_DRIVER_IMPORTS = ("bitextmine.cli, bitextmine.launch.runner, bitextmine.launch.pipeline, bitextmine.embed.corpus, "
                   "bitextmine.io.lock, bitextmine.progress, submitit")
_TASK_IMPORTS = "numpy, faiss, bitextmine.launch.pipeline"
# a probe's own peak in KiB: VmHWM, not ru_maxrss (see _peak_gb)
_RSS_PRINT = ("import os, resource\n"
              "print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:')) "
              "if os.path.exists('/proc/self/status') else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
# a filter task: its imports and language model, loaded as it loads them (on its first pairs)
_FILTER_PROBE = ("import numpy, bitextmine.launch.pipeline\n"
                 "from bitextmine.filter import FilterConfig, Pair, PairFilter\n"
                 "from bitextmine.filter.run import filter_pairs_to_files  # noqa\n"
                 "config = FilterConfig(src_lang={src!r}, tgt_lang={tgt!r})\n"
                 "list(PairFilter(config).run([Pair(1.2, {src_text!r}, {tgt_text!r})]))\n")


def _startup(cfg: PipelineConfig, repeats: int = 3) -> dict:
    """What a stage pays before its work: ``run``'s own start (a fresh process importing what it
    imports), a job through submitit's local executor (its controller, a process running a
    no-op, ``run`` seeing it end) and the gap submitit leaves between two submissions, and a
    task's imports with torch and without (a fresh process's wall time, start to exit, beyond
    an empty one's: torch also slows the exit), and a filter task's with its language model.
    Medians of ``repeats``: these move with the file cache and the machine's load."""
    import subprocess
    import sys
    import tempfile

    import submitit

    from bitextmine.launch.runner import POLL_SECONDS

    def timed(code: str) -> tuple[float, int]:
        start = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
        return time.perf_counter() - start, int(out.split()[-1]) if out.split() else 0

    def median(code: str) -> tuple[float, int]:
        runs = [timed(code) for _ in range(repeats)]
        return statistics.median(t for t, _ in runs), max(r for _, r in runs)

    def launched() -> tuple[float, float]:
        """(a job's submission to its end seen, the gap before the next submission returns)"""
        with tempfile.TemporaryDirectory() as folder:
            executor = submitit.LocalExecutor(folder=folder)
            executor.update_parameters(timeout_min=5)
            start = time.perf_counter()
            jobs = [executor.submit(int, 0)]
            jobs.append(executor.submit(int, 0))
            gap = time.perf_counter() - start
            while not all(job.done() for job in jobs):
                time.sleep(POLL_SECONDS["local"])
            return time.perf_counter() - start - gap, gap

    empty, _ = median("pass")
    driver, _ = median(f"import {_DRIVER_IMPORTS}")
    torchless, torchless_rss = median(f"import {_TASK_IMPORTS}\n{_RSS_PRINT}")
    with_torch, torch_rss = median(f"import {_TASK_IMPORTS}, torch\n{_RSS_PRINT}")
    src, tgt = cfg.pairs[0]
    lang_id = cfg.filter.lang_id and cfg.filter.enabled
    samples = _sample_lines(cfg, 1)
    filtering, filter_rss = median(_FILTER_PROBE.format(src=src if lang_id else None, tgt=tgt if lang_id else None,
                                                        src_text=samples[src][0], tgt_text=samples[tgt][0])
                                   + _RSS_PRINT)
    jobs = [launched() for _ in range(repeats)]
    return {"driver_startup_seconds": driver, "launch_seconds": statistics.median(t for t, _ in jobs),
            "submit_gap_seconds": statistics.median(gap for _, gap in jobs),
            "torchless_task_startup_seconds": max(torchless - empty, 0.0),
            "task_startup_seconds": max(with_torch - empty, 0.0),
            "torch_import_seconds": max(with_torch - torchless, 0.0),
            "filter_task_startup_seconds": max(filtering - empty, 0.0),
            "torchless_task_base_ram_gb": torchless_rss / 2**20, "task_base_ram_gb": torch_rss / 2**20,
            "filter_task_ram_gb": filter_rss / 2**20}


def _sample_lines(cfg: PipelineConfig, count: int) -> dict[str, list[str]]:
    """The non-blank lines among the first ``count`` of each language's first shard."""
    from itertools import islice

    from bitextmine.io.text import open_binary

    out = {}
    for lang, shards in cfg.languages.items():
        with open_binary(shards[0]) as f:
            lines = [raw.decode("utf-8", errors="replace").rstrip("\r\n") for raw in islice(f, count)]
        out[lang] = [x for x in lines if x.strip()] or ["a sentence"]
    return out


def _embedding(cfg: PipelineConfig, device: str, sample_lines: int) -> dict:
    import torch  # noqa: F401  (imported before the clock: a task's start-up counts it)

    from bitextmine.encoders import load_encoder

    before = _resident_gb()
    _reset_peak()
    start = time.perf_counter()
    encoder = load_encoder(cfg.encoder, device=device, precision=cfg.embed.precision)
    # by length, as embed sorts a shard's lines: batches of like lengths, little padding
    lines = sorted(next(iter(_sample_lines(cfg, sample_lines).values())), key=len)
    encoder.encode(lines[:32])
    model_load = time.perf_counter() - start
    encoder.encode(lines)  # warm-up: the kernels of these batch shapes
    start = time.perf_counter()
    encoder.encode(lines)
    return {"embed_sentences_per_second": len(lines) / max(time.perf_counter() - start, 1e-6),
            "model_load_seconds": model_load, "model_ram_gb": max(_peak_gb() - before, 0.1), "dim": encoder.dim,
            "sample_lines": len(lines)}


def _median_seconds(run, repeats: int = 3, best: bool = False) -> float:
    """The median wall time of ``repeats`` calls: one timing of a fraction of a second
    moved by half between calibrations on a shared machine. ``best``: the fastest call."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return max(min(times) if best else statistics.median(times), 1e-6)


def _exact_knn(device: str, dim: int, rows: int = 4096) -> dict:
    """Exact kNN both ways (vector pairs/s) and FAISS's matrix products (GFLOP/s); one way
    against stored rows is measured with them (``_stored_rows_rates``)."""
    import faiss

    from bitextmine.mine.knn import exact_knn_both_ways

    rng = np.random.default_rng(0)
    x = rng.standard_normal((rows, dim), dtype=np.float32)
    y = rng.standard_normal((2 * rows, dim), dtype=np.float32)
    exact_knn_both_ways(x[:256], y[:256], defaults.K, device=device)  # warm-up
    pairs_per_second = rows * 2 * rows / _median_seconds(lambda: exact_knn_both_ways(x, y, defaults.K, device=device))
    faiss.knn(x[:256], y, 1, metric=faiss.METRIC_INNER_PRODUCT)
    # the fastest of five: the median moved 88-165 GFLOP/s between calibrations on this 2-core
    # machine, and the index runs (minutes of FAISS alone in a process) matched the fastest
    seconds = _median_seconds(lambda: faiss.knn(x, y, 1, metric=faiss.METRIC_INNER_PRODUCT), repeats=5, best=True)
    gflops = 2 * rows * 2 * rows * dim / seconds / 1e9
    return {"knn_pairs_per_second": pairs_per_second, "knn_gflops": gflops}


def _index_rates(cfg: PipelineConfig, dim: int, gflops: float, device: str = "cpu", rows: int = 32768) -> dict:
    """Small indexes of the configured codes: vectors encoded/s; per query, the cost of each
    probed list and of each code scanned; and the stored vectors' rates (``_stored_rows_rates``)."""
    import faiss

    from bitextmine.index import choose_index_type

    factory = choose_index_type(2 * defaults.FLAT_MAX_ROWS, dim) if cfg.index.type == "auto" else cfg.index.type
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((rows, dim), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    queries = vectors[:4096]
    stored = _stored_rows_rates(queries, dim, device)
    if "IVF" not in factory:
        return {"encode_vectors_per_second": math.inf, "scan_codes_per_second": math.inf,
                "probe_seconds": 0.0, **stored}
    # two list counts over the same rows, nprobe 16: many codes a list, then few. A list
    # probed costs its look-up tables and a pass of the kernel whatever its length, so the
    # two searches separate that cost from the codes' (lists of 100-500 codes at 1-10M rows)
    seconds, encode = {}, math.inf
    for lists in (64, 512):
        index = faiss.index_factory(dim, re.sub(r"IVF\d+", f"IVF{lists}", factory), faiss.METRIC_INNER_PRODUCT)
        faiss.extract_index_ivf(index).cp.niter = 4  # the lists' quality does not matter here
        index.train(vectors[: max(64 * lists, defaults.PQ_MIN_TRAIN_ROWS)])
        start = time.perf_counter()
        index.add(vectors)
        assign = rows * lists * dim * 2 / (gflops * 1e9)  # the coarse assignment's share
        if lists == 64:
            encode = rows / max(time.perf_counter() - start - assign, 1e-6)
        faiss.extract_index_ivf(index).nprobe = 16
        start = time.perf_counter()
        index.search(queries, defaults.INDEX_CANDIDATES)
        seconds[lists] = max(time.perf_counter() - start - len(queries) * lists * dim * 2 / (gflops * 1e9), 1e-6)
    codes = {lists: rows * 16 / lists for lists in seconds}  # scanned a query
    per_code = max((seconds[64] - seconds[512]) / len(queries) / (codes[64] - codes[512]), 1e-12)
    per_probe = max((seconds[512] / len(queries) - codes[512] * per_code) / 16, 0.0)
    return {"encode_vectors_per_second": encode, "scan_codes_per_second": 1 / per_code, "probe_seconds": per_probe,
            **stored}


def _stored_rows_rates(queries: np.ndarray, dim: int, device: str = "cpu", rows: int = 131_072) -> dict:
    """Rates of work on stored fp16 vectors, measured on a memory-mapped file of ``rows``:
    reading it block by block to fp32 with the blank-row check (an index adds every row),
    gathering a sorted random half (its training sample), hashing it (sets are verified
    when loaded); re-ranking candidates as mine meets them (rows gathered at random, their
    cosines, the best k kept; a gather after the pages were released costs about the same:
    they are still in the page cache); and exact search one way against the stored rows
    (mine's exact margins and its decoy), a block of the file at a time."""
    import tempfile

    from bitextmine.embed.corpus import release_pages
    from bitextmine.embed.embedding_set import row_is_blank
    from bitextmine.io.text import file_sha256
    from bitextmine.mine.knn import exact_knn

    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory(prefix="bitextmine-plan-") as tmp:
        path = f"{tmp}/rows.npy"
        array = np.lib.format.open_memmap(path, mode="w+", dtype=np.float16, shape=(rows, dim))
        for start in range(0, rows, 16_384):
            block = rng.standard_normal((min(16_384, rows - start), dim), dtype=np.float32)
            array[start : start + len(block)] = block / np.linalg.norm(block, axis=1, keepdims=True)
        array.flush()
        del array
        array = np.load(path, mmap_mode="r")
        stored = _StoredRows(array)

        def read_blocks():
            for first in range(0, rows, defaults.SHARD_BLOCK_ROWS):
                block = np.asarray(array[first : first + defaults.SHARD_BLOCK_ROWS])
                np.ascontiguousarray(block[~row_is_blank(block)], dtype=np.float32)
            release_pages(array)

        read = rows / _median_seconds(read_blocks)  # one timing of it moved 2x between calibrations
        picked = np.sort(rng.choice(rows, rows // 2, replace=False))
        start = time.perf_counter()
        sample = np.asarray(array[picked], dtype=np.float32)
        sample[~row_is_blank(sample)]
        release_pages(array)
        gather = len(picked) / max(time.perf_counter() - start, 1e-6)
        start = time.perf_counter()
        file_sha256(path)
        hashing = rows * dim * 2 / max(time.perf_counter() - start, 1e-6)
        rerank_rate = _rerank_rate(queries, stored)
        # exact search one way against the stored rows (fp16, widened a block at a time)
        x = np.ascontiguousarray(queries[:2048])
        exact_knn(x[:256], stored[:8192], defaults.K + 2, device=device)  # warm-up
        one_way = len(x) * rows / _median_seconds(lambda: exact_knn(x, stored, defaults.K + 2, device=device))
        release_pages(array)
    return {"read_rows_per_second": read, "sample_rows_per_second": gather, "hash_bytes_per_second": hashing,
            "rerank_per_second": rerank_rate, "knn_one_way_pairs_per_second": one_way}


def _rerank_rate(queries: np.ndarray, database) -> float:
    """Candidates/s re-ranked as ``index_knn`` does: rows gathered at random from
    ``database``, their cosines, the best k kept (the first of three timings maps the pages in)."""
    from bitextmine.mine.knn import best_distinct, exact_sims

    ids = np.random.default_rng(2).integers(0, len(database), (len(queries), defaults.INDEX_CANDIDATES))
    return ids.size / _median_seconds(lambda: best_distinct(exact_sims(queries, database, ids), ids, defaults.K))


@dataclass
class EmbeddedSide:
    corpus: EmbeddingCorpus
    rows: SelectedRows  # the rows that are not blank lines, as mine reads them


def embedded_sides(cfg: PipelineConfig, languages=None) -> dict[str, EmbeddedSide]:
    """The ``languages`` (default: all) whose embedding sets all exist, each found once: telling
    the blank rows apart reads every vector (2 GB at 2M rows)."""
    from bitextmine.embed.corpus import EmbeddingCorpus, SelectedRows
    from bitextmine.errors import BitextmineError
    from bitextmine.launch.pipeline import embed_dirs

    sides = {}
    for lang in languages or cfg.languages:
        try:
            corpus = EmbeddingCorpus.load(embed_dirs(cfg, lang), verify=False)
        except (BitextmineError, OSError):  # not embedded yet (or not all of it)
            continue
        sides[lang] = EmbeddedSide(corpus, SelectedRows(corpus, corpus.non_blank_ids()))
    return sides


def rates_on_embedded_sets(cfg: PipelineConfig, sides: dict[str, EmbeddedSide] | None = None) -> dict:
    """Re-ranking measured again against the largest side's own vectors, when its embedding
    sets exist: gathering random rows slows as the mapping grows (at 1M rows 0.8x the rate
    on the calibration's 128 MB file), and that side is what mine gathers from."""
    from bitextmine.mine.knn import as_float32

    sides = embedded_sides(cfg) if sides is None else sides
    if any(lang not in sides for lang in cfg.languages):
        return {}
    lang, largest = max(sides.items(), key=lambda side: side[1].corpus.total_rows)
    database = largest.rows
    if len(database) < defaults.RERANK_GATHER_ROWS:
        return {}
    queries = as_float32(database[: 8192])
    return {"rerank_per_second": _rerank_rate(queries, database),
            "rerank_measured_on": f"{lang}: {len(database):,} rows"}


class _StoredRows:
    """A memory-mapped array read as mine reads a side (``SelectedRows``): every read,
    a slice too, gathers its rows into a new array."""

    def __init__(self, array: np.ndarray):
        self.array, self.shape, self.rows = array, array.shape, np.arange(len(array))

    def __len__(self) -> int:
        return len(self.array)

    def __getitem__(self, key) -> np.ndarray:
        return self.array[self.rows[key]]


def _text_rate(cfg: PipelineConfig) -> dict:
    """Lines/s of reading a shard's text and keeping its distinct sentences, as mine does
    (``mine.unique_sentences``), on the first shard of the first language."""
    from bitextmine.io.text import read_shard
    from bitextmine.mine import line_digests

    start = time.perf_counter()
    lines = read_shard(next(iter(cfg.languages.values()))[0], errors="replace").lines  # checksummed, as mine reads
    digests, blank = line_digests(lines)
    present = digests[~blank]
    np.lexsort((present[:, 1], present[:, 0]))
    return {"text_lines_per_second": max(len(lines), 1) / max(time.perf_counter() - start, 1e-6)}


def _filter_rate(cfg: PipelineConfig, sample_lines: int) -> dict:
    """Pairs/s of the configured filter on pairs made of the first pair's lines: in one process
    (a task's input below ``FILTER_PARALLEL_MIN_PAIRS`` pairs) and with a worker per CPU (the
    whole machine's rate, at and above it)."""
    from bitextmine.filter import FilterConfig, Pair, PairFilter

    src, tgt = cfg.pairs[0]
    lines = _sample_lines(cfg, defaults.FILTER_PARALLEL_MIN_PAIRS)
    # lines i of both sides, with the same number in place of theirs: mined pairs are mostly
    # translations, whose numbers agree (checking numbers that differ reads every spelled-out
    # numeral, 2x slower), and are distinct (deduplication keeps them all)
    digits = re.compile(r"\d+")
    pairs = [Pair(1.2, digits.sub("", lines[src][i % len(lines[src])]) + f" {i}",
                  digits.sub("", lines[tgt][i % len(lines[tgt])]) + f" {i}")
             for i in range(defaults.FILTER_PARALLEL_MIN_PAIRS)]
    lang_id = cfg.filter.lang_id and cfg.filter.enabled
    filter_cfg = FilterConfig(src_lang=src if lang_id else None, tgt_lang=tgt if lang_id else None)
    list(PairFilter(filter_cfg).run(pairs[:50]))  # warm-up: the language model loads (its cost: _startup)
    few = pairs[: 20 * sample_lines]
    one = _median_seconds(lambda: list(PairFilter(filter_cfg).run(few, workers=1)), repeats=1)
    every = _median_seconds(lambda: list(PairFilter(filter_cfg).run(pairs)), repeats=1)
    return {"filter_one_process_pairs_per_second": len(few) / one, "filter_pairs_per_second": len(pairs) / every}


def _filter_seconds(pairs: float, m: dict, share: float) -> float:
    """One filter task's pairs at ``share`` of the machine: below ``FILTER_PARALLEL_MIN_PAIRS``
    it judges them in its own process (one core at most), from there in a worker per CPU."""
    if pairs < defaults.FILTER_PARALLEL_MIN_PAIRS:
        return pairs / (m["filter_one_process_pairs_per_second"] * min(1.0, share * m["cores"]))
    return pairs / (m["filter_pairs_per_second"] * share)


# --- the arithmetic ---------------------------------------------------------------------------

@dataclass(frozen=True)
class IndexShape:
    factory: str
    lists: int  # 0: no IVF (exact)
    code_bytes: int  # per vector, plus an 8-byte id
    train_sample: int


def index_shape(rows: int, dim: int, cfg: PipelineConfig) -> IndexShape:
    import faiss

    from bitextmine.index import choose_index_type, default_train_sample, ivf_lists

    factory = choose_index_type(rows, dim) if cfg.index.type == "auto" else cfg.index.type
    index = faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT)
    lists = ivf_lists(index) or 0
    if not lists:
        return IndexShape(factory, 0, dim * 4, 0)
    sample = min(rows, cfg.index.train_sample or default_train_sample(lists))
    return IndexShape(factory, lists, faiss.extract_index_ivf(index).code_size, sample)


def _share(cfg: PipelineConfig, stage: str, tasks: int, m: dict, launcher: str) -> tuple[int, float]:
    """(tasks running at once, the share of the calibrated machine's rates each one gets)."""
    if m["device"].startswith("cuda") and stage == "embed":
        return min(tasks, cfg.launcher.workers or 1), 1.0  # a GPU each
    cpus = cfg.resources_for(stage).cpus
    if launcher == "slurm":
        return min(tasks, cfg.launcher.slurm.max_array), cpus / m["cores"]
    together = min(tasks, cfg.launcher.workers or 1)
    return together, min(cpus * together, m["cores"]) / m["cores"] / together


def _stage_seconds(work: list[float], start: float, together: int, share: float, stagger: float = 0.0) -> float:
    """Wall time of tasks of ``work`` seconds (at the whole machine's rates) run ``together`` at a
    time, each started ``stagger`` seconds after the one before it (submitit's pace, locally)."""
    each = [start + w / share for w in work]
    return max(sum(each) / together, max(each)) + stagger * (min(together, len(work)) - 1)


def _run_stage_seconds(cfg: PipelineConfig, stage: str, m: dict, launcher: str, work: list[float], start: float,
                       together: int, share: float) -> float:
    """A stage as ``run --stage`` runs it: ``run``'s own start, then its tasks (``_stage_seconds``),
    submitted submitit's gap apart when local."""
    stagger = m["submit_gap_seconds"] if launcher == "local" else 0.0
    return _driver_seconds(cfg, stage, m, launcher) + _stage_seconds(work, start, together, share, stagger)


def _task_start(m: dict, torch: bool) -> float:
    """A task's start-up: submitit's job, then what the task imports (embed and mine tasks import
    torch, index and filter tasks do not)."""
    return m["launch_seconds"] + (m["task_startup_seconds"] if torch else m["torchless_task_startup_seconds"])


def _task_base_ram(m: dict, torch: bool) -> float:
    return m["task_base_ram_gb"] if torch else m["torchless_task_base_ram_gb"]


def _driver_seconds(cfg: PipelineConfig, stage: str, m: dict, launcher: str) -> float:
    """``run``'s own start before a stage's tasks (counted in each stage, as ``run --stage`` runs
    it): its imports, and torch's where the stage asks for GPUs and they are looked for here."""
    seconds = m["driver_startup_seconds"]
    if launcher == "local" and cfg.resources_for(stage).gpus:
        seconds += m["torch_import_seconds"]
    return seconds


def _train_seconds(shape: IndexShape, dim: int, m: dict) -> float:
    """k-means (faiss: 10 iterations over at most 256 points a list) and the codebooks."""
    points = min(shape.train_sample, 256 * shape.lists)
    kmeans = 10 * points * shape.lists * dim * 2
    sub = max(1, shape.code_bytes // 32) * 64 if "x4fs" in shape.factory else shape.code_bytes
    centroids = 16 if "x4fs" in shape.factory else 256
    codebooks = 25 * sub * min(points, 256 * centroids) * centroids * (dim / sub) * 2 if "PQ" in shape.factory else 0
    return (kmeans + codebooks) / (m["knn_gflops"] * 1e9)


def _index_estimate(cfg: PipelineConfig, m: dict, rows: dict[str, int], launcher: str) -> StageEstimate:
    """One task per language part: read the vectors, train on a sample, assign and encode every row."""
    dim = m["dim"]
    work, ram, disk = [], 0.0, 0.0
    shapes = set()
    for lang in sorted({x for p in cfg.pairs for x in p}):
        remaining = rows[lang]
        while remaining > 0:
            part = min(remaining, cfg.index.max_rows)
            remaining -= part
            shape = index_shape(part, dim, cfg)
            shapes.add(shape.factory)
            add = part * shape.lists * dim * 2 / (m["knn_gflops"] * 1e9) + part / m["encode_vectors_per_second"]
            read = part / m["read_rows_per_second"] + part * dim * 2 / m["hash_bytes_per_second"]
            if shape.lists:
                work.append(_train_seconds(shape, dim, m) + shape.train_sample / m["sample_rows_per_second"]
                            + add + read)
            else:
                work.append(read)
            held = part * (shape.code_bytes + 8) + shape.lists * dim * 4
            # sampling and training hold the sample (fp32; FAISS subsamples for the codebooks) and
            # the pages of a block being gathered; adding, a block's mapped pages, its copy (fp16)
            # and its fp32 rows
            phase = max(shape.train_sample * dim * 4 + min(2**26, part * dim * 2),
                        min(defaults.SHARD_BLOCK_ROWS, part) * dim * (2 + 2 + 4))
            ram = max(ram, _task_base_ram(m, torch=False) + (held + phase) / GB)
            disk += held / GB
    together, share = _share(cfg, "index", len(work), m, launcher)
    seconds = _run_stage_seconds(cfg, "index", m, launcher, work, _task_start(m, torch=False), together, share)
    if shapes == {"Flat"}:  # no lists to train: the vectors are read, checked and stored
        how = f"Flat: every row read ({m['read_rows_per_second']:,.0f}/s) and stored"
    else:
        how = (f"{', '.join(sorted(shapes))}: k-means (10 iterations) on the sample, then every row assigned "
               f"({m['knn_gflops']:.0f} GFLOP/s) and encoded ({m['encode_vectors_per_second']:,.0f}/s)")
    return StageEstimate("index", len(work), ram, 0.0, disk, seconds, how)


def _search_seconds(queries: int, rows: int, shape: IndexShape, cfg: PipelineConfig, m: dict) -> float:
    """One direction through an index: coarse assignment, scanning the probed lists, re-ranking."""
    dim = m["dim"]
    nprobe = cfg.mine.nprobe or cfg.index.nprobe
    if not shape.lists:  # a Flat index: FAISS brute force
        return queries * rows * dim * 2 / (m["knn_gflops"] * 1e9)
    probed = min(nprobe, shape.lists)
    scanned = rows * probed / shape.lists
    return queries * (shape.lists * dim * 2 / (m["knn_gflops"] * 1e9) + probed * m.get("probe_seconds", 0.0)
                      + scanned / m["scan_codes_per_second"] + defaults.INDEX_CANDIDATES / m["rerank_per_second"])


def _mine_estimate(cfg: PipelineConfig, m: dict, lines: dict[str, list[int]], text_bytes: dict[str, int],
                   launcher: str, shares: dict[tuple[str, str], MinedShare]) -> StageEstimate:
    """One task per pair: read both sides' text, search both ways (exactly or through the indexes), score."""
    from bitextmine.embed.corpus import mapped_resident_ceiling

    dim, k = m["dim"], cfg.mine.k
    rows = {lang: sum(count) for lang, count in lines.items()}
    work, ram = [], 0.0
    basis = set()
    for src, tgt in cfg.pairs:
        n, mm = rows[src], rows[tgt]
        mined = shares[(src, tgt)]
        # the larger side mapped up to its budget and a gather's window (one side at a time is)
        one_side_mapped = max(mapped_resident_ceiling(rows[x] * dim * 2) for x in (src, tgt))
        if cfg.index.exact:
            work.append(n * mm / m["knn_pairs_per_second"])
            basis.add(f"exact: N x M / {m['knn_pairs_per_second']:.3g} vector pairs/s")
            # both sides walked a block at a time, each kept mapped up to its budget
            searched = _exact_block_bytes(n, mm) + sum(
                mapped_resident_ceiling(rows[x] * dim * 2, defaults.KNN_BLOCK_ROWS * dim * 2) for x in (src, tgt))
        else:
            work.append(_through_indexes(n, rows[tgt], cfg, m) + _through_indexes(mm, rows[src], cfg, m))
            basis.add(f"through the indexes: coarse assignment, {cfg.mine.nprobe or cfg.index.nprobe} lists "
                      f"scanned ({m['scan_codes_per_second']:.3g} codes/s), {defaults.INDEX_CANDIDATES} candidates "
                      f"a query re-ranked ({m['rerank_per_second']:.3g}/s)")
            held = max(min(rows[x], cfg.index.max_rows) * (index_shape(min(rows[x], cfg.index.max_rows), dim, cfg)
                                                            .code_bytes + 8) for x in (src, tgt))
            # while re-ranking: a block of queries widened (fp32; its fp16 read and mapped pages are
            # gone by then), its candidates' lists and their temporaries, the rows gathered to
            # re-rank them (fp16) and their fp32 buffer, and the side gathered from mapped up to
            # its budget and a window
            queries = min(defaults.INDEX_QUERY_ROWS, max(n, mm))
            gathered = min(defaults.RERANK_GATHER_ROWS, queries * defaults.INDEX_CANDIDATES, max(n, mm))
            searched = (held + queries * (dim * 4 + defaults.INDEX_CANDIDATES * CANDIDATE_BYTES) + gathered * dim * 6
                        + one_side_mapped)
            if cfg.mine.exact_margins and cfg.mine.score not in ("cosine", "absolute"):
                # after the search, the exact blocks of the kept pairs' rows, and one side mapped up to
                # its budget (the kept rows are gathered from one side, released, the other walked)
                searched = max(searched, _exact_block_bytes(round(mined.share * min(n, mm)), max(n, mm))
                               + one_side_mapped)
                # the kept pairs' rows searched again exactly, each against the other side
                rate = m["knn_one_way_pairs_per_second"]
                work[-1] += mined.share * min(n, mm) * (n + mm) / rate
                basis.add(f"exact margins: {mined.share:.1%} of the smaller side's rows kept in pairs ({mined.how}), "
                          "each side's searched exactly against the other")
        if cfg.mine.threshold is None:  # the threshold is chosen on the pools: the estimate's search
            rate = m["knn_one_way_pairs_per_second"]
            work[-1] += (_estimate_queries(n) * mm + _estimate_queries(mm) * n) / rate
            basis.add("no threshold given: a sample of each side searched exactly against the other (the estimate)")
            # (sampled rows of a side gathered and searched against the other side, kept mapped)
            searched = max(searched, _exact_block_bytes(max(n, mm), max(n, mm))
                           + one_side_mapped)
        work[-1] += (n + mm) / m["text_lines_per_second"]  # the text, read and its distinct sentences kept
        work[-1] += (n + mm) * dim * 2 / m["hash_bytes_per_second"]  # the embedding sets verified when loaded
        # reading the text: the largest shard as strings, the side's digests and their sort
        reading = max(max(count) * (text_bytes[lang] / max(sum(count), 1) + STR_BYTES) + sum(count) *
                      DIGEST_BYTES_PER_LINE for lang, count in ((src, lines[src]), (tgt, lines[tgt])))
        # then the distinct sentences' rows, the neighbour lists, the search, and after it the
        # one-to-one selection over every candidate pair
        selecting = (n + mm) * k * SELECTION_BYTES
        held = (n + mm) * DISTINCT_BYTES_PER_LINE + (n + mm) * k * 12 * 2 + max(searched, selecting)
        ram = max(ram, m["task_base_ram_gb"] + max(reading, held) / GB)
    together, share = _share(cfg, "mine", len(work), m, launcher)
    seconds = _run_stage_seconds(cfg, "mine", m, launcher, work, _task_start(m, torch=True), together, share)
    pairs = sum(min(rows[s], rows[t]) * shares[(s, t)].share for s, t in cfg.pairs)
    return StageEstimate("mine", len(cfg.pairs), ram, 0.0, pairs * 200 / GB, seconds, "; ".join(sorted(basis)))


def _exact_block_bytes(queries: int, rows: int) -> int:
    """Exact search's similarity block and its top-k temporaries (about twice the block)."""
    return 2 * min(defaults.KNN_BLOCK_ROWS, queries) * min(defaults.KNN_BLOCK_ROWS, rows) * 4


def _through_indexes(queries: int, rows: int, cfg: PipelineConfig, m: dict) -> float:
    """``queries`` searched through the indexes of a side of ``rows`` (one per ``index.max_rows``)."""
    part = min(rows, cfg.index.max_rows)
    shape = index_shape(part, m["dim"], cfg)
    return sum(_search_seconds(queries, min(part, rows - p), shape, cfg, m) for p in range(0, rows, part))


def _estimate_queries(rows: int) -> int:
    """Rows of one side searched against the other when mine chooses the threshold (a sample,
    see mine/no_gold.py query_gaps)."""
    return min(rows, defaults.ESTIMATE_QUERIES)


@dataclass(frozen=True)
class MinedShare:
    """Pairs mine keeps per row of a language pair's smaller side, and where the figure comes from."""

    share: float
    how: str  # "assumed", "given", or how it was sampled


def sampled_mined_share(cfg: PipelineConfig, pair: tuple[str, str], device: str,
                        budget_pairs: int = defaults.PLAN_SHARE_SAMPLE_PAIRS,
                        sides: dict[str, EmbeddedSide] | None = None) -> MinedShare | None:
    """The share of ``pair``'s smaller side that mine will keep, measured on a sample when
    both sides' embedding sets exist (None when they do not).

    Rows sampled from each side are searched exactly against the other side, their k
    candidates against the first side (for the candidates' neighbourhood means), and each
    candidate pair scored as mine scores it, against the pipeline's threshold (when mine is
    to choose one, the encoder's fixed threshold stands in for it). A row counts when one of
    its candidates passes. Mine pairs rows found from either side, so each side's counted
    rows make pairs, except that a pair found from both sides (the row is among its best
    candidate's own k nearest) is one pair: those count half from each side. The share
    falls as pools grow (nearer neighbours, lower margins), so it is measured against the
    whole other side. Rows are sampled in doubling rounds until ``PLAN_SHARE_SAMPLE_PASSING``
    of them count or the budget of vector pairs is spent; the sampling error is about
    1 / sqrt(rows counted), stated with the figure.
    """
    from bitextmine.mine.knn import as_float32, exact_knn
    from bitextmine.mine.scoring import margin_scores
    from bitextmine.mine.thresholds import fixed_threshold

    sides = embedded_sides(cfg, pair) if sides is None else sides
    if any(lang not in sides for lang in pair):
        return None
    corpora = [sides[lang].corpus for lang in pair]
    x, y = (sides[lang].rows for lang in pair)
    n, m, k = len(x), len(y), cfg.mine.k
    if not n or not m:
        return None
    threshold = cfg.mine.threshold
    if threshold is None:
        threshold = fixed_threshold(cfg.mine.score, corpora[0].encoder, corpora[1].encoder)[0]
    fewest, most = defaults.PLAN_SHARE_SAMPLE_ROWS
    allowed = max(fewest, min(most, budget_pairs // ((1 + k) * (n + m))))
    rng = np.random.default_rng(defaults.SEED)
    order = [rng.permutation(n)[: min(allowed, n)], rng.permutation(m)[: min(allowed, m)]]

    def counted(a, b, rows: np.ndarray) -> np.ndarray:
        """(rows with a passing candidate in ``b``, those whose best passing candidate has
        the row among its own k nearest in ``a``) for sampled ``rows`` of ``a``."""
        rows = np.sort(rows)
        found = exact_knn(as_float32(a[rows]), b, k, device=device)
        valid = found.ids >= 0
        candidates, where = np.unique(found.ids[valid], return_inverse=True)
        back = exact_knn(as_float32(b[candidates]), a, k, device=device)
        their_means = np.zeros(found.ids.shape, dtype=np.float32)
        their_means[valid] = back.mean_sim()[where]
        their_rows = np.full(found.ids.shape + (k,), -1, dtype=np.int64)
        their_rows[valid] = back.ids[where]
        scores = np.where(valid, margin_scores(found.sims, found.mean_sim()[:, None], their_means, cfg.mine.score),
                          -np.inf)
        passes = scores.max(axis=1) >= threshold
        best = scores.argmax(axis=1)
        mutual = (their_rows[np.arange(len(rows)), best] == rows[:, None]).any(axis=1)
        return np.array([passes.sum(), (passes & mutual).sum()])

    tally = [np.zeros(2, dtype=np.int64), np.zeros(2, dtype=np.int64)]  # per side: (passing, mutual)
    taken = 0
    while taken < max(len(o) for o in order):
        step = max(fewest, taken)  # doubling rounds
        for side, (a, b) in enumerate(((x, y), (y, x))):
            if taken < len(order[side]):
                tally[side] += counted(a, b, order[side][taken : taken + step])
        taken += step
        if tally[0][0] + tally[1][0] >= defaults.PLAN_SHARE_SAMPLE_PASSING:
            break
    sampled = [min(taken, len(o)) for o in order]
    pairs = sum(size * t[0] * (1 - t[1] / max(t[0], 1) / 2) / rows
                for size, t, rows in zip((n, m), tally, sampled, strict=True))
    smaller = min(n, m)
    share = min(pairs, smaller) / smaller
    passing = int(tally[0][0] + tally[1][0])
    error = f"+-{100 / math.sqrt(passing):.0f}%" if passing else "none passed"
    return MinedShare(share, f"sampled: {sampled[0]:,} + {sampled[1]:,} rows, {passing} with a passing candidate "
                             f"({error}), at threshold {threshold:g}")


def mined_shares(cfg: PipelineConfig, device: str, given: float | None = None,
                 sides: dict[str, EmbeddedSide] | None = None) -> dict[tuple[str, str], MinedShare]:
    """Each pair's share: ``given``; else sampled where its embedding sets exist; else assumed."""
    if given is not None:
        return {pair: MinedShare(given, "given") for pair in map(tuple, cfg.pairs)}
    sides = embedded_sides(cfg) if sides is None else sides
    assumed = MinedShare(defaults.PLAN_MINED_SHARE, "assumed")
    return {pair: sampled_mined_share(cfg, pair, device, sides=sides) or assumed for pair in map(tuple, cfg.pairs)}


def _shares_by_pair(cfg: PipelineConfig, mined_share) -> dict[tuple[str, str], MinedShare]:
    if isinstance(mined_share, dict):
        return mined_share
    return {tuple(pair): MinedShare(mined_share, "assumed") for pair in cfg.pairs}


def estimate_from(cfg: PipelineConfig, m: dict, lines: dict[str, list[int]], text_bytes: dict[str, int],
                  launcher: str = "local", mined_share: float | dict = defaults.PLAN_MINED_SHARE
                  ) -> list[StageEstimate]:
    """Per-stage estimates from rates ``m`` (as ``measure`` returns) and the shards' line counts.

    ``mined_share``: one share for every pair (assumed), or ``mined_shares``' figures.
    """
    shares = _shares_by_pair(cfg, mined_share)
    dim, gpu = m["dim"], m["device"].startswith("cuda")
    rows = {lang: sum(v) for lang, v in lines.items()}
    start = _task_start(m, torch=True) + m["model_load_seconds"]
    shards = [n for v in lines.values() for n in v]
    together, share = _share(cfg, "embed", len(shards), m, launcher)
    sorted_rows = min(max(shards), defaults.EMBED_SORT_CHUNK_LINES)  # held at once: text and vectors
    out = [StageEstimate(
        "embed", len(shards),
        ram_gb=m["task_base_ram_gb"] + m["model_ram_gb"] + sorted_rows * (dim * 4 + 300) / GB,
        gpu_gb=(m["model_ram_gb"] + 1.0) if gpu else 0.0,
        disk_gb=sum(rows.values()) * dim * 2 / GB,
        seconds=_run_stage_seconds(cfg, "embed", m, launcher, [n / m["embed_sentences_per_second"] for n in shards],
                                   start, together, share),
        basis=f"{sum(rows.values()):,} lines at {m['embed_sentences_per_second']:.0f} sent/s, {together} task(s) "
              f"at once with {share:.0%} of the rate each, {start:.1f} s start-up a task")]
    if not cfg.index.exact:
        out.append(_index_estimate(cfg, m, rows, launcher))
    out.append(_mine_estimate(cfg, m, lines, text_bytes, launcher, shares))
    pairs = [min(rows[s], rows[t]) * shares[(s, t)].share for s, t in cfg.pairs]
    how = sorted({f"{x.share:.1%} of the smaller side, {x.how}" for x in shares.values()})
    together, share = _share(cfg, "filter", len(pairs), m, launcher)
    start = m["launch_seconds"] + m["filter_task_startup_seconds"]
    out.append(StageEstimate(
        "filter", len(cfg.pairs), m["filter_task_ram_gb"] + max(pairs) * PAIR_BYTES / GB, 0.0,
        sum(pairs) * 200 / GB,
        _run_stage_seconds(cfg, "filter", m, launcher, [_filter_seconds(p, m, share) for p in pairs], start,
                           together, 1.0),
        f"{sum(pairs):,.0f} pairs ({'; '.join(how)}) at {m['filter_one_process_pairs_per_second']:,.0f} pairs/s "
        f"in one process, {m['filter_pairs_per_second']:,.0f} with a worker per CPU (a task's "
        f"{defaults.FILTER_PARALLEL_MIN_PAIRS:,} pairs and more)"))
    return out


def estimate(cfg: PipelineConfig, device: str = "auto", progress: bool = False, launcher: str = "local",
             mined_share: float | None = None, remeasure: bool = False) -> tuple[list[StageEstimate], dict]:
    """Calibrate (or take this machine's kept calibration, unless ``remeasure``), count the
    lines, and estimate every stage. ``mined_share``: given for every pair; None: sampled
    where the embedding sets exist, else ``defaults.PLAN_MINED_SHARE``."""
    from bitextmine.devices import resolve_device
    from bitextmine.io.text import count_lines
    from bitextmine.launch.plan_cache import cached_measure

    device = resolve_device(device)
    m = cached_measure(cfg, device, lambda: measure(cfg, device, progress=progress), remeasure)
    sides = embedded_sides(cfg)
    m.update(rates_on_embedded_sets(cfg, sides))
    shares = mined_shares(cfg, m["device"], mined_share, sides)
    m["mined_share"] = {f"{s}-{t}": {"share": v.share, "how": v.how} for (s, t), v in shares.items()}
    lines = {lang: [count_lines(s) for s in shards] for lang, shards in cfg.languages.items()}
    text_bytes = {lang: sum(os.path.getsize(s) for s in shards) for lang, shards in cfg.languages.items()}
    m["lines"] = {lang: int(np.sum(v)) for lang, v in lines.items()}
    return estimate_from(cfg, m, lines, text_bytes, launcher, shares), m


def total(estimates: list[StageEstimate]) -> StageEstimate:
    """The whole pipeline: stages run one after another, so times and disk add up and the
    peaks are the largest stage's."""
    return StageEstimate("total", sum(e.tasks for e in estimates), max(e.ram_gb for e in estimates),
                         max(e.gpu_gb for e in estimates), sum(e.disk_gb for e in estimates),
                         sum(e.seconds for e in estimates), "stages one after another: times and disk add up, "
                                                            "RAM and GPU memory are the largest stage's")


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
