"""k-nearest-neighbour search, behind one interface.

Exact search is one loop over tiles of both sides (``search_tiles``) feeding reducers that
keep each row's best k (``RowTopK``, ``ColumnTopK``); memory is bounded by the tile, never
by N x M. Kernels:
- ``exact_knn_both_ways``: on the CPU each tile is multiplied once in fp32 and serves both
  directions (its rows and its columns), where running FAISS twice (source->target,
  target->source) computes every similarity twice. On CUDA the tiles are multiplied in
  fp16, and the backward lists come from the transposed product, so every similarity is
  computed twice there (a second product is cheap on a GPU, a strided top-k is not); the
  k + ``KNN_RECHECK_EXTRA`` candidates are re-checked in fp32 (``_low_precision_knn``).
- ``exact_knn``: the same for one direction (queries among a database), which spares the
  column-wise top-k when only one direction is needed.
- ``index_knn``: a FAISS index (IVF for large databases) proposes more candidates than
  needed; their exact cosines, recomputed from the stored vectors, pick the neighbours.
- ``Search``: one side searched, either way, for code that samples rows of the pools (the
  no-gold estimate) and should search them as mining did.

Vectors are L2-normalised, so inner product = cosine and higher is better throughout.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from bitextmine import defaults
from bitextmine.embed.corpus import release_mapped
from bitextmine.index.faiss_index import ivf_of
from bitextmine.progress import progress_bar

log = logging.getLogger(__name__)

SEED_ROWS = 1024  # rows used to start each column's top-k list before filtering


@dataclass
class Neighbours:
    """For each query row: its k nearest database rows, best first (ids -1 = none)."""

    sims: np.ndarray  # (n, k) float32 cosines
    ids: np.ndarray  # (n, k) int64 database row numbers

    @property
    def k(self) -> int:
        return self.sims.shape[1]

    def mean_sim(self) -> np.ndarray:
        """Mean cosine to the k neighbours, per query (the margin's neighbourhood term)."""
        valid = self.ids >= 0
        return np.where(valid, self.sims, 0).sum(axis=1) / np.maximum(valid.sum(axis=1), 1)


def _as_tensor(block: np.ndarray, device, dtype):
    import torch  # torch: 2.5 s, loaded where used (ARCHITECTURE.md, start-up)

    return torch.from_numpy(np.ascontiguousarray(block)).to(device=device, dtype=dtype)


def _merge_topk(run_s, run_i, new_s, new_i, k):
    """Best k of the running and new candidates, per row."""
    import torch  # torch: 2.5 s, loaded where used (ARCHITECTURE.md, start-up)

    s = torch.cat([run_s, new_s], dim=1)
    i = torch.cat([run_i, new_i], dim=1)
    top_s, pos = s.topk(k, dim=1)
    return top_s, torch.gather(i, 1, pos)


# --- the tile loop and its reducers --------------------------------------------------------------

class RowTopK:
    """The running k best columns of each row, updated a tile of products at a time."""

    def __init__(self, rows: int, k: int, dtype, device, topk=None):
        import torch  # torch: 2.5 s, loaded where used (ARCHITECTURE.md, start-up)

        self.k = k
        self.topk = topk or (lambda sims, k: sims.topk(min(k, sims.shape[1]), dim=1))  # contiguous: fast
        self.sims = torch.full((rows, k), float("-inf"), dtype=dtype, device=device)
        self.ids = torch.full((rows, k), -1, dtype=torch.int64, device=device)

    def update(self, sims, row: int, col: int) -> None:
        """``sims``: the products of rows ``row...`` with columns ``col...``."""
        s, idx = self.topk(sims, self.k)
        rows = slice(row, row + sims.shape[0])
        self.sims[rows], self.ids[rows] = _merge_topk(self.sims[rows], self.ids[rows], s, idx + col, self.k)

    def neighbours(self) -> Neighbours:
        return Neighbours(self.sims.cpu().numpy(), self.ids.cpu().numpy())


class ColumnTopK(RowTopK):
    """The running k best rows of each column, from the same tiles as ``RowTopK`` (each product
    computed once serves both directions). A ``topk`` down the columns of a row-major tile is
    several times slower on a CPU than along its rows (strided access): each column's list is
    seeded from the first ``SEED_ROWS`` rows of the first tile of its column, and later rows are
    filtered against its k-th best (``_merge_columns_above``)."""

    def update(self, sims, row: int, col: int) -> None:
        cols = slice(col, col + sims.shape[1])
        seed = 0
        if row == 0:  # seed each column's list from a few rows, then filter the rest
            seed = min(SEED_ROWS, sims.shape[0])
            s, idx = sims[:seed].topk(min(self.k, seed), dim=0)
            self.sims[cols], self.ids[cols] = _merge_topk(self.sims[cols], self.ids[cols], s.T, idx.T, self.k)
        if seed < sims.shape[0]:
            self.sims[cols], self.ids[cols] = _merge_columns_above(self.sims[cols], self.ids[cols], sims[seed:],
                                                                   row + seed, self.k)


def search_tiles(n: int, m: int, block_rows: int, load_x, load_y, by_rows: list[RowTopK],
                 by_transpose: list[RowTopK] = (), progress: bool = False) -> None:
    """The one loop of exact search over x (n rows) against y (m rows), a tile of ``block_rows``
    rows of each at a time: y's blocks outer (each read and converted once), x's inner. Each
    tile's product ``x @ y.T`` is handed to the reducers of ``by_rows`` (``RowTopK`` of x's rows,
    ``ColumnTopK`` of y's), then dropped; the reducers of ``by_transpose`` get the transposed
    product ``y @ x.T``, computed after it in the memory it left (on a GPU a second product is
    cheap, a strided top-k is not). ``load_x(start)``, ``load_y(start)``: a block of a side as
    a tensor. ``progress``: a bar on stderr counting compared pairs of vectors."""
    import torch  # torch: 2.5 s, loaded where used (ARCHITECTURE.md, start-up)

    with torch.inference_mode(), progress_bar(total=n * m, desc="search", unit="pair",
                                              disable=not progress) as bar:
        for j in range(0, m, block_rows):
            yb = load_y(j)
            for i in range(0, n, block_rows):
                xb = load_x(i)
                sims = xb @ yb.T  # (bi, bj); in fp16 accumulated in fp32 by a GPU's tensor cores
                for reducer in by_rows:
                    reducer.update(sims, i, j)
                del sims
                for reducer in by_transpose:
                    reducer.update(yb @ xb.T, j, i)
                bar.update(len(xb) * len(yb))


def _merge_columns_above(run_s, run_i, block, row_offset, k):
    """Column-wise top-k update that only looks at entries above each column's k-th best.

    Once the columns' lists are seeded, few entries beat a column's k-th best, so a
    comparison, a ``nonzero`` and a small sparse merge cost about one pass over the block.
    """
    import torch  # torch: 2.5 s, loaded where used (ARCHITECTURE.md, start-up)

    n_cols = block.shape[1]
    rows, cols = (block > run_s[:, -1][None, :]).nonzero(as_tuple=True)
    if rows.numel() == 0:
        return run_s, run_i
    vals = block[rows, cols]
    all_cols = torch.cat([torch.arange(n_cols, device=block.device).repeat_interleave(k), cols])
    all_vals = torch.cat([run_s.reshape(-1), vals])
    all_ids = torch.cat([run_i.reshape(-1), rows.to(run_i.dtype) + row_offset])
    # group by column, best value first within a column; keep each column's first k
    order = torch.argsort(all_vals, descending=True, stable=True)
    order = order[torch.argsort(all_cols[order], stable=True)]
    counts = torch.bincount(all_cols, minlength=n_cols)
    starts = torch.cumsum(counts, 0) - counts
    chosen = order[(starts[:, None] + torch.arange(k, device=block.device)[None, :]).reshape(-1)]
    return all_vals[chosen].view(n_cols, k), all_ids[chosen].view(n_cols, k)


def knn_block_rows(device: str) -> int:
    """Rows a side of an exact-search tile: ``KNN_BLOCK_ROWS`` on CPU; on a GPU the largest
    power of two up to ``GPU_KNN_BLOCK_ROWS`` whose fp16 tile and top-k work (~3x the tile)
    fit in half the free memory."""
    if not device.startswith("cuda"):
        return defaults.KNN_BLOCK_ROWS
    import torch  # torch: 2.5 s, loaded where used (ARCHITECTURE.md, start-up)

    free, _ = torch.cuda.mem_get_info(torch.device(device))
    rows = defaults.GPU_KNN_BLOCK_ROWS
    while rows > defaults.KNN_BLOCK_ROWS and rows * rows * 2 * 3 > free / 2:
        rows //= 2
    return rows


def _fp32_blocks(side, device: str, block_rows: int):
    """``load_x``/``load_y`` of ``search_tiles``: a block of a side, in fp32 on ``device``."""
    import torch  # torch: 2.5 s, loaded where used (ARCHITECTURE.md, start-up)

    return lambda start: _as_tensor(side[start : start + block_rows], device, torch.float32)


# --- the kernels ---------------------------------------------------------------------------------

def exact_knn_both_ways(
    x: np.ndarray,
    y: np.ndarray,
    k: int,
    device: str = "cpu",
    block_rows: int | None = None,
    progress: bool = False,
) -> tuple[Neighbours, Neighbours]:
    """Exact k-NN of every x among y (forward) and of every y among x (backward).

    ``x`` (n, d) and ``y`` (m, d) may be fp16 or fp32, in memory or memory-mapped; they
    are converted block by block (``block_rows``: by default, ``knn_block_rows``). On the
    CPU each tile is multiplied once in fp32 and serves both directions (``ColumnTopK``); on
    CUDA the tiles are multiplied in fp16 and the backward lists come from the transposed
    product (``_low_precision_knn``). ``progress``: a bar on stderr counting compared pairs.
    """
    import torch  # torch: 2.5 s, loaded where used (ARCHITECTURE.md, start-up)

    if device.startswith("cuda"):
        return _low_precision_knn(x, y, k, device, torch.float16, block_rows, both_ways=True, progress=progress)
    block_rows = block_rows or knn_block_rows(device)
    n, m = len(x), len(y)
    log.debug("exact kNN %d x %d, k=%d, blocks of %d rows (%.0f MB each)", n, m, k, block_rows,
              block_rows * block_rows * 4 / 2**20)
    fwd, bwd = RowTopK(n, min(k, m), torch.float32, device), ColumnTopK(m, min(k, n), torch.float32, device)
    search_tiles(n, m, block_rows, _fp32_blocks(x, device, block_rows), _fp32_blocks(y, device, block_rows),
                 [fwd, bwd], progress=progress)
    return fwd.neighbours(), bwd.neighbours()


def exact_knn(
    queries: np.ndarray,
    database: np.ndarray,
    k: int,
    device: str = "cpu",
    block_rows: int | None = None,
    progress: bool = False,
) -> Neighbours:
    """Exact k-NN of every query row among the database rows, best first.

    Inputs and precision as in ``exact_knn_both_ways``; memory is bounded by one
    ``block_rows`` x ``block_rows`` block of similarities plus the (n, k) lists.
    """
    import torch  # torch: 2.5 s, loaded where used (ARCHITECTURE.md, start-up)

    if device.startswith("cuda"):
        return _low_precision_knn(queries, database, k, device, torch.float16, block_rows, both_ways=False,
                                  progress=progress)[0]
    block_rows = block_rows or knn_block_rows(device)
    best = RowTopK(len(queries), min(k, len(database)), torch.float32, device)
    search_tiles(len(queries), len(database), block_rows, _fp32_blocks(queries, device, block_rows),
                 _fp32_blocks(database, device, block_rows), [best], progress=progress)
    return best.neighbours()


Search = Callable[[np.ndarray, int], Neighbours]  # queries (fp32), k -> their k nearest rows of one side


def exact_search(database, device: str = "cpu") -> Search:
    """Searches ``database`` exactly (``exact_knn``)."""
    return lambda queries, k: exact_knn(queries, database, min(k, len(database)), device=device)


@dataclass(frozen=True)
class SideSearches:
    """How rows sampled from the pools find their neighbours in each side, where ``mine`` has
    searched through indexes: through the same indexes (``mine_corpora``). ``None``: exactly."""

    src: Search | None = None
    tgt: Search | None = None


def _tile_topk(sims, k: int, group: int = defaults.GPU_TOPK_GROUP):
    """``sims.topk(k, dim=1)`` (values exact; ties in any order) in about one read of the tile.

    The maxima of groups of ``group`` columns are taken in one pass; a row's k best values
    lie in its k groups with the best maxima (each of those maxima is at least any value
    outside them), so only those k x ``group`` columns are ranked. ``group`` 1 (or a tile
    too narrow to gain) is the plain top-k.
    """
    import torch  # torch: 2.5 s, loaded where used (ARCHITECTURE.md, start-up)

    n_rows, n_cols = sims.shape
    k = min(k, n_cols)
    n_groups = n_cols // group if group > 1 else 0
    if n_groups <= k:
        return sims.topk(k, dim=1)
    whole = n_groups * group
    maxima = sims[:, :whole].unflatten(1, (n_groups, group)).amax(dim=2)
    best_groups = maxima.topk(k, dim=1).indices
    cols = (best_groups.unsqueeze(2) * group + torch.arange(group, device=sims.device)).flatten(1)
    if whole < n_cols:  # the columns past the last whole group are candidates too
        cols = torch.cat([cols, torch.arange(whole, n_cols, device=sims.device).expand(n_rows, -1)], dim=1)
    top, pos = torch.gather(sims, 1, cols).topk(k, dim=1)
    return top, torch.gather(cols, 1, pos)


def _resident_copy(rows: np.ndarray, device: str, resident: bool | None):
    """A side of the search copied to the device once, in its own precision (the re-check
    reads it), or None to read it a tile at a time. ``resident`` None: on a GPU, when it
    fits in ``GPU_RESIDENT_SHARE`` of the free memory."""
    import torch  # torch: 2.5 s, loaded where used (ARCHITECTURE.md, start-up)

    first = np.ascontiguousarray(rows[:1])  # rows may be a view of stored shards: no nbytes
    if resident is None:
        free = torch.cuda.mem_get_info(torch.device(device))[0] if device.startswith("cuda") else 0
        resident = len(rows) * first.nbytes <= free * defaults.GPU_RESIDENT_SHARE
    if not resident:
        return None
    whole = torch.empty((len(rows), first.shape[1]), dtype=torch.from_numpy(first).dtype, device=device)
    step = defaults.KNN_BLOCK_ROWS
    for start in range(0, len(rows), step):  # a memory-mapped side is read once, in order
        whole[start : start + step] = torch.from_numpy(np.ascontiguousarray(rows[start : start + step]))
    return whole


def _low_precision_knn(x, y, k: int, device: str, dtype, block_rows: int | None, both_ways: bool,
                       extra: int = defaults.KNN_RECHECK_EXTRA, progress: bool = False,
                       group: int = defaults.GPU_TOPK_GROUP, resident: bool | None = None) -> list[Neighbours]:
    """Exact k-NN from low-precision tiles: [forward] or [forward, backward].

    Each tile of products stays in ``dtype`` (fp16 on a GPU: tensor cores, half the
    memory traffic of the top-k passes, which bound the search there), and its top
    ``k + extra`` along rows are merged into running lists (``_tile_topk``, ``group``);
    the backward lists come from the transposed product (one more matmul, cheap on a GPU,
    where a top-k down the columns of a row-major tile reads it with a stride): every
    similarity is computed twice here, once on the CPU. The candidates' cosines are then
    recomputed in fp32 from the vectors and the best k kept, so the result is exact unless
    more than ``extra`` candidates fall within fp16's rounding of the k-th (measured against
    the CPU path in tests/test_gpu.py and tests/test_knn.py). Sides that fit on the device
    (``resident``, see ``_resident_copy``) are copied there once and the re-check runs there;
    otherwise the sides are read a tile at a time and re-checked on the CPU. Runs on any
    device; a GPU is where it pays.
    """
    n, m = len(x), len(y)
    kf, kb = min(k + extra, m), min(k + extra, n)
    x_whole = _resident_copy(x, device, resident)
    y_whole = _resident_copy(y, device, resident)
    block_rows = block_rows or knn_block_rows(device)  # sized to the memory the sides left free

    def blocks(side, whole):
        if whole is not None:
            return lambda start: whole[start : start + block_rows].to(dtype)
        return lambda start: _as_tensor(side[start : start + block_rows], device, dtype)

    def tile_topk(sims, k):
        return _tile_topk(sims, k, group)

    fwd = RowTopK(n, kf, dtype, device, tile_topk)
    bwd = [RowTopK(m, kb, dtype, device, tile_topk)] if both_ways else []
    log.debug("kNN in %s tiles of %d rows, %d x %d, k=%d (+%d re-checked), sides resident: %s, %s",
              dtype, block_rows, n, m, k, extra, x_whole is not None, y_whole is not None)
    search_tiles(n, m, block_rows, blocks(x, x_whole), blocks(y, y_whole), [fwd], bwd, progress=progress)
    on_device = x_whole is not None and y_whole is not None
    recheck = _rechecked_on_device if on_device else _rechecked
    sides = (x_whole, y_whole) if on_device else (x, y)
    found = [recheck(sides[0], sides[1], fwd.ids, min(k, m))]
    if both_ways:
        found.append(recheck(sides[1], sides[0], bwd[0].ids, min(k, n)))
    return found


def _rechecked(queries, database, candidates, k: int) -> Neighbours:
    """The best k of each row's candidates by their fp32 cosines."""
    if not isinstance(candidates, np.ndarray):
        candidates = candidates.cpu().numpy()
    return best_distinct(exact_sims(queries, database, candidates), candidates, k)


def _rechecked_on_device(queries, database, candidates, k: int,
                         gathered_rows: int = defaults.RERANK_GATHER_ROWS) -> Neighbours:
    """``_rechecked`` where both sides are already on the device (a GPU gathers and
    multiplies the candidates' rows in fp32 far faster than the host reads them): the
    same neighbours, ties going to the lower id as in ``best_distinct``."""
    import torch  # torch: 2.5 s, loaded where used (ARCHITECTURE.md, start-up)

    if bool((candidates < 0).any()):  # lists not filled: the host's path drops the gaps
        return _rechecked(queries.cpu().numpy(), database.cpu().numpy(), candidates, k)
    sims_out = torch.empty((len(candidates), k), dtype=torch.float32)
    ids_out = torch.empty((len(candidates), k), dtype=torch.int64)
    step = max(1, gathered_rows // max(1, candidates.shape[1]))
    for start in range(0, len(candidates), step):
        ids = candidates[start : start + step].sort(dim=1).values  # equal cosines: lower id first
        q = queries[start : start + step].float().unsqueeze(2)  # (r, d, 1)
        sims = torch.bmm(database[ids].float(), q).squeeze(2)  # (r, c)
        best, order = sims.sort(dim=1, descending=True, stable=True)
        sims_out[start : start + step] = best[:, :k].cpu()
        ids_out[start : start + step] = torch.gather(ids, 1, order[:, :k]).cpu()
    return Neighbours(sims_out.numpy(), ids_out.numpy())


def as_float32(rows: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Contiguous fp32 rows; fp16 converted by torch (vectorised: 5x numpy's ``astype``).

    ``out``: a fp32 buffer of at least len(rows) rows to convert into. Reused across
    blocks, it spares the first-touch page faults of a fresh array, which cost 5x the
    conversion itself.
    """
    if rows.dtype == np.float16:
        import torch  # torch: 2.5 s, loaded where used (ARCHITECTURE.md, start-up)

        if out is None:
            return torch.from_numpy(np.ascontiguousarray(rows)).float().numpy()
        target = out[: len(rows)]
        torch.from_numpy(target).copy_(torch.from_numpy(np.ascontiguousarray(rows)))
        return target
    return np.ascontiguousarray(rows, dtype=np.float32)


def exact_sims(queries: np.ndarray, database: np.ndarray, ids: np.ndarray,
               gathered_rows: int = defaults.RERANK_GATHER_ROWS) -> np.ndarray:
    """cos(query i, database ids[i, j]) in fp32, for ids >= 0 (else -inf).

    Blocks of queries gather at most ``gathered_rows`` database rows at a time, each
    distinct row read once and in row order (a memory-mapped database is then read
    forwards, not hopped through), so memory is bounded whatever k or the corpus size.
    The products run in FAISS (``fvec_inner_products_by_idx``: threaded, no copy of a
    query per candidate), and the fp16 rows are widened by torch: most of the time left
    is the gather.
    """
    import faiss  # faiss: 0.27 s, loaded where used (ARCHITECTURE.md, start-up)

    out = np.full(ids.shape, -np.inf, dtype=np.float32)
    step = max(1, gathered_rows // max(1, ids.shape[1]))
    widened = np.empty((min(step * ids.shape[1], ids.size), queries.shape[1]), dtype=np.float32)
    for start in range(0, len(ids), step):
        block_ids = ids[start : start + step]
        valid = block_ids >= 0
        wanted, where = np.unique(np.where(valid, block_ids, 0) if not valid.all() else block_ids,
                                  return_inverse=True)
        vectors = as_float32(database[wanted], out=widened)
        q = as_float32(queries[start : start + step])
        local = np.ascontiguousarray(where.reshape(block_ids.shape), dtype=np.int64)
        sims = np.empty(block_ids.shape, dtype=np.float32)
        faiss.fvec_inner_products_by_idx(faiss.swig_ptr(sims), faiss.swig_ptr(q), faiss.swig_ptr(vectors),
                                         faiss.swig_ptr(local), q.shape[1], len(q), block_ids.shape[1])
        out[start : start + step] = np.where(valid, sims, -np.inf)
    return out


def best_distinct(sims: np.ndarray, ids: np.ndarray, k: int) -> Neighbours:
    """Per row, the k best distinct ids by ``sims`` (a row may list an id twice: duplicate
    sentences mapped to one, or several indexes over one side); missing ones are -1."""
    order = np.lexsort((ids, -sims), axis=1)  # best first; equal ids (equal sims) side by side
    sims, ids = np.take_along_axis(sims, order, 1), np.take_along_axis(ids, order, 1)
    drop = ids < 0
    drop[:, 1:] |= ids[:, 1:] == ids[:, :-1]
    keep = np.argsort(drop, axis=1, kind="stable")[:, :k]
    gone = np.take_along_axis(drop, keep, 1)
    sims = np.where(gone, -np.inf, np.take_along_axis(sims, keep, 1)).astype(np.float32)
    ids = np.where(gone, -1, np.take_along_axis(ids, keep, 1))
    if ids.shape[1] < k:  # fewer candidates than k: pad
        pad = ((0, 0), (0, k - ids.shape[1]))
        sims, ids = np.pad(sims, pad, constant_values=-np.inf), np.pad(ids, pad, constant_values=-1)
    return Neighbours(sims, ids)


def index_knn(index, queries: np.ndarray, database: np.ndarray, k: int, nprobe: int,
              candidates: int = defaults.INDEX_CANDIDATES, block_rows: int = defaults.INDEX_QUERY_ROWS,
              id_map: np.ndarray | None = None) -> Neighbours:
    """The k nearest database rows of each query through a FAISS index, by exact cosine.

    The index proposes ``candidates`` rows per query (at least k) by its approximate
    scores (compressed codes, ``nprobe`` of its lists); their cosines are recomputed
    exactly from ``database`` and the best k distinct ones kept. Over-fetching makes the
    result depend on which rows the probed lists hold, not on the codes' ranking errors.
    ``id_map`` turns the index's ids (global row ids of its embedding set) into rows of
    ``database``; ids it maps to -1 (rows not searched, e.g. blank lines) are dropped.
    """

    ivf = ivf_of(index)
    if ivf is not None:
        ivf.nprobe = min(nprobe, ivf.nlist)  # more lists than there are probes them all (and fits FAISS's size_t)
    fetch = min(max(k, candidates), index.ntotal)
    sims = np.empty((len(queries), k), dtype=np.float32)
    ids = np.empty((len(queries), k), dtype=np.int64)
    for start in range(0, len(queries), block_rows):
        q = np.ascontiguousarray(queries[start : start + block_rows], dtype=np.float32)
        release_mapped(queries)  # a block of queries is read once: its pages can go
        _, found = index.search(q, fetch)
        if id_map is not None:
            found = np.where(found >= 0, id_map[np.maximum(found, 0)], -1)
        best = best_distinct(exact_sims(q, database, found), found, k)
        sims[start : start + len(q)], ids[start : start + len(q)] = best.sims, best.ids
    return Neighbours(sims, ids)
