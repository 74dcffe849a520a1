"""kNN kernels against brute force, both directions, inner product (higher is better)."""

import faiss
import numpy as np
import pytest

from bitextmine.mine.knn import Neighbours, best_distinct, exact_knn, exact_knn_both_ways, exact_sims, index_knn
from tests.conftest import clustered_vectors


def brute_force(x, y, k):
    sims = x.astype(np.float32) @ y.astype(np.float32).T
    ids = np.argsort(-sims, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(sims, ids, 1), ids


@pytest.mark.parametrize("n, m, k, block",
                         [(700, 530, 4, 128), (300, 3, 4, 64), (5, 900, 2, 256), (1000, 1000, 1, 4096)])
def test_exact_knn_matches_brute_force_in_both_directions(n, m, k, block):
    x = clustered_vectors(n, seed=1).astype(np.float16)
    y = clustered_vectors(m, seed=2).astype(np.float16)
    fwd, bwd = exact_knn_both_ways(x, y, k, block_rows=block)
    want_s, want_i = brute_force(x, y, min(k, m))
    np.testing.assert_array_equal(fwd.ids, want_i)
    np.testing.assert_allclose(fwd.sims, want_s, atol=1e-5)
    want_s, want_i = brute_force(y, x, min(k, n))
    np.testing.assert_array_equal(bwd.ids, want_i)
    np.testing.assert_allclose(bwd.sims, want_s, atol=1e-5)
    assert (np.diff(fwd.sims, axis=1) <= 0).all()  # best first: higher similarity is better


@pytest.mark.parametrize("n, m, k, block", [(700, 530, 4, 128), (300, 3, 4, 64), (5, 900, 2, 256)])
def test_one_way_exact_knn_matches_brute_force(n, m, k, block):
    x = clustered_vectors(n, seed=1).astype(np.float16)
    y = clustered_vectors(m, seed=2).astype(np.float16)
    found = exact_knn(x, y, k, block_rows=block)
    want_s, want_i = brute_force(x, y, min(k, m))
    np.testing.assert_array_equal(found.ids, want_i)
    np.testing.assert_allclose(found.sims, want_s, atol=1e-5)
    assert found.sims.dtype == np.float32 and found.ids.dtype == np.int64


def test_index_search_with_exact_rescoring_matches_exact_search():
    x, y = clustered_vectors(400, seed=3), clustered_vectors(600, seed=4)
    index = faiss.IndexIDMap2(faiss.IndexFlatIP(x.shape[1]))
    index.add_with_ids(y, np.arange(len(y)) + 1000)  # index ids are global rows...
    id_map = np.full(1600, -1)
    id_map[1000:] = np.arange(len(y))  # ...mapped back to rows of y
    found = index_knn(index, x, y, 4, nprobe=1, id_map=id_map)
    fwd, _ = exact_knn_both_ways(x, y, 4)
    np.testing.assert_array_equal(found.ids, fwd.ids)
    np.testing.assert_allclose(found.sims, fwd.sims, atol=1e-5)


def test_index_search_releases_each_block_of_queries_after_reading_it(tmp_path):
    """Mapped queries are read once a block: their pages go after each (at 2M a side they
    would otherwise stay mapped up to the view's budget beside the gathered side's)."""
    from bitextmine.embed.corpus import EmbeddingCorpus, SelectedRows
    from tests.conftest import make_embedding_set

    x, y = clustered_vectors(400, seed=3), clustered_vectors(600, seed=4)
    make_embedding_set(tmp_path / "x", x, [f"x{i}" for i in range(len(x))])
    queries = SelectedRows(EmbeddingCorpus.load([tmp_path / "x"]), np.arange(len(x)))
    released = []
    queries.release = lambda: released.append(1)
    index = faiss.IndexFlatIP(y.shape[1])
    index.add(y)
    found = index_knn(index, queries, y, 4, nprobe=1, block_rows=64)
    want = index_knn(index, x.astype(np.float16), y, 4, nprobe=1)
    assert len(released) == 7  # ceil(400 / 64) blocks
    np.testing.assert_array_equal(found.ids, want.ids)


def test_over_fetched_candidates_are_re_ranked_by_exact_cosine():
    """A coarse index ranks badly; its best k' candidates re-ranked exactly give the exact k best."""
    x, y = clustered_vectors(300, seed=3), clustered_vectors(2000, seed=4)
    index = faiss.index_factory(x.shape[1], "IVF8,PQ8x4fs", faiss.METRIC_INNER_PRODUCT)
    index.train(y)
    index.add(y)
    want, _ = exact_knn_both_ways(x, y, 4)
    wrong = []
    for candidates in (4, 40, 400, len(y)):
        found = index_knn(index, x, y, 4, nprobe=8, candidates=candidates)
        wrong.append(int((found.ids != want.ids).any(axis=1).sum()))
    assert wrong[0] > wrong[1] > wrong[2] > wrong[3] == 0, wrong  # 4 bits a code misorder neighbours
    np.testing.assert_allclose(found.sims, want.sims, atol=1e-6)


def test_best_distinct_keeps_each_id_once_best_first():
    sims = np.array([[0.5, 0.9, 0.9, 0.7, -np.inf], [0.1, 0.2, 0.2, 0.2, 0.3]], dtype=np.float32)
    ids = np.array([[4, 2, 2, 4, -1], [7, 8, 8, 9, 3]])
    found = best_distinct(sims, ids, 3)
    np.testing.assert_array_equal(found.ids, [[2, 4, -1], [3, 8, 9]])
    np.testing.assert_allclose(found.sims, [[0.9, 0.7, -np.inf], [0.3, 0.2, 0.2]])
    padded = best_distinct(sims[:, :2], ids[:, :2], 3)
    np.testing.assert_array_equal(padded.ids, [[2, 4, -1], [8, 7, -1]])


def test_exact_sims_reads_blocks_of_bounded_size():
    x, y = clustered_vectors(50, seed=5), clustered_vectors(80, seed=6)
    ids = np.random.default_rng(0).integers(-1, 80, (50, 7))
    want = np.where(ids >= 0, np.einsum("nd,nkd->nk", x, y[np.maximum(ids, 0)]), -np.inf)
    for gathered in (1, 13, 10_000):
        np.testing.assert_allclose(exact_sims(x, y, ids, gathered_rows=gathered), want, atol=1e-6)


def test_exact_sims_and_neighbourhood_mean():
    x, y = clustered_vectors(10, seed=5), clustered_vectors(20, seed=6)
    ids = np.array([[3, 7, -1]] * 10)
    sims = exact_sims(x, y, ids)
    np.testing.assert_allclose(sims[:, 0], x @ y[3], atol=1e-6)
    assert np.isneginf(sims[:, 2]).all()
    mean = Neighbours(sims, ids).mean_sim()  # missing neighbours do not count
    np.testing.assert_allclose(mean, (x @ y[3] + x @ y[7]) / 2, atol=1e-6)


def test_pairs_mined_through_an_index_keep_exact_margins():
    """An IVF index probed once misses neighbours, so its margins come out high; the kept
    pairs' rows searched again exactly give every pair its exact margin, at the same threshold."""
    from bitextmine.mine import MineConfig, mine_vectors
    from bitextmine.mine.rescore import select_with_exact_margins
    from bitextmine.mine.scoring import margin_scores
    from bitextmine.mine.thresholds import select_pairs

    rng = np.random.default_rng(5)
    x, y = clustered_vectors(1500, seed=6), clustered_vectors(1500, seed=7)
    y[:300] = x[:300] + 0.25 * rng.standard_normal((300, x.shape[1])).astype(np.float32)  # translations
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    cfg = MineConfig(score="ratio", threshold=1.05, device="cpu")

    def through_index(queries, database):
        index = faiss.index_factory(x.shape[1], "IVF32,PQ16x4fs", faiss.METRIC_INNER_PRODUCT)
        index.train(database)
        index.add(database)
        return index_knn(index, queries, database, cfg.k, nprobe=1, candidates=16)

    exact_fwd, exact_bwd = exact_knn_both_ways(x, y, cfg.k)
    exact = mine_vectors(x, y, cfg, fwd=exact_fwd, bwd=exact_bwd)

    def exact_margins(pairs):
        return margin_scores(pairs.cosine, exact_fwd.mean_sim()[pairs.src], exact_bwd.mean_sim()[pairs.tgt], "ratio")

    approximate = select_pairs(x, y, cfg, (), through_index(x, y), through_index(y, x)).pairs
    assert (approximate.score > exact_margins(approximate) + 1e-3).mean() > 0.2  # the index's margins: high
    fwd, bwd = through_index(x, y), through_index(y, x)
    corrected = select_with_exact_margins(x, y, cfg, (), fwd, bwd).pairs
    np.testing.assert_allclose(corrected.score, exact_margins(corrected), atol=1e-5)
    found = set(zip(corrected.src.tolist(), corrected.tgt.tolist(), strict=True))
    want = set(zip(exact.src.tolist(), exact.tgt.tolist(), strict=True))
    # a few differ where the index never proposed a row's best partner (the retrieval keeps its next)
    assert len(want) >= 250 and len(found & want) >= 0.97 * len(want) and len(found - want) <= 0.02 * len(want)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("both_ways", [True, False])
@pytest.mark.parametrize("resident", [False, True])
def test_low_precision_tiles_with_fp32_recheck_find_the_exact_neighbours(dtype, both_ways, resident):
    """The GPU's search (fp16 tiles, k + extra candidates re-checked in fp32), run here on the
    CPU, with the sides read a tile at a time (re-checked on the host) or copied to the
    device once (re-checked there): the same neighbours and cosines as the fp32 search;
    without the re-check fp16 and bf16 rounding swap near-ties (0.7 % and 5 % of rows)."""
    import torch

    from bitextmine.mine.knn import _low_precision_knn

    rng = np.random.default_rng(0)
    x = rng.standard_normal((3000, 64)).astype(np.float32)
    y = rng.standard_normal((2500, 64)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    x, y = x.astype(np.float16), y.astype(np.float16)  # as embedding sets store them
    exact = exact_knn_both_ways(x, y, 4, block_rows=1024) if both_ways else [exact_knn(x, y, 4, block_rows=1024)]
    for extra, share in ((4, 1.0), (0, 0.999)):
        found = _low_precision_knn(x, y, 4, "cpu", getattr(torch, dtype), 1024, both_ways=both_ways, extra=extra,
                                   resident=resident)
        assert len(found) == len(exact)
        for e, f in zip(exact, found, strict=True):
            same = (e.ids == f.ids).all(axis=1).mean()
            if extra:
                assert same == 1.0
                np.testing.assert_allclose(f.sims, e.sims, atol=1e-6)
            else:
                assert same < share  # the re-check is what makes it exact


@pytest.mark.parametrize("n_cols", [64, 100, 1000, 1024, 4099])
@pytest.mark.parametrize("group", [1, 8, 64])
def test_tile_top_k_by_group_maxima_gives_the_top_k_values(n_cols, group):
    """The GPU tile's top-k (group maxima, then the best groups' columns): the values of a
    full top-k, on ragged widths and on rows full of ties (few distinct values)."""
    import torch

    from bitextmine.mine.knn import _tile_topk

    gen = torch.Generator().manual_seed(n_cols)
    for sims in (torch.randn(300, n_cols, generator=gen).half(),
                 torch.randint(0, 5, (300, n_cols), generator=gen).half()):
        for k in (1, 8, 12):
            want = sims.topk(min(k, n_cols), dim=1).values
            top, cols = _tile_topk(sims, k, group)
            torch.testing.assert_close(top, want, rtol=0, atol=0)
            torch.testing.assert_close(torch.gather(sims, 1, cols), top, rtol=0, atol=0)  # ids name the values
            assert (cols.sort(dim=1).values.diff(dim=1) > 0).all()  # each column once


def test_device_recheck_breaks_ties_as_the_host_does():
    """Duplicate vectors tie exactly: the device's re-check keeps the lower id first, as
    ``best_distinct`` on the host does, so the mined pairs do not depend on the device."""
    import torch

    from bitextmine.mine.knn import _rechecked, _rechecked_on_device

    rng = np.random.default_rng(3)
    y = rng.standard_normal((50, 16)).astype(np.float32)
    y[10] = y[40] = y[20]  # three copies of one sentence
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    x = y[[20, 5]] + 0.01 * rng.standard_normal((2, 16)).astype(np.float32)
    candidates = torch.tensor([[40, 3, 20, 10, 7], [5, 40, 10, 20, 9]])
    host = _rechecked(x, y, candidates.numpy(), 3)
    device = _rechecked_on_device(torch.from_numpy(x), torch.from_numpy(y), candidates, 3)
    np.testing.assert_array_equal(device.ids, host.ids)
    np.testing.assert_allclose(device.sims, host.sims, rtol=1e-6)
    assert host.ids[0].tolist() == [10, 20, 40]


@pytest.mark.parametrize("resident", [None, True])  # None: decided by free GPU memory (none here)
def test_low_precision_search_reads_sides_of_stored_shards(tmp_path, resident):
    """Mine hands the search views of stored shards (``SelectedRows``: no ``nbytes``, every
    read a gather): the GPU's search, here on the CPU, copies or tiles them as arrays."""
    import torch

    from bitextmine.embed.corpus import EmbeddingCorpus, SelectedRows
    from bitextmine.mine.knn import _low_precision_knn
    from tests.conftest import make_embedding_set

    x, y = clustered_vectors(700, seed=7), clustered_vectors(900, seed=8)
    make_embedding_set(tmp_path / "y", y, [f"y{i}" for i in range(len(y))])
    rows = np.arange(0, len(y), 2)  # every other row, as selected rows are
    view = SelectedRows(EmbeddingCorpus.load([tmp_path / "y"]), rows)
    stored = y.astype(np.float16)[rows]
    want = exact_knn_both_ways(x.astype(np.float16), stored, 4, block_rows=256)
    found = _low_precision_knn(x.astype(np.float16), view, 4, "cpu", torch.float16, 256, both_ways=True,
                               resident=resident)
    for w, f in zip(want, found, strict=True):
        np.testing.assert_array_equal(f.ids, w.ids)
        np.testing.assert_allclose(f.sims, w.sims, atol=1e-6)


def test_exact_correction_releases_the_gathered_side_before_walking_the_other(tmp_path):
    """Exact margins gather the kept rows of one side, then walk the other: the gathered
    side's pages go first, so only one side stays mapped (at 1M a side both did, 1 GB more)."""
    from bitextmine.embed.corpus import EmbeddingCorpus, SelectedRows
    from bitextmine.mine.rescore import _correct
    from tests.conftest import make_embedding_set

    x, y = clustered_vectors(300, seed=5), clustered_vectors(500, seed=6)
    make_embedding_set(tmp_path / "x", x, [f"x{i}" for i in range(len(x))])
    queries = SelectedRows(EmbeddingCorpus.load([tmp_path / "x"]), np.arange(len(x)))
    released = []
    queries.release = lambda: released.append(1)
    neighbours = Neighbours(np.zeros((300, 4), np.float32), np.full((300, 4), -1))
    rows = np.array([3, 50, 299])
    _correct(neighbours, rows, queries, y.astype(np.float16), "cpu")
    want = exact_knn(x[rows].astype(np.float16), y.astype(np.float16), 4)
    assert released == [1]
    np.testing.assert_array_equal(neighbours.ids[rows], want.ids)
    assert (neighbours.ids[np.setdiff1d(np.arange(300), rows)] == -1).all()
