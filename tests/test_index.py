"""`bitextmine index`: type by size, ids, metadata, merging."""

import faiss
import numpy as np
import pytest

from bitextmine import defaults
from bitextmine.index import choose_index_type, load_index
from tests.conftest import clustered_vectors, make_embedding_set


@pytest.mark.parametrize("rows, expected", [
    (500, "Flat"), (10_000, "Flat"), (10_001, "IVF256,PQ64x4fs"), (40_001, "IVF1024,PQ64x4fs"),
    (160_001, "IVF2048,PQ64x4fs"), (700_001, "IVF4096,PQ64x4fs"), (3_000_001, "IVF8192,PQ64x4fs"),
    (12_000_001, "IVF16384,PQ64x4fs"), (50_000_001, "IVF32768,PQ64x4fs"), (200_000_001, "IVF65536,PQ64x4fs")])
def test_auto_type_follows_the_size_table(rows, expected):
    assert choose_index_type(rows, 512) == expected


def test_auto_type_has_one_code_per_8_dimensions():
    assert choose_index_type(50_000, 384) == "IVF1024,PQ48x4fs"
    assert choose_index_type(50_000, 100) == "IVF1024,PQ10x4fs"  # 12 does not divide 100


def test_flat_index_holds_non_blank_rows_under_global_ids(cli, tmp_path):
    vectors = clustered_vectors(300)
    vectors[[5, 17]] = 0  # blank lines
    make_embedding_set(tmp_path / "emb", vectors)
    result = cli("index", tmp_path / "emb", "-o", tmp_path / "idx", "-q")
    assert result.exit_code == 0, result.stderr
    index, meta = load_index(tmp_path / "idx")
    assert meta["factory"] == "Flat" and meta["metric"] == "inner_product"
    assert meta["ntotal"] == index.ntotal == 298
    assert meta["nprobe"] == defaults.NPROBE and meta["shard_offsets"] == [0, 300]
    _, ids = index.search(vectors[[42]], 1)
    assert ids[0, 0] == 42
    assert 5 not in faiss.vector_to_array(index.id_map)


def test_ivf_index_is_trained_on_a_seeded_sample_and_recalls_neighbours(cli, tmp_path):
    vectors = clustered_vectors(6000, dim=64, clusters=100, seed=3)
    make_embedding_set(tmp_path / "emb", vectors)
    args = ["index", tmp_path / "emb", "--type", "IVF64,Flat", "--train-sample", "3000", "--seed", "5", "-q"]
    assert cli(*args, "-o", tmp_path / "a").exit_code == 0
    assert cli(*args, "-o", tmp_path / "b").exit_code == 0
    assert (tmp_path / "a" / "index.faiss").read_bytes() == (tmp_path / "b" / "index.faiss").read_bytes()
    index, meta = load_index(tmp_path / "a")
    assert meta["train_sample"] == 3000 and meta["seed"] == 5 and meta["ntotal"] == 6000
    faiss.extract_index_ivf(index).nprobe = 16
    _, ids = index.search(vectors[:200], 1)
    assert (ids[:, 0] == np.arange(200)).mean() > 0.95


def test_indexes_filled_from_one_training_merge_into_the_concatenation(cli, tmp_path):
    a, b = clustered_vectors(3000, seed=1), clustered_vectors(2000, seed=2)
    make_embedding_set(tmp_path / "ea", a, shard="a")
    make_embedding_set(tmp_path / "eb", b, shard="b")
    assert cli("index", tmp_path / "ea", "-o", tmp_path / "ia", "--type", "IVF32,Flat", "-q").exit_code == 0
    assert cli("index", tmp_path / "eb", "-o", tmp_path / "ib", "--trained-from", tmp_path / "ia", "-q") \
        .exit_code == 0
    assert cli("index-merge", tmp_path / "ia", tmp_path / "ib", "-o", tmp_path / "merged").exit_code == 0
    index, meta = load_index(tmp_path / "merged")
    assert meta["ntotal"] == 5000 and meta["shard_offsets"] == [0, 3000, 5000]
    faiss.extract_index_ivf(index).nprobe = 32  # all lists: exact
    _, ids = index.search(b[:50], 1)
    np.testing.assert_array_equal(ids[:, 0], np.arange(50) + 3000)


def test_merging_separately_trained_indexes_is_refused(cli, tmp_path):
    for name, seed in (("a", 1), ("b", 2)):
        make_embedding_set(tmp_path / f"e{name}", clustered_vectors(2000, seed=seed), shard=name)
        assert cli("index", tmp_path / f"e{name}", "-o", tmp_path / f"i{name}", "--type", "IVF16,Flat",
                   "--seed", str(seed), "-q").exit_code == 0
    result = cli("index-merge", tmp_path / "ia", tmp_path / "ib", "-o", tmp_path / "m")
    assert result.exit_code == 1 and "trained separately" in result.stderr
    assert not (tmp_path / "m").exists()


def test_bad_factory_string_is_a_clear_error(cli, tmp_path):
    make_embedding_set(tmp_path / "emb", clustered_vectors(100))
    result = cli("index", tmp_path / "emb", "-o", tmp_path / "idx", "--type", "NotAnIndex42")
    assert result.exit_code == 1 and "NotAnIndex42" in result.stderr


def test_too_few_vectors_for_the_lists_is_one_line_naming_the_embeddings(cli, tmp_path):
    make_embedding_set(tmp_path / "emb", clustered_vectors(100))
    result = cli("index", tmp_path / "emb", "-o", tmp_path / "idx", "--type", "IVF4,Flat")
    assert result.exit_code == 1 and not (tmp_path / "idx").exists()
    assert result.stderr.strip() == (f"bitextmine: error: {tmp_path / 'emb'}: IVF4,Flat needs at least 156 training "
                                     "vectors (4 lists x FAISS's 39), the embeddings have 100; use fewer lists or a "
                                     "Flat index")


def test_index_types_faiss_builds_but_cannot_use_or_train_are_one_line(cli, tmp_path):
    make_embedding_set(tmp_path / "emb", clustered_vectors(300, dim=32))
    for factory, message in (("IVF0,Flat", "has no lists"), ("IVF2,PQ4x12", "FAISS cannot train IVF2,PQ4x12 on")):
        result = cli("index", tmp_path / "emb", "--type", factory, "-o", tmp_path / "idx", "-q")
        assert result.exit_code == 1 and "Traceback" not in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr, result.stderr
    assert not (tmp_path / "idx").exists()


def test_an_index_is_written_into_its_own_folder_and_trained_from_its_own_encoder(cli, tmp_path):
    vectors = clustered_vectors(600, dim=32)
    make_embedding_set(tmp_path / "a", vectors[:300])
    make_embedding_set(tmp_path / "b", vectors[300:], encoder={"name": "other", "version": "1", "dim": 32,
                                                              "weights_sha256": "o" * 64})
    result = cli("index", tmp_path / "a", "-o", tmp_path / "b", "-q")  # into an embedding set
    assert result.exit_code == 1 and "holds files but no index" in result.stderr
    assert cli("index", tmp_path / "a", "--type", "IVF4,Flat", "-o", tmp_path / "ia", "-q").exit_code == 0
    assert cli("index", tmp_path / "a", "--type", "IVF4,Flat", "-o", tmp_path / "ia", "-q").exit_code == 0  # again
    result = cli("index", tmp_path / "b", "--trained-from", tmp_path / "ia", "-o", tmp_path / "ib", "-q")
    assert result.exit_code == 1 and "trained on vectors of another encoder" in result.stderr
    usage = cli("index", tmp_path / "a", "--trained-from", tmp_path / "ia", "--type", "Flat", "-o", tmp_path / "x")
    assert usage.exit_code == 2 and "--trained-from" in usage.stderr
    from bitextmine import defaults  # a seed given is refused even where it is the default: it would be ignored

    usage = cli("index", tmp_path / "a", "--trained-from", tmp_path / "ia", "--seed", defaults.SEED, "-o",
                tmp_path / "x")
    assert usage.exit_code == 2 and "--trained-from" in usage.stderr


def test_an_opq_rotation_wider_than_the_training_sample_is_one_line(cli, tmp_path):
    """FAISS's OPQ crashes the process (a double free) when trained on fewer vectors than it is wide."""
    make_embedding_set(tmp_path / "e", clustered_vectors(100, dim=128, seed=2))
    result = cli("index", tmp_path / "e", "--type", "OPQ8,Flat", "-o", tmp_path / "i", "-q")
    assert result.exit_code == 1 and not (tmp_path / "i" / "index.faiss").exists()
    assert "OPQ8,Flat needs at least 128 training vectors (its OPQ rotation is 128 wide)" in result.stderr
