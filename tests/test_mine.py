"""`bitextmine mine`: real pairs from examples/, options, dedup, indexes and bad input."""

import json
import subprocess
import sys

import numpy as np
import pytest

from bitextmine.embed.corpus import EmbeddingCorpus
from bitextmine.mine import MineConfig, mine_corpora
from tests.conftest import EXAMPLES, REPO, clustered_vectors, example_like_sets, make_embedding_set


@pytest.fixture(scope="module")
def example_sets(tmp_path_factory):
    from bitextmine.embed import EmbedConfig, embed_shards

    root = tmp_path_factory.mktemp("examples")
    embed_shards([str(EXAMPLES / "de.txt")], root / "de", EmbedConfig(device="cpu"), progress=False)
    embed_shards([str(EXAMPLES / "en.txt")], root / "en", EmbedConfig(device="cpu"), progress=False)
    return root / "de", root / "en"


def gold_ids():
    pairs = set()
    for line in (EXAMPLES / "gold.tsv").read_text().splitlines():
        de, en = line.split("\t")
        pairs.add((f"de:{de}", f"en:{en}"))
    return pairs


def read_tsv(path):
    return [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.slow
def test_mining_the_examples_recovers_the_gold_pairs(cli, tmp_path, example_sets):
    de, en = example_sets
    out = tmp_path / "pairs.tsv"
    result = cli("mine", "--src", de, "--tgt", en, "-o", out, "--ids")
    assert result.exit_code == 0, result.stderr
    rows = read_tsv(out)
    scores = [float(r[0]) for r in rows]
    assert scores == sorted(scores, reverse=True)
    mined = {(r[3], r[4]) for r in rows}
    gold = gold_ids()
    precision, recall = len(mined & gold) / len(mined), len(mined & gold) / len(gold)
    assert precision >= 0.9 and recall >= 0.8, (precision, recall)
    # the text columns are the sentences on those lines
    de_lines = (EXAMPLES / "de.txt").read_text().splitlines()
    first = rows[0]
    assert de_lines[int(first[3].split(":")[1]) - 1] == first[1]

    meta = json.loads((tmp_path / "pairs.tsv.json").read_text())
    assert meta["pairs"] == len(rows)
    assert meta["parameters"]["k"] == 4 and meta["parameters"]["score"] == "ratio"
    assert meta["parameters"]["retrieval"] == "max" and meta["parameters"]["threshold"] > 1
    assert meta["src"]["rows"] == 500 and meta["src"]["distinct"] == 500


def test_stdout_and_options(cli, tmp_path, monkeypatch):
    de, en = example_like_sets(tmp_path / "sets")
    monkeypatch.chdir(tmp_path / "sets")  # where a sidecar named after "-" would land
    result = cli("mine", "--src", de, "--tgt", en, "-o", "-", "--score", "cosine", "--threshold", "0.5",
                 "--retrieval", "intersect", "--top-n", "10", "-k", "3", "-q")
    assert result.exit_code == 0, result.stderr
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert len(rows) == 10 and all(len(r) == 3 for r in rows)
    assert all(float(r[0]) >= 0.5 for r in rows)
    assert [float(r[0]) for r in rows] == sorted((float(r[0]) for r in rows), reverse=True)
    assert sorted(p.name for p in (tmp_path / "sets").iterdir()) == ["de", "en"]  # no sidecar, no lock


def test_threshold_that_keeps_nothing_writes_an_empty_file(cli, tmp_path):
    de, en = example_like_sets(tmp_path)
    out = tmp_path / "none.tsv.gz"
    result = cli("mine", "--src", de, "--tgt", en, "-o", out, "--threshold", "100")
    assert result.exit_code == 0
    import gzip

    assert gzip.decompress(out.read_bytes()) == b""
    assert json.loads((tmp_path / "none.tsv.gz.json").read_text())["pairs"] == 0
    assert "0 pairs" in result.stderr


def test_identical_sentences_are_searched_once_and_blank_lines_never_mined(tmp_path):
    rng = np.random.default_rng(0)
    x = clustered_vectors(200, seed=1)
    y = x + 0.05 * rng.standard_normal(x.shape).astype(np.float32)
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    lines = [f"source {i}" for i in range(200)]
    make_embedding_set(tmp_path / "plain", x, lines)
    # the same sentences twice, with blank lines in between
    doubled = np.concatenate([x, np.zeros((3, x.shape[1])), x])
    make_embedding_set(tmp_path / "doubled", doubled, lines + ["", " ", ""] + lines)
    make_embedding_set(tmp_path / "tgt", y, [f"target {i}" for i in range(200)])
    tgt = EmbeddingCorpus.load([tmp_path / "tgt"])
    cfg = MineConfig(threshold=1.0)
    plain = mine_corpora(EmbeddingCorpus.load([tmp_path / "plain"]), tgt, cfg)
    doubled_mined = mine_corpora(EmbeddingCorpus.load([tmp_path / "doubled"]), tgt, cfg)
    assert doubled_mined.stats["src"]["distinct"] == 200 and doubled_mined.stats["src"]["blank"] == 3
    assert list(zip(doubled_mined.src_text, doubled_mined.tgt_text, strict=True)) == \
        list(zip(plain.src_text, plain.tgt_text, strict=True))
    np.testing.assert_allclose(doubled_mined.scores, plain.scores, rtol=1e-6)
    assert all(text.strip() for text in doubled_mined.src_text)
    assert len(set(doubled_mined.src_text)) == len(doubled_mined)  # pairs are deduplicated
    assert len(plain) >= 190  # near-copies are found


def test_mining_through_indexes_matches_exact_search(cli, tmp_path):
    de, en = example_like_sets(tmp_path)
    for side in (de, en):
        assert cli("index", side, "-o", tmp_path / f"{side.name}.idx", "-q").exit_code == 0
    exact, indexed = tmp_path / "exact.tsv", tmp_path / "indexed.tsv"
    assert cli("mine", "--src", de, "--tgt", en, "-o", exact, "-q").exit_code == 0
    result = cli("mine", "--src", de, "--tgt", en, "-o", indexed, "--src-index", tmp_path / "de.idx",
                 "--tgt-index", tmp_path / "en.idx", "-q")
    assert result.exit_code == 0, result.stderr
    want, got = read_tsv(exact), read_tsv(indexed)
    assert [r[1:] for r in got] == [r[1:] for r in want]
    np.testing.assert_allclose([float(r[0]) for r in got], [float(r[0]) for r in want], atol=2e-6)
    assert json.loads((tmp_path / "indexed.tsv.json").read_text())["parameters"]["search"] == "index"


def test_block_size_does_not_change_the_pairs(tmp_path, monkeypatch):
    """Exact mining with tiny blocks gives the same pairs as with one block, and never
    multiplies more than a block of rows (the cheap check; the memory itself is measured
    by the next test)."""
    from bitextmine.mine import knn

    x, y = clustered_vectors(900, seed=7), clustered_vectors(700, seed=8)
    make_embedding_set(tmp_path / "x", x)
    make_embedding_set(tmp_path / "y", y)
    src, tgt = EmbeddingCorpus.load([tmp_path / "x"]), EmbeddingCorpus.load([tmp_path / "y"])
    operands = []
    as_tensor = knn._as_tensor
    monkeypatch.setattr(knn, "_as_tensor", lambda block, *a: operands.append(len(block)) or as_tensor(block, *a))
    small = mine_corpora(src, tgt, MineConfig(threshold=1.0, block_rows=100, device="cpu"))
    assert operands and max(operands) == 100 and sum(operands) > 900 + 700
    monkeypatch.undo()
    large = mine_corpora(src, tgt, MineConfig(threshold=1.0, block_rows=4096, device="cpu"))
    assert small.src_ids == large.src_ids and small.tgt_ids == large.tgt_ids
    np.testing.assert_allclose(small.scores, large.scores, rtol=1e-5)


MEMORY_PROBE = """
import resource
import numpy as np
from bitextmine.mine import MineConfig, mine_vectors

def vectors(n, seed):
    v = np.random.default_rng(seed).standard_normal((n, 16)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)

def peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux

cfg = MineConfig(threshold=1.0, block_rows=512, device="cpu")
small, large = (vectors(500, 0), vectors(500, 1)), (vectors({n}, 2), vectors({n}, 3))
mine_vectors(*small, cfg)  # imports, thread pools and kernels: the fixed costs
before = peak_mib()
pairs = mine_vectors(*large, cfg)
print(peak_mib() - before, len(pairs))
"""


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss is in KiB on Linux only")
def test_mining_memory_stays_bounded_by_blocks():
    """The peak memory of exact mining grows with the blocks, not with N x M.

    4,000 x 4,000 vectors: the similarity matrix alone would take 61 MiB in fp32 (one
    block of 8,192 rows grows the peak by 73 MiB); with blocks of 512 rows the search
    holds 1 MiB of it at a time (the peak grows by about 7 MiB).
    """
    n = 4000
    result = subprocess.run([sys.executable, "-c", MEMORY_PROBE.format(n=n)], capture_output=True, text=True,
                            cwd=REPO, timeout=300)
    assert result.returncode == 0, result.stderr
    grown_mib, pairs = result.stdout.split()
    assert int(pairs) > 0
    assert float(grown_mib) < n * n * 4 / 2**20 / 4, grown_mib  # a quarter of the N x M matrix


# --- bad input ---------------------------------------------------------------------------

def one_error_line(result):
    lines = [x for x in result.stderr.splitlines() if x.startswith("bitextmine: error:")]
    assert result.exit_code == 1 and len(lines) == 1, result.stderr
    return lines[0]


def test_sets_from_different_encoders_are_refused(cli, tmp_path):
    make_embedding_set(tmp_path / "a", clustered_vectors(50, seed=1))
    make_embedding_set(tmp_path / "b", clustered_vectors(50, seed=2),
                       encoder={"name": "other", "version": "1", "dim": 64, "weights_sha256": "o" * 64})
    line = one_error_line(cli("mine", "--src", tmp_path / "a", "--tgt", tmp_path / "b", "-o", tmp_path / "p.tsv"))
    assert "different encoders" in line and "synthetic" in line and "other" in line
    assert not (tmp_path / "p.tsv").exists()


def test_sets_of_different_dimensions_are_refused(cli, tmp_path):
    make_embedding_set(tmp_path / "a", clustered_vectors(50, dim=64))
    make_embedding_set(tmp_path / "b", clustered_vectors(50, dim=32),
                       encoder={"name": "synthetic", "version": "1", "dim": 32, "weights_sha256": "s" * 64})
    line = one_error_line(cli("mine", "--src", tmp_path / "a", "--tgt", tmp_path / "b", "-o", tmp_path / "p.tsv"))
    assert "64 dimensions" in line and "32" in line


def test_an_index_of_another_set_is_refused(cli, tmp_path):
    make_embedding_set(tmp_path / "a", clustered_vectors(50, seed=1))
    make_embedding_set(tmp_path / "b", clustered_vectors(50, seed=2))
    make_embedding_set(tmp_path / "c", clustered_vectors(50, seed=3))
    assert cli("index", tmp_path / "c", "-o", tmp_path / "c.idx", "-q").exit_code == 0
    assert cli("index", tmp_path / "a", "-o", tmp_path / "a.idx", "-q").exit_code == 0
    line = one_error_line(cli("mine", "--src", tmp_path / "a", "--tgt", tmp_path / "b", "-o", tmp_path / "p.tsv",
                              "--src-index", tmp_path / "a.idx", "--tgt-index", tmp_path / "c.idx"))
    assert "c.idx" in line and "built from other embeddings" in line


def test_an_empty_set_is_refused(cli, tmp_path):
    make_embedding_set(tmp_path / "a", clustered_vectors(50))
    empty = tmp_path / "empty"
    make_embedding_set(empty, clustered_vectors(1))
    manifest = json.loads((empty / "manifest.json").read_text())
    manifest["shards"] = []
    (empty / "manifest.json").write_text(json.dumps(manifest))
    line = one_error_line(cli("mine", "--src", tmp_path / "a", "--tgt", empty, "-o", tmp_path / "p.tsv"))
    assert "empty" in line and str(empty) in line


def test_a_set_of_only_blank_lines_is_refused(cli, tmp_path):
    make_embedding_set(tmp_path / "a", clustered_vectors(50))
    make_embedding_set(tmp_path / "blank", np.zeros((4, 64)), ["", "", " ", ""])
    line = one_error_line(cli("mine", "--src", tmp_path / "a", "--tgt", tmp_path / "blank", "-o", tmp_path / "p"))
    assert "blank" in line


def test_a_corrupted_shard_is_caught_by_its_checksum(cli, tmp_path):
    make_embedding_set(tmp_path / "a", clustered_vectors(50, seed=1))
    make_embedding_set(tmp_path / "b", clustered_vectors(50, seed=2))
    npy = tmp_path / "b" / "shard.npy"
    data = bytearray(npy.read_bytes())
    data[-10] ^= 0xFF
    npy.write_bytes(bytes(data))
    line = one_error_line(cli("mine", "--src", tmp_path / "a", "--tgt", tmp_path / "b", "-o", tmp_path / "p.tsv"))
    assert str(npy) in line and "checksum mismatch" in line
