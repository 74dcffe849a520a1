"""``plan``'s calibration: rates measured on this machine, for the cost model (``costs``).

A task's start-up (a fresh process and its imports), loading the encoder and embedding a
sample of the first shard, exact kNN on a block of random vectors, FAISS's matrix products,
a small index of the configured type (training, adding, scanning its codes, re-ranking
candidates), stored vectors read, gathered and hashed, the no-gold estimate's fits on
made-up gaps, and the filter on pairs of sample lines. Line counts come from the corpus
itself (a newline count, no decoding).
"""

from __future__ import annotations

import math
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from itertools import islice

import numpy as np

from bitextmine import defaults
from bitextmine.devices import resolve_device
from bitextmine.embed.corpus import release_pages
from bitextmine.embed.embedding_set import row_is_blank
from bitextmine.encoders import load_encoder
from bitextmine.filter import FilterConfig, Pair, PairFilter
from bitextmine.index import choose_index_type
from bitextmine.io.text import file_sha256, open_binary, read_shard
from bitextmine.launch.config import PipelineConfig
from bitextmine.launch.costs import GB, Rates
from bitextmine.launch.runner import POLL_SECONDS
from bitextmine.mine import line_digests
from bitextmine.mine.knn import best_distinct, exact_knn, exact_knn_both_ways, exact_sims
from bitextmine.progress import progress_bar


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

def measure(cfg: PipelineConfig, device: str, sample_lines: int = 400, progress: bool = False) -> Rates:
    """Rates on this machine (see the module's docstring); every figure is for the whole machine."""
    device = resolve_device(device)
    with progress_bar(total=5, desc="calibrate", unit="step", disable=not progress) as bar:
        m = {"device": device, "cores": _cores(), **_startup(cfg)}
        bar.update(1)
        m.update(_embedding(cfg, device, sample_lines))
        bar.update(1)
        m.update(_exact_knn(device, m["dim"]))
        bar.update(1)
        m.update(_index_rates(cfg, m["dim"], m["knn_gflops"], device))
        m.update(_estimate_fit())
        bar.update(1)
        m.update(_filter_rate(cfg, sample_lines))
        m.update(_text_rate(cfg))
        bar.update(1)
    return Rates(**m)


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
    import submitit  # submitit: 0.16 s, only when the calibration runs (ARCHITECTURE.md, start-up)

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
    out = {}
    for lang, shards in cfg.languages.items():
        with open_binary(shards[0]) as f:
            lines = [raw.decode("utf-8", errors="replace").rstrip("\r\n") for raw in islice(f, count)]
        out[lang] = [x for x in lines if x.strip()] or ["a sentence"]
    return out


def _embedding(cfg: PipelineConfig, device: str, sample_lines: int) -> dict:
    import torch  # noqa: F401  (imported before the clock: a task's start-up counts it)

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
    import faiss  # faiss: 0.27 s, only when the calibration runs (ARCHITECTURE.md, start-up)

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
    import faiss  # faiss: 0.27 s, only when the calibration runs (ARCHITECTURE.md, start-up)

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


def _estimate_fit(translated: float = 0.05) -> dict:
    """Seconds of the no-gold estimate's fits for one margin (``no_gold.estimate_from_gaps``:
    both sides' gap mixtures, their bootstrap refits, the decoy's bound) on made-up gaps of
    ``defaults.ESTIMATE_QUERIES`` queries a side: EM runs its fixed iterations, so the time is
    the gaps' count's, not their shape's (7 s of mine's 72 s at 100,000 rows a side, both margins)."""
    from bitextmine.mine.no_gold import QueryGaps, estimate_from_gaps  # scipy.stats: 1.6 s, calibration only

    rng = np.random.default_rng(3)
    queries = defaults.ESTIMATE_QUERIES

    def side() -> QueryGaps:
        with_one = rng.random(queries) < translated
        gaps = np.where(with_one, rng.normal(0.15, 0.04, queries), rng.gumbel(0.01, 0.01, queries))
        return QueryGaps(np.where(with_one, rng.normal(0.2, 0.05, queries), rng.normal(0.05, 0.02, queries)),
                         gaps, 5 * queries)

    src, tgt = side(), side()
    decoys = (rng.normal(0.03, 0.02, queries), rng.normal(0.03, 0.02, queries))
    pairs = np.concatenate([src.best, tgt.best])
    return {"estimate_fit_seconds": _median_seconds(lambda: estimate_from_gaps(pairs, src, tgt, decoys), repeats=1)}


def _stored_rows_rates(queries: np.ndarray, dim: int, device: str = "cpu", rows: int = 131_072) -> dict:
    """Rates of work on stored fp16 vectors, measured on a memory-mapped file of ``rows``:
    reading it block by block to fp32 with the blank-row check (an index adds every row),
    gathering a sorted random half (its training sample), hashing it (sets are verified
    when loaded); re-ranking candidates as mine meets them (rows gathered at random, their
    cosines, the best k kept; a gather after the pages were released costs about the same:
    they are still in the page cache); and exact search one way against the stored rows
    (mine's exact margins and its decoy), a block of the file at a time."""
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
        reranked = rerank_rate(queries, stored)
        # exact search one way against the stored rows (fp16, widened a block at a time)
        x = np.ascontiguousarray(queries[:2048])
        exact_knn(x[:256], stored[:8192], defaults.K + 2, device=device)  # warm-up
        one_way = len(x) * rows / _median_seconds(lambda: exact_knn(x, stored, defaults.K + 2, device=device))
        release_pages(array)
    return {"read_rows_per_second": read, "sample_rows_per_second": gather, "hash_bytes_per_second": hashing,
            "rerank_per_second": reranked, "knn_one_way_pairs_per_second": one_way}


def rerank_rate(queries: np.ndarray, database) -> float:
    """Candidates/s re-ranked as ``index_knn`` does: rows gathered at random from
    ``database``, their cosines, the best k kept (the first of three timings maps the pages in)."""
    ids = np.random.default_rng(2).integers(0, len(database), (len(queries), defaults.INDEX_CANDIDATES))
    return ids.size / _median_seconds(lambda: best_distinct(exact_sims(queries, database, ids), ids, defaults.K))


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
