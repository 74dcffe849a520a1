"""``plan``'s cost model: what each stage will cost, from the rates measured on a machine
(``Rates``, see ``probes``) and the corpus's line counts.

``estimate_from`` is the arithmetic, stated per stage in ``basis`` so that a user can check
it; it can also be given rates that were measured elsewhere (another machine, a GPU).
Rates are for the whole calibrated machine (all its cores, or its GPU). A task with
``resources.cpus`` cores gets that share of them: on Slurm each task has its own; run
locally, ``launcher.workers`` tasks share the machine's cores.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

from bitextmine import defaults
from bitextmine.embed.corpus import mapped_resident_ceiling
from bitextmine.errors import BitextmineError
from bitextmine.index import choose_index_type, default_train_sample, ivf_lists, new_index
from bitextmine.launch.config import PipelineConfig

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


@dataclass(frozen=True)
class Rates:
    """What the calibration measured on a machine (``probes.measure``): every rate is the whole
    machine's (all its cores, or its GPU), every time in seconds, every size in GB."""

    device: str
    cores: int
    # what a stage pays before its work (probes._startup)
    driver_startup_seconds: float  # run's own start: a fresh process importing what it imports
    launch_seconds: float  # a job through submitit's local executor, submission to end seen
    submit_gap_seconds: float  # between two submissions
    torchless_task_startup_seconds: float  # a task's imports without torch (index, filter)
    task_startup_seconds: float  # with torch (embed, mine)
    torch_import_seconds: float
    filter_task_startup_seconds: float  # a filter task's imports and language model
    torchless_task_base_ram_gb: float
    task_base_ram_gb: float
    filter_task_ram_gb: float
    # embedding (probes._embedding)
    embed_sentences_per_second: float
    model_load_seconds: float
    model_ram_gb: float
    dim: int
    sample_lines: int
    # exact search and FAISS (probes._exact_knn, probes._index_rates)
    knn_pairs_per_second: float  # vector pairs compared, both ways at once
    knn_gflops: float  # FAISS's matrix products
    encode_vectors_per_second: float  # inf: an exact index has no codes
    scan_codes_per_second: float
    # stored vectors (probes._stored_rows_rates)
    read_rows_per_second: float
    sample_rows_per_second: float
    hash_bytes_per_second: float
    rerank_per_second: float  # candidates re-ranked by their exact cosines
    knn_one_way_pairs_per_second: float
    # the no-gold estimate's fits, one margin's, at ESTIMATE_QUERIES queries a side (probes._estimate_fit)
    estimate_fit_seconds: float
    # text (probes._text_rate, probes._filter_rate)
    text_lines_per_second: float
    filter_one_process_pairs_per_second: float
    filter_pairs_per_second: float  # a worker per CPU
    probe_seconds: float = 0.0  # per IVF list probed by a query
    rerank_measured_on: str | None = None  # re-ranking measured again on an embedded side (its name, rows)
    calibration: dict | None = None  # when it was measured, and whether it was kept from then (plan_cache)

    @classmethod
    def from_dict(cls, data: dict) -> Rates:
        """The rates of a dict (a kept calibration, plan's JSON); other keys are left out."""
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass
class StageEstimate:
    stage: str
    tasks: int
    ram_gb: float  # per task, peak
    gpu_gb: float
    disk_gb: float  # written by the stage
    seconds: float  # wall time with the configured parallelism
    basis: str


@dataclass(frozen=True)
class MinedShare:
    """Pairs mine keeps per row of a language pair's smaller side, and where the figure comes from."""

    share: float
    how: str  # "assumed", "given", or how it was sampled


def filter_seconds(pairs: float, m: Rates, share: float) -> float:
    """One filter task's pairs at ``share`` of the machine: below ``FILTER_PARALLEL_MIN_PAIRS``
    it judges them in its own process (one core at most), from there in a worker per CPU."""
    if pairs < defaults.FILTER_PARALLEL_MIN_PAIRS:
        return pairs / (m.filter_one_process_pairs_per_second * min(1.0, share * m.cores))
    return pairs / (m.filter_pairs_per_second * share)


@dataclass(frozen=True)
class IndexShape:
    factory: str
    lists: int  # 0: no IVF (exact)
    code_bytes: int  # per vector, plus an 8-byte id
    train_sample: int


def index_shape(rows: int, dim: int, cfg: PipelineConfig) -> IndexShape:
    import faiss  # faiss: 0.27 s, for plan's table only (ARCHITECTURE.md, start-up)

    factory = choose_index_type(rows, dim) if cfg.index.type == "auto" else cfg.index.type
    try:
        index = new_index(dim, factory)
    except BitextmineError as e:
        raise BitextmineError(f"index.type: {e.message}", path=cfg.source) from None
    lists = ivf_lists(index) or 0
    if not lists:
        return IndexShape(factory, 0, dim * 4, 0)
    sample = min(rows, cfg.index.train_sample or default_train_sample(lists))
    return IndexShape(factory, lists, faiss.extract_index_ivf(index).code_size, sample)


def _share(cfg: PipelineConfig, stage: str, tasks: int, m: Rates, launcher: str) -> tuple[int, float]:
    """(tasks running at once, the share of the calibrated machine's rates each one gets)."""
    if m.device.startswith("cuda") and stage == "embed":
        return min(tasks, cfg.launcher.workers or 1), 1.0  # a GPU each
    cpus = cfg.resources_for(stage).cpus
    if launcher == "slurm":
        return min(tasks, cfg.launcher.slurm.max_array), cpus / m.cores
    together = min(tasks, cfg.launcher.workers or 1)
    return together, min(cpus * together, m.cores) / m.cores / together


def _stage_seconds(work: list[float], start: float, together: int, share: float, stagger: float = 0.0) -> float:
    """Wall time of tasks of ``work`` seconds (at the whole machine's rates) run ``together`` at a
    time, each started ``stagger`` seconds after the one before it (submitit's pace, locally)."""
    each = [start + w / share for w in work]
    return max(sum(each) / together, max(each)) + stagger * (min(together, len(work)) - 1)


def _run_stage_seconds(cfg: PipelineConfig, stage: str, m: Rates, launcher: str, work: list[float], start: float,
                       together: int, share: float) -> float:
    """A stage as ``run --stage`` runs it: ``run``'s own start, then its tasks (``_stage_seconds``),
    submitted submitit's gap apart when local."""
    stagger = m.submit_gap_seconds if launcher == "local" else 0.0
    return _driver_seconds(cfg, stage, m, launcher) + _stage_seconds(work, start, together, share, stagger)


def _task_start(m: Rates, torch: bool) -> float:
    """A task's start-up: submitit's job, then what the task imports (embed and mine tasks import
    torch, index and filter tasks do not)."""
    return m.launch_seconds + (m.task_startup_seconds if torch else m.torchless_task_startup_seconds)


def _task_base_ram(m: Rates, torch: bool) -> float:
    return m.task_base_ram_gb if torch else m.torchless_task_base_ram_gb


def _driver_seconds(cfg: PipelineConfig, stage: str, m: Rates, launcher: str) -> float:
    """``run``'s own start before a stage's tasks (counted in each stage, as ``run --stage`` runs
    it): its imports, and torch's where the stage asks for GPUs and they are looked for here."""
    seconds = m.driver_startup_seconds
    if launcher == "local" and cfg.resources_for(stage).gpus:
        seconds += m.torch_import_seconds
    return seconds


def _train_seconds(shape: IndexShape, dim: int, m: Rates) -> float:
    """k-means (faiss: 10 iterations over at most 256 points a list) and the codebooks."""
    points = min(shape.train_sample, 256 * shape.lists)
    kmeans = 10 * points * shape.lists * dim * 2
    sub = max(1, shape.code_bytes // 32) * 64 if "x4fs" in shape.factory else shape.code_bytes
    centroids = 16 if "x4fs" in shape.factory else 256
    codebooks = 25 * sub * min(points, 256 * centroids) * centroids * (dim / sub) * 2 if "PQ" in shape.factory else 0
    return (kmeans + codebooks) / (m.knn_gflops * 1e9)


def _part_rows(rows: int, dim: int, cfg: PipelineConfig) -> list[int]:
    """The rows of each index part of a language, as ``pipeline.index_parts`` splits it: parts
    of ``index.max_rows``, the last one with the part before where it is too small to train the
    type given."""
    parts = [cfg.index.max_rows] * (rows // cfg.index.max_rows) + ([rows % cfg.index.max_rows] if rows %
                                                                     cfg.index.max_rows else [])
    if len(parts) > 1 and cfg.index.type != "auto" and parts[-1] < defaults.FAISS_MIN_POINTS_PER_CENTROID * (
            index_shape(parts[-1], dim, cfg).lists):
        tail = parts.pop()
        parts[-1] += tail
    return parts


def _index_estimate(cfg: PipelineConfig, m: Rates, rows: dict[str, int], launcher: str) -> StageEstimate:
    """One task per language part: read the vectors, train on a sample, assign and encode every row."""
    dim = m.dim
    work, ram, disk = [], 0.0, 0.0
    shapes = set()
    for lang in sorted({x for p in cfg.pairs for x in p}):
        for part in _part_rows(rows[lang], dim, cfg):
            shape = index_shape(part, dim, cfg)
            shapes.add(shape.factory)
            add = part * shape.lists * dim * 2 / (m.knn_gflops * 1e9) + part / m.encode_vectors_per_second
            read = part / m.read_rows_per_second + part * dim * 2 / m.hash_bytes_per_second
            if shape.lists:
                work.append(_train_seconds(shape, dim, m) + shape.train_sample / m.sample_rows_per_second
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
        how = f"Flat: every row read ({m.read_rows_per_second:,.0f}/s) and stored"
    else:
        how = (f"{', '.join(sorted(shapes))}: k-means (10 iterations) on the sample, then every row assigned "
               f"({m.knn_gflops:.0f} GFLOP/s) and encoded ({m.encode_vectors_per_second:,.0f}/s)")
    return StageEstimate("index", len(work), ram, 0.0, disk, seconds, how)


def _search_seconds(queries: int, rows: int, shape: IndexShape, cfg: PipelineConfig, m: Rates) -> float:
    """One direction through an index: coarse assignment, scanning the probed lists, re-ranking."""
    dim = m.dim
    nprobe = cfg.mine.nprobe or cfg.index.nprobe
    if not shape.lists:  # a Flat index: FAISS brute force
        return queries * rows * dim * 2 / (m.knn_gflops * 1e9)
    probed = min(nprobe, shape.lists)
    scanned = rows * probed / shape.lists
    return queries * (shape.lists * dim * 2 / (m.knn_gflops * 1e9) + probed * m.probe_seconds
                      + scanned / m.scan_codes_per_second + defaults.INDEX_CANDIDATES / m.rerank_per_second)


def _mine_estimate(cfg: PipelineConfig, m: Rates, lines: dict[str, list[int]], text_bytes: dict[str, int],
                   launcher: str, shares: dict[tuple[str, str], MinedShare]) -> StageEstimate:
    """One task per pair: read both sides' text, search both ways (exactly or through the indexes), score."""
    dim, k = m.dim, cfg.mine.k
    rows = {lang: sum(count) for lang, count in lines.items()}
    work, ram = [], 0.0
    basis = set()
    for src, tgt in cfg.pairs:
        n, mm = rows[src], rows[tgt]
        mined = shares[(src, tgt)]
        # the larger side mapped up to its budget and a gather's window (one side at a time is)
        one_side_mapped = max(mapped_resident_ceiling(rows[x] * dim * 2) for x in (src, tgt))
        if cfg.index.exact:
            work.append(n * mm / m.knn_pairs_per_second)
            basis.add(f"exact: N x M / {m.knn_pairs_per_second:.3g} vector pairs/s")
            # both sides walked a block at a time, each kept mapped up to its budget
            searched = _exact_block_bytes(n, mm) + sum(
                mapped_resident_ceiling(rows[x] * dim * 2, defaults.KNN_BLOCK_ROWS * dim * 2) for x in (src, tgt))
        else:
            work.append(_through_indexes(n, rows[tgt], cfg, m) + _through_indexes(mm, rows[src], cfg, m))
            if all(index_shape(min(rows[x], cfg.index.max_rows), dim, cfg).lists for x in (src, tgt)):
                basis.add(f"through the indexes: coarse assignment, {cfg.mine.nprobe or cfg.index.nprobe} lists "
                          f"scanned ({m.scan_codes_per_second:.3g} codes/s), {defaults.INDEX_CANDIDATES} candidates "
                          f"a query re-ranked ({m.rerank_per_second:.3g}/s)")
            else:  # a side small enough for a Flat index is searched by brute force
                basis.add(f"through the indexes (Flat where a side is small: every row, {m.knn_gflops:.0f} GFLOP/s)")
            held = max(min(rows[x], cfg.index.max_rows) * (index_shape(min(rows[x], cfg.index.max_rows), dim, cfg)
                                                            .code_bytes + 8) for x in (src, tgt))
            # while re-ranking: a block of queries widened (fp32; its fp16 read and mapped pages are
            # gone by then), its candidates' lists and their temporaries, the rows gathered to
            # re-rank them (fp16) and their fp32 buffer, and the side gathered from mapped up to
            # its budget and a window
            queries = min(defaults.INDEX_QUERY_ROWS, max(n, mm))
            gathered = min(defaults.RERANK_GATHER_ROWS, queries * defaults.INDEX_CANDIDATES, max(n, mm))
            searched = index_search = (held + queries * (dim * 4 + defaults.INDEX_CANDIDATES * CANDIDATE_BYTES)
                                       + gathered * dim * 6 + one_side_mapped)
            if cfg.mine.exact_margins and cfg.mine.score not in ("cosine", "absolute"):
                # after the search, the exact blocks of the kept pairs' rows, and one side mapped up to
                # its budget (the kept rows are gathered from one side, released, the other walked)
                searched = max(searched, _exact_block_bytes(round(mined.share * min(n, mm)), max(n, mm))
                               + one_side_mapped)
                # the kept pairs' rows searched again exactly, each against the other side
                rate = m.knn_one_way_pairs_per_second
                work[-1] += mined.share * min(n, mm) * (n + mm) / rate
                basis.add(f"exact margins: {mined.share:.1%} of the smaller side's rows kept in pairs ({mined.how}), "
                          "each side's searched exactly against the other")
        if cfg.mine.threshold is None and cfg.index.exact:  # chosen on the pools: the estimate's searches
            rate = m.knn_one_way_pairs_per_second
            work[-1] += (estimate_queries(n) * mm + estimate_queries(mm) * n) / rate  # the gaps, across
            work[-1] += (decoy_queries(n, k) * n + decoy_queries(mm, k) * mm) / rate  # the decoy, within
            basis.add("no threshold given: a sample of each side searched exactly against the other side "
                      "(the gaps) and within its own language (the decoy)")
            # (sampled rows of a side gathered and searched, the side searched kept mapped)
            searched = max(searched, _exact_block_bytes(max(n, mm), max(n, mm))
                           + one_side_mapped)
        elif cfg.mine.threshold is None:  # the same searches through the indexes
            work[-1] += (_through_indexes(estimate_queries(n), mm, cfg, m)
                         + _through_indexes(estimate_queries(mm), n, cfg, m)
                         + _through_indexes(decoy_queries(n, k), n, cfg, m)
                         + _through_indexes(decoy_queries(mm, k), mm, cfg, m))
            basis.add("no threshold given: a sample of each side searched through the indexes in the other side "
                      "(the gaps) and in its own (the decoy)")
            # the decoy's rows (the sample and its neighbours) gathered in fp32, then searched a block at a time
            searched = max(searched, index_search + max(decoy_queries(n, k), decoy_queries(mm, k)) * dim * 4)
        if cfg.mine.threshold is None:  # and the estimate fitted to what the samples found
            work[-1] += estimate_fit_seconds(n, mm, cfg, m)
            basis.add(f"the estimate's fits: {m.estimate_fit_seconds:.1f} s a margin at "
                      f"{defaults.ESTIMATE_QUERIES:,} queries a side")
        work[-1] += (n + mm) / m.text_lines_per_second  # the text, read and its distinct sentences kept
        work[-1] += (n + mm) * dim * 2 / m.hash_bytes_per_second  # the embedding sets verified when loaded
        # reading the text: the largest shard as strings, the side's digests and their sort
        reading = max(max(count) * (text_bytes[lang] / max(sum(count), 1) + STR_BYTES) + sum(count) *
                      DIGEST_BYTES_PER_LINE for lang, count in ((src, lines[src]), (tgt, lines[tgt])))
        # then the distinct sentences' rows, the neighbour lists, the search, and after it the
        # one-to-one selection over every candidate pair
        selecting = (n + mm) * k * SELECTION_BYTES
        held = (n + mm) * DISTINCT_BYTES_PER_LINE + (n + mm) * k * 12 * 2 + max(searched, selecting)
        ram = max(ram, m.task_base_ram_gb + max(reading, held) / GB)
    together, share = _share(cfg, "mine", len(work), m, launcher)
    seconds = _run_stage_seconds(cfg, "mine", m, launcher, work, _task_start(m, torch=True), together, share)
    pairs = sum(min(rows[s], rows[t]) * shares[(s, t)].share for s, t in cfg.pairs)
    return StageEstimate("mine", len(cfg.pairs), ram, 0.0, pairs * 200 / GB, seconds, "; ".join(sorted(basis)))


def _exact_block_bytes(queries: int, rows: int) -> int:
    """Exact search's similarity block and its top-k temporaries (about twice the block)."""
    return 2 * min(defaults.KNN_BLOCK_ROWS, queries) * min(defaults.KNN_BLOCK_ROWS, rows) * 4


def _through_indexes(queries: int, rows: int, cfg: PipelineConfig, m: Rates) -> float:
    """``queries`` searched through the indexes of a side of ``rows`` (one per ``index.max_rows``)."""
    part = min(rows, cfg.index.max_rows)
    shape = index_shape(part, m.dim, cfg)
    return sum(_search_seconds(queries, min(part, rows - p), shape, cfg, m) for p in range(0, rows, part))


def estimate_fit_seconds(n: int, m_rows: int, cfg: PipelineConfig, m: Rates) -> float:
    """The estimate's gap mixtures and their bootstrap (EM over each sampled query's gap), once
    a margin: both margins under the distance margin (thresholds.estimate_without_gold)."""
    margins = 2 if cfg.mine.score == "distance" else 1
    queries = (estimate_queries(n) + estimate_queries(m_rows)) / (2 * defaults.ESTIMATE_QUERIES)
    return margins * queries * m.estimate_fit_seconds


def estimate_queries(rows: int) -> int:
    """Rows of one side searched against the other when mine chooses the threshold (a sample,
    see mine/no_gold.py query_gaps)."""
    return min(rows, defaults.ESTIMATE_QUERIES)


def decoy_queries(rows: int, k: int) -> int:
    """Rows of one side searched against that side when mine chooses the threshold: a sample,
    then the distinct neighbours of the sample outside it (see mine/no_gold.py
    decoy_best_scores), counted as if the sample's k x sample neighbours fell at random."""
    sample = estimate_queries(rows)
    if sample == rows:
        return rows
    return sample + round((rows - sample) * -math.expm1(-sample * k / rows))


def _shares_by_pair(cfg: PipelineConfig, mined_share) -> dict[tuple[str, str], MinedShare]:
    if isinstance(mined_share, dict):
        return mined_share
    return {tuple(pair): MinedShare(mined_share, "assumed") for pair in cfg.pairs}


def estimate_from(cfg: PipelineConfig, m: Rates, lines: dict[str, list[int]], text_bytes: dict[str, int],
                  launcher: str = "local", mined_share: float | dict = defaults.PLAN_MINED_SHARE
                  ) -> list[StageEstimate]:
    """Per-stage estimates from rates ``m`` (as ``measure`` returns) and the shards' line counts.

    ``mined_share``: one share for every pair (assumed), or ``mined_shares``' figures.
    """
    shares = _shares_by_pair(cfg, mined_share)
    dim, gpu = m.dim, m.device.startswith("cuda")
    rows = {lang: sum(v) for lang, v in lines.items()}
    start = _task_start(m, torch=True) + m.model_load_seconds
    shards = [n for v in lines.values() for n in v]
    together, share = _share(cfg, "embed", len(shards), m, launcher)
    sorted_rows = min(max(shards), defaults.EMBED_SORT_CHUNK_LINES)  # held at once: text and vectors
    out = [StageEstimate(
        "embed", len(shards),
        ram_gb=m.task_base_ram_gb + m.model_ram_gb + sorted_rows * (dim * 4 + 300) / GB,
        gpu_gb=(m.model_ram_gb + 1.0) if gpu else 0.0,
        disk_gb=sum(rows.values()) * dim * 2 / GB,
        seconds=_run_stage_seconds(cfg, "embed", m, launcher, [n / m.embed_sentences_per_second for n in shards],
                                   start, together, share),
        basis=f"{sum(rows.values()):,} lines at {m.embed_sentences_per_second:.0f} sent/s, {together} task(s) "
              f"at once with {share:.0%} of the rate each, {start:.1f} s start-up a task")]
    if not cfg.index.exact:
        out.append(_index_estimate(cfg, m, rows, launcher))
    out.append(_mine_estimate(cfg, m, lines, text_bytes, launcher, shares))
    pairs = [min(rows[s], rows[t]) * shares[(s, t)].share for s, t in cfg.pairs]
    how = sorted({f"{x.share:.1%} of the smaller side, {x.how}" for x in shares.values()})
    together, share = _share(cfg, "filter", len(pairs), m, launcher)
    start = m.launch_seconds + m.filter_task_startup_seconds
    out.append(StageEstimate(
        "filter", len(cfg.pairs), m.filter_task_ram_gb + max(pairs) * PAIR_BYTES / GB, 0.0,
        sum(pairs) * 200 / GB,
        _run_stage_seconds(cfg, "filter", m, launcher, [filter_seconds(p, m, share) for p in pairs], start,
                           together, 1.0),
        f"{sum(pairs):,.0f} pairs ({'; '.join(how)}) at {m.filter_one_process_pairs_per_second:,.0f} pairs/s "
        f"in one process, {m.filter_pairs_per_second:,.0f} with a worker per CPU (a task's "
        f"{defaults.FILTER_PARALLEL_MIN_PAIRS:,} pairs and more)"))
    return out


def total(estimates: list[StageEstimate]) -> StageEstimate:
    """The whole pipeline: stages run one after another, so times and disk add up and the
    peaks are the largest stage's."""
    return StageEstimate("total", sum(e.tasks for e in estimates), max(e.ram_gb for e in estimates),
                         max(e.gpu_gb for e in estimates), sum(e.disk_gb for e in estimates),
                         sum(e.seconds for e in estimates), "stages one after another: times and disk add up, "
                                                            "RAM and GPU memory are the largest stage's")
