"""No silent damage, containment, and guards against the user's own mistakes.

Each case is an attack that once gave a wrong result, a traceback or a file outside the
named paths: truncated .zst shards, checkpoints that point out of their folder, an output
that replaces its input, two writers of one checkpoint, values no run can use, and input
that is plainly wrong (languages swapped).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import zstandard

from tests.conftest import EXAMPLES, REPO, clustered_vectors, make_embedding_set, read_lines
from tests.test_reliability import assert_unchanged, one_line_error, snapshot


def usage_error(result, *fragments: str) -> None:
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    assert "Traceback" not in result.stderr and result.stdout == "", result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, (fragment, result.stderr)


def gold_pairs(tmp_path: Path, name: str = "pairs.tsv", swap: bool = False) -> Path:
    """The 300 German-English translations of examples/de-en as src<TAB>tgt (or tgt<TAB>src)."""
    de, en = read_lines(EXAMPLES / "de.txt"), read_lines(EXAMPLES / "en.txt")
    rows = [(de[int(a) - 1], en[int(b) - 1]) for a, b in (x.split("\t") for x in read_lines(EXAMPLES / "gold.tsv"))]
    path = tmp_path / name
    path.write_text("".join(f"{b}\t{a}\n" if swap else f"{a}\t{b}\n" for a, b in rows), encoding="utf-8")
    return path


# --- 1. a truncated .zst is damage, as a truncated .gz or .xz is -----------------------------

def zst_frames(data: bytes, frames: int = 2) -> list[bytes]:
    step = -(-len(data) // frames)
    return [zstandard.ZstdCompressor().compress(data[i : i + step]) for i in range(0, len(data), step)]


@pytest.mark.parametrize("cut", ["last frame", "single frame"])
def test_a_truncated_zst_is_refused_like_gz(cli, tmp_path, cut):
    from bitextmine.errors import BitextmineError
    from bitextmine.io.text import count_lines
    from bitextmine.io.text import read_lines as read_text_lines

    text = "".join(f"Satz {i}.\n" for i in range(1000)).encode()
    frames = zst_frames(text, 2 if cut == "last frame" else 1)
    whole = tmp_path / "whole.txt.zst"
    whole.write_bytes(b"".join(frames))
    assert len(read_text_lines(str(whole))) == count_lines(str(whole)) == 1000  # several frames, all read
    damaged = tmp_path / "de.txt.zst"
    damaged.write_bytes(b"".join(frames[:-1]) + frames[-1][: len(frames[-1]) // 2])
    for reader in (read_text_lines, count_lines):
        with pytest.raises(BitextmineError, match="cannot decompress"):
            reader(str(damaged))
    one_line_error(cli("embed", damaged, "-o", tmp_path / "emb", "-q"), f"{damaged}: cannot decompress")
    assert not (tmp_path / "emb").exists()
    pairs = tmp_path / "pairs.tsv.zst"
    pairs_text = "".join(f"Satz {i}.\tSentence {i}.\n" for i in range(1000)).encode()
    pairs.write_bytes(b"".join(zst_frames(pairs_text))[:-20])
    one_line_error(cli("filter", pairs, "-o", tmp_path / "kept.tsv", "-q"), f"{pairs}: cannot decompress")
    assert not (tmp_path / "kept.tsv").exists()


# --- 6. smaller, all real ------------------------------------------------------------------------

def test_an_existing_file_with_glob_characters_is_that_file(cli, tmp_path):
    from bitextmine.io.text import expand_shards

    (tmp_path / "de[1].txt").write_text("Eins.\n")
    (tmp_path / "de1.txt").write_text("Zwei.\n")
    assert expand_shards([str(tmp_path / "de[1].txt")]) == [str(tmp_path / "de[1].txt")]
    assert expand_shards([str(tmp_path / "de[0-9].txt")]) == [str(tmp_path / "de1.txt")]  # no such file: a glob


def test_escape_sequences_in_file_names_are_printed_escaped(cli, tmp_path):
    evil = tmp_path / "x\x1b[2J\x1b[31mred\nbitextmine: forged.txt"
    result = cli("embed", evil, "-o", tmp_path / "emb")
    line = one_line_error(result)  # "no file matches": [2J reads as a glob
    assert "\x1b" not in result.stderr and "\\x1b[2J" in line and "\\nbitextmine: forged" in line
    evil.write_text("nan\tEin Haus.\tA house.\n")
    result = cli("filter", evil, "-o", tmp_path / "kept.tsv", "--max-score", "0")
    assert result.exit_code == 0 and "\x1b" not in result.stderr
    result = cli("report", evil, "-o", tmp_path / "r.html")
    assert "\x1b" not in result.stderr and "\\x1b" in result.stderr


def test_non_finite_scores_never_pass_the_filter(cli, tmp_path):
    (tmp_path / "p.tsv").write_text("nan\tDas ist ein Haus.\tThis is a house.\n"
                                    "inf\tDas ist ein Boot.\tThis is a boat.\n"
                                    "-inf\tDas ist ein Zug.\tThis is a train.\n"
                                    "1.1\tDas ist ein Auto.\tThis is a car.\n")
    result = cli("filter", tmp_path / "p.tsv", "-o", "-", "--json", tmp_path / "r.json", "-q")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "1.100000\tDas ist ein Auto.\tThis is a car.\n"
    assert json.loads((tmp_path / "r.json").read_text())["rejected"]["score_cap"] == 3


@pytest.mark.parametrize("low, high", [("--min-chars", "--max-chars"), ("--min-tokens", "--max-side-tokens")])
def test_a_minimum_above_its_maximum_is_refused(cli, tmp_path, low, high):
    from bitextmine.errors import BitextmineError
    from bitextmine.filter import FilterConfig

    pairs = gold_pairs(tmp_path)
    usage_error(cli("filter", pairs, "-o", tmp_path / "kept.tsv", low, "10", high, "5"), low, high)
    assert not (tmp_path / "kept.tsv").exists()
    with pytest.raises(BitextmineError, match="no pair could pass"):
        FilterConfig(**{low[2:].replace("-", "_"): 10, high[2:].replace("-", "_"): 5})


# --- 7. guards: the filter's languages -------------------------------------------------------------

def test_swapped_filter_languages_warn_and_strict_refuses(cli, tmp_path):
    pairs = gold_pairs(tmp_path)
    result = cli("filter", pairs, "-o", tmp_path / "kept.tsv", "--src-lang", "en", "--tgt-lang", "de", "-q")
    assert result.exit_code == 0, result.stderr
    assert "language ID rejects 300 of 300 pairs" in result.stderr and "--src-lang de --tgt-lang en" in result.stderr
    report = json.loads((tmp_path / "kept.tsv.filter.json").read_text())
    assert report["rejected"]["lid"] == 300 and "swapped" in report["warnings"][0]

    before = snapshot(tmp_path)
    line = one_line_error(cli("filter", pairs, "-o", tmp_path / "strict.tsv", "--src-lang", "en", "--tgt-lang", "de",
                              "--strict", "-q"), "columns look swapped", "(--strict)")
    assert "Traceback" not in line
    assert_unchanged(before, tmp_path)  # nothing written

    right = cli("filter", pairs, "-o", tmp_path / "ok.tsv", "--src-lang", "deu", "--tgt-lang", "eng", "--strict")
    assert right.exit_code == 0 and "language ID rejects" not in right.stderr, right.stderr
    assert json.loads((tmp_path / "ok.tsv.filter.json").read_text())["warnings"] == []
    wrong = cli("filter", pairs, "-o", tmp_path / "fr.tsv", "--src-lang", "fr", "--tgt-lang", "en", "-q")
    assert wrong.exit_code == 0 and "are --src-lang fr and --tgt-lang en the languages" in wrong.stderr


def test_the_library_warns_with_a_python_warning(tmp_path):
    import warnings

    from bitextmine.errors import BitextmineWarning
    from bitextmine.filter import FilterConfig, PairFilter
    from bitextmine.io.pairs import read_pairs

    pairs = read_pairs(str(gold_pairs(tmp_path, swap=True)))
    with pytest.warns(BitextmineWarning, match="columns look swapped"):
        kept = [p for p, reason in PairFilter(FilterConfig(src_lang="de", tgt_lang="en")).run(pairs) if not reason]
    assert kept == []
    with warnings.catch_warnings():
        warnings.simplefilter("error", BitextmineWarning)
        with pytest.raises(BitextmineWarning):
            list(PairFilter(FilterConfig(src_lang="de", tgt_lang="en")).run(pairs))


# --- 2. a checkpoint reads nothing outside its folder, and is checksummed ---------------------------

@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A tiny transformer checkpoint trained for two steps on examples/de-en."""
    from bitextmine.train import TrainConfig, train
    from bitextmine.train.data import read_parallel

    where = tmp_path_factory.mktemp("ckpt")
    cfg = TrainConfig(dim=16, heads=2, layers=1, ff=32, vocab_size=300, batch_size=8, dev_size=20, max_steps=2,
                      device="cpu")
    train(read_parallel([str(gold_pairs(where))]), where / "ckpt", cfg, progress=False)
    return where / "ckpt"


def edited_checkpoint(checkpoint: Path, where: Path, **config) -> Path:
    import shutil

    copy = where / "copy"
    shutil.copytree(checkpoint, copy)
    data = json.loads((copy / "config.json").read_text())
    for key, value in config.items():
        if isinstance(value, dict):
            data[key] = {**data[key], **value}
        elif value is None:
            data.pop(key, None)
        else:
            data[key] = value
    (copy / "config.json").write_text(json.dumps(data))
    return copy


def embed_with(cli, ckpt: Path, tmp_path: Path, *more: str):
    shard = tmp_path / "news.de.txt"
    shard.write_text("Ein Haus.\nZwei Boote.\n")
    return cli("embed", shard, "-o", tmp_path / "emb", "--encoder", f"ckpt:{ckpt}", "-q", *more)


@pytest.mark.parametrize("attack, fragment", [
    ("tokenizer absolute", "tokenizer must be a plain file name"),
    ("tokenizer up", "tokenizer must be a plain file name"),
    ("tokenizer link out", "tokenizer 'sentencepiece.model' leads out of"),
    ("weights link out", "the weights file 'model.safetensors' leads out of"),
    ("config link out", "leads out of"),
])
def test_a_checkpoint_reads_nothing_outside_its_folder(cli, checkpoint, tmp_path, attack, fragment):
    victim = tmp_path / "victim.model"
    victim.write_bytes((checkpoint / "sentencepiece.model").read_bytes())  # would even load
    tokenizer = {"tokenizer absolute": str(victim), "tokenizer up": "../victim.model"}.get(attack)
    ckpt = edited_checkpoint(checkpoint, tmp_path, **({"tokenizer": tokenizer} if tokenizer else {}))
    if attack == "tokenizer link out":
        (ckpt / "sentencepiece.model").unlink()
        (ckpt / "sentencepiece.model").symlink_to(victim)
    if attack == "weights link out":
        (ckpt / "model.safetensors").unlink()
        (ckpt / "model.safetensors").symlink_to("../../../../../../../../etc/passwd")
    if attack == "config link out":
        (tmp_path / "config.json").write_text((ckpt / "config.json").read_text())
        (ckpt / "config.json").unlink()
        (ckpt / "config.json").symlink_to(tmp_path / "config.json")
    one_line_error(embed_with(cli, ckpt, tmp_path), fragment)
    assert not (tmp_path / "emb").exists()


def test_a_checkpoint_is_checksummed(cli, checkpoint, tmp_path):
    from bitextmine.io.text import file_sha256

    config = json.loads((checkpoint / "config.json").read_text())
    assert config["weights_sha256"] == file_sha256(checkpoint / "model.safetensors", checkpoint / "sentencepiece.model")
    ckpt = edited_checkpoint(checkpoint, tmp_path)
    weights = bytearray((ckpt / "model.safetensors").read_bytes())
    weights[-3] ^= 0x40  # same size, another weight
    (ckpt / "model.safetensors").write_bytes(bytes(weights))
    one_line_error(embed_with(cli, ckpt, tmp_path), f"{ckpt}: checksum mismatch")

    old = edited_checkpoint(checkpoint, tmp_path / "old", weights_sha256=None)  # written before the checksum
    result = embed_with(cli, old, tmp_path / "old")
    assert result.exit_code == 0 and "records no checksum" in result.stderr, result.stderr


@pytest.mark.parametrize("config, fragment", [
    ({"model": {"layers": 10**9}}, "model.layers is 1000000000, but the weights have 1"),
    ({"model": {"heads": 3}}, "model.heads 3 does not divide the width 16"),
    ({"model": {"dim": "16"}}, "model.dim is '16'"),
    ({"model": {"vocab_size": None}}, "model.vocab_size is None"),
    ({"model": []}, "model: must be a mapping"),
    ({"model": None}, "model: missing vocab_size"),
    ({"teacher_languages": "deu"}, "teacher_languages: must be a list, not str 'deu'"),
    ({"tokenizer": 7}, "tokenizer: must be a string"),
])
def test_checkpoint_values_no_run_can_use_are_one_line(checkpoint, tmp_path, config, fragment):
    ckpt = edited_checkpoint(checkpoint, tmp_path, weights_sha256=None, **config)
    (tmp_path / "news.de.txt").write_text("Ein Haus.\n")
    try:  # 10^9 layers once hung while the network was built
        done = subprocess.run([sys.executable, "-m", "bitextmine", "embed", str(tmp_path / "news.de.txt"), "-o",
                               str(tmp_path / "emb"), "--encoder", f"ckpt:{ckpt}", "-q"], cwd=REPO,
                              capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("building the network from the config did not end")
    lines = [x for x in done.stderr.splitlines() if "records no checksum" not in x]
    assert done.returncode == 1 and len(lines) == 1 and fragment in lines[0], done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "emb").exists()


# --- 4. one train run per checkpoint directory; 5. its settings and disk --------------------------------

def test_train_holds_its_output_and_a_second_run_fails_at_once(cli, tmp_path):
    from tests.test_reliability import lock_held_by_another_process

    pairs = gold_pairs(tmp_path)
    out = tmp_path / "ckpt"
    out.mkdir()
    with lock_held_by_another_process(out, directory=True) as holder:
        one_line_error(cli("train", pairs, "-o", out, "--max-steps", "1", "--device", "cpu", "-q"),
                       f"{out}: another bitextmine process", f"pid {holder.pid}")
    assert sorted(os.listdir(out)) == [".bitextmine.lock"]  # left by the killed holder, and taken over next


def test_train_on_a_single_pair_names_the_file(cli, tmp_path):
    one = tmp_path / "one.tsv"
    one.write_text("Hallo.\tHello.\n", encoding="utf-8")
    one_line_error(cli("train", one, "-o", tmp_path / "ckpt", "--max-steps", "1", "--device", "cpu", "-q"),
                   f"{one}: 1 pair: training needs at least two pairs")


@pytest.mark.parametrize("args, fragment", [
    (["--dim", "257", "--heads", "4"], "--dim 257 is not a multiple of --heads 4"),
    (["--preset", "use-xling", "--heads", "7"], "--dim 512 is not a multiple of --heads 7"),
    (["--spm-model", "NOT_A_MODEL"], "not a SentencePiece model"),
])
def test_train_settings_no_network_can_have_are_reported_before_any_work(cli, tmp_path, args, fragment):
    """Options that do not go together are a usage error (exit 2); a file that is not a model, one line."""
    not_a_model = tmp_path / "text.model"
    not_a_model.write_text("plain text, not a model\n")
    args = [str(not_a_model) if a == "NOT_A_MODEL" else a for a in args]
    result = cli("train", gold_pairs(tmp_path), "-o", tmp_path / "ckpt", "--max-steps", "1", "--device", "cpu",
                 "-q", *args)
    if "--spm-model" in args:
        one_line_error(result, fragment)
    else:
        assert result.exit_code == 2 and "Traceback" not in result.stderr
        assert fragment in " ".join(result.stderr.replace("│", " ").split()), result.stderr
    assert not (tmp_path / "ckpt").exists()


@pytest.mark.slow
@pytest.mark.parametrize("size_kb", [64, 300])
def test_train_on_a_full_disk_is_one_line(cli, tmp_path, small_disk, size_kb):
    disk = small_disk(size_kb)  # 64 kB: the vocabulary does not fit; 300 kB: the resumable state does not
    result = cli("train", gold_pairs(tmp_path), "-o", disk / "ckpt", "--max-steps", "2", "--dim", "16", "--heads", "2",
                 "--layers", "1", "--ff", "32", "--vocab-size", "300", "--batch-size", "8", "--dev-size", "20",
                 "--device", "cpu", "-q")
    one_line_error(result, "cannot write: no space left on the device")
    assert not any(p.name.endswith(".tmp") for p in disk.rglob("*"))


# --- 3. score-pairs: never replaces its input, and scores exactly as mine ----------------------------

@pytest.fixture
def repeating_sets(tmp_path):
    """Two synthetic sets in which a quarter of the sentences occur twice (same text, same row)."""
    x = clustered_vectors(80, dim=32, seed=5)
    y = x + 0.08 * np.random.default_rng(6).standard_normal(x.shape).astype(np.float32)
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    x[60:], y[60:] = x[:20], y[:20]  # rows 60-79 repeat rows 0-19
    de = [f"Satz {i % 60}" for i in range(80)]
    en = [f"sentence {i % 60}" for i in range(80)]
    make_embedding_set(tmp_path / "de", x, de, shard="de")
    make_embedding_set(tmp_path / "en", y, en, shard="en")
    return tmp_path / "de", tmp_path / "en"


def test_score_pairs_scores_exactly_as_mine_on_pools_that_repeat_sentences(cli, tmp_path, repeating_sets):
    de, en = repeating_sets
    for score in ("ratio", "distance", "cosine"):
        mined = tmp_path / f"mined.{score}.tsv"
        assert cli("mine", "--src", de, "--tgt", en, "--score", score, "--threshold", "-1", "-o", mined, "-q",
                   "--ids").exit_code == 0
        rows = [line.split("\t") for line in read_lines(mined)]
        assert len(rows) == 60
        result = cli("score-pairs", mined, "--src", de, "--tgt", en, "--score", score, "-o", tmp_path / "s.tsv",
                     "--json", "-", "-q")
        assert result.exit_code == 0, result.stderr
        rescored = [line.split("\t") for line in read_lines(tmp_path / "s.tsv")]
        assert [r[1:] for r in rescored] == [r[1:] for r in rows]
        assert max(abs(float(a[0]) - float(b[0])) for a, b in zip(rescored, rows, strict=True)) <= 2e-6, score
        summary = json.loads(result.stdout)
        assert summary["pairs"] == summary["src_in_pool"] == summary["tgt_in_pool"] == 60
        assert summary["src_pool"] == [str(de)] and isinstance(summary["pairs"], int)


def test_score_pairs_never_replaces_an_input(cli, tmp_path, repeating_sets):
    de, en = repeating_sets
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("Satz 1\tsentence 1\n")
    before = snapshot(tmp_path)
    for output in (pairs, de / "de.txt", en / "manifest.json"):
        one_line_error(cli("score-pairs", pairs, "--src", de, "--tgt", en, "-o", output, "-q"), "input")
    assert_unchanged(before, tmp_path)
    old_names = cli("score-pairs", pairs, "--src-pool", de, "--tgt-pool", en, "-o", "-", "-q")  # the old names
    assert old_names.exit_code == 0 and old_names.stdout.endswith("\tSatz 1\tsentence 1\n"), old_names.stderr


# --- 5. values no run can use: index.json, -o '' -----------------------------------------------------

@pytest.mark.parametrize("key, value, fragment", [
    ("nprobe", -5, "nprobe: Input should be greater than or equal to 1"),
    ("candidates", 0, "candidates: Input should be greater than or equal to 1"),
    ("ntotal", -1, "ntotal: Input should be greater than or equal to 0"),
    ("nprobe", "8", "nprobe: must be an integer"),
])
def test_index_json_values_are_checked(cli, tmp_path, key, value, fragment):
    from tests.test_reliability import index_args

    sets = (tmp_path / "de", tmp_path / "en")
    make_embedding_set(sets[0], clustered_vectors(60, dim=32, seed=1), shard="de")
    make_embedding_set(sets[1], clustered_vectors(60, dim=32, seed=2), shard="en")
    indexed = []
    for side in sets:
        assert cli("index", side, "-o", tmp_path / f"{side.name}.idx", "-q").exit_code == 0
        indexed.append(tmp_path / f"{side.name}.idx")
    meta_path = indexed[1] / "index.json"
    meta = json.loads(meta_path.read_text())
    meta[key] = value
    meta_path.write_text(json.dumps(meta))
    one_line_error(cli(*index_args(sets, indexed, tmp_path / "p.tsv")), f"{meta_path}: {fragment}")
    assert not (tmp_path / "p.tsv").exists()


@pytest.mark.parametrize("verb", [
    ["mine", "--src", "de", "--tgt", "en"], ["filter", "pairs.tsv"], ["report", "pairs.tsv"], ["embed", "de.txt"],
    ["score-pairs", "pairs.tsv", "--src", "de", "--tgt", "en"], ["index", "de"], ["train", "pairs.tsv"],
    ["index-merge", "a.idx", "b.idx"]])
def test_an_empty_output_name_is_a_usage_error(cli, tmp_path, monkeypatch, verb):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pairs.tsv").write_text("1.2\tEin Haus.\tA house.\n")
    (tmp_path / "de.txt").write_text("Ein Haus.\n")
    before = snapshot(tmp_path)
    usage_error(cli(*verb, "-o", "", "-q"), "--output", "is empty")
    if verb[0] != "index-merge":
        usage_error(cli(*verb, "-o", "out", "--json", " ", "-q"), "--json", "is empty")
    assert_unchanged(before, tmp_path)  # nothing written into the working directory


# --- 6. smaller, all real ----------------------------------------------------------------------------

def test_an_index_cannot_be_merged_with_itself(cli, tmp_path):
    make_embedding_set(tmp_path / "a", clustered_vectors(400, dim=32, seed=1), shard="a")
    make_embedding_set(tmp_path / "b", clustered_vectors(400, dim=32, seed=2), shard="b")
    assert cli("index", tmp_path / "a", "--type", "IVF4,Flat", "-o", tmp_path / "a.idx", "-q").exit_code == 0
    for name, source in (("a2.idx", "a"), ("b.idx", "b")):
        assert cli("index", tmp_path / source, "--trained-from", tmp_path / "a.idx", "-o", tmp_path / name,
                   "-q").exit_code == 0
    one_line_error(cli("index-merge", tmp_path / "a.idx", tmp_path / "a.idx", "-o", tmp_path / "m", "-q"),
                   "given twice")
    one_line_error(cli("index-merge", tmp_path / "a.idx", tmp_path / "." / "a.idx", "-o", tmp_path / "m", "-q"),
                   "given twice")
    one_line_error(cli("index-merge", tmp_path / "a.idx", tmp_path / "a2.idx", "-o", tmp_path / "m", "-q"),
                   "a2.idx: holds embeddings another part holds already")
    assert not (tmp_path / "m").exists()
    merged = cli("index-merge", tmp_path / "a.idx", tmp_path / "b.idx", "-o", tmp_path / "m", "-q", "--json", "-")
    assert merged.exit_code == 0 and json.loads(merged.stdout)["ntotal"] == 800


def test_eval_bucc_refuses_gold_naming_ids_the_files_lack(cli, tmp_path):
    from tests.test_evaluate import write_bucc

    write_bucc(tmp_path, share=4)
    gold = read_lines(tmp_path / "gold.txt")
    (tmp_path / "gold.txt").write_text("".join(f"{x}\n" for x in gold[:5] + ["de-999999\ten-000001"] + gold[5:]))
    one_line_error(cli("eval", "bucc", tmp_path / "de.txt", tmp_path / "en.txt", tmp_path / "gold.txt", "-q"),
                   f"{tmp_path / 'gold.txt'}:6: source id 'de-999999' is not in", "1 of 76 gold pairs")


def test_a_killed_writer_leaves_no_temporary_for_the_next_run(cli, tmp_path):
    """kill -9 of a filter half-way through its output: the next run of the same output removes what it left."""
    kept = tmp_path / "kept.tsv"
    writer = ("import os, sys\nfrom bitextmine.io.atomic import atomic_text_writer\nfrom bitextmine.io.lock import "
              "output_lock\nwith output_lock(sys.argv[1]), atomic_text_writer(sys.argv[1]) as out:\n"
              "    out.write('half a line'); out.flush(); os.kill(os.getpid(), 9)\n")
    done = subprocess.run([sys.executable, "-c", writer, str(kept)], cwd=REPO)
    assert done.returncode == -9 and not kept.exists()
    left = [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert len(left) == 1 and left[0].startswith(".kept.tsv.")  # half a line, under the killed writer's pid
    result = cli("filter", gold_pairs(tmp_path), "-o", kept, "-q")
    assert result.exit_code == 0, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.tsv", "kept.tsv.filter.json", "pairs.tsv"]


def test_a_pipeline_with_a_key_given_twice_is_refused(cli, tmp_path):
    config = tmp_path / "p.yaml"
    config.write_text(f"output: {tmp_path / 'out'}\nlanguages: {{de: {EXAMPLES / 'de.txt'}, en: {EXAMPLES / 'en.txt'}}}"
                      "\npairs: [[de, en]]\nmine: {k: 4}\nfilter: {rejects: true}\nmine: {k: 8}\n")
    one_line_error(cli("run", config, "--launcher", "inline", "-q"), f"{config}:6: invalid YAML: duplicate key 'mine'")
    config.write_text(f"output: {tmp_path / 'out'}\nlanguages:\n  de: {EXAMPLES / 'de.txt'}\n"
                      f"  de: {EXAMPLES / 'en.txt'}\npairs: [[de, de]]\n")
    one_line_error(cli("plan", config, "-q"), "duplicate key 'de'")
    assert not (tmp_path / "out").exists()


def test_pipeline_language_keys_are_languages_when_the_filter_identifies_them(cli, tmp_path):
    config = tmp_path / "p.yaml"
    config.write_text(f"output: {tmp_path / 'out'}\nlanguages: {{german: {EXAMPLES / 'de.txt'}, en: "
                      f"{EXAMPLES / 'en.txt'}}}\npairs: [[german, en]]\n")
    one_line_error(cli("run", config, "--launcher", "inline", "-q"), "unknown language 'german'", "filter.lang_id")
    assert not (tmp_path / "out").exists()


# --- 8. clear messages for mistakes ------------------------------------------------------------------

def test_k_as_large_as_a_side_is_refused(cli, tmp_path, repeating_sets):
    de, en = repeating_sets  # 60 distinct sentences a side (80 lines)
    one_line_error(cli("mine", "--src", de, "--tgt", en, "-k", "70", "-o", tmp_path / "p.tsv", "-q"),
                   "-k 70 needs more than 70 distinct sentences on each side, but the source side has 60")
    one_line_error(cli("score-pairs", gold_pairs(tmp_path), "--src", de, "--tgt", en, "-k", "60", "-o",
                       tmp_path / "s.tsv", "-q"), "the source pool side has 60")
    assert not (tmp_path / "p.tsv").exists() and not (tmp_path / "s.tsv").exists()
    # the side too small is the one named
    from tests.conftest import clustered_vectors, make_embedding_set

    make_embedding_set(tmp_path / "three", clustered_vectors(3, dim=32, seed=3), ["a b", "c d", "e f"])
    make_embedding_set(tmp_path / "many", clustered_vectors(60, dim=32, seed=4), [f"s {i}" for i in range(60)])
    for src, tgt, side in ((tmp_path / "many", tmp_path / "three", "target"),
                           (tmp_path / "three", tmp_path / "many", "source")):
        one_line_error(cli("mine", "--src", src, "--tgt", tgt, "-o", tmp_path / "p.tsv", "-q"),
                       f"{tmp_path / 'three'}: -k 4 needs more than 4 distinct sentences on each side, but the {side} "
                       "side has 3")
    assert cli("mine", "--src", de, "--tgt", en, "-k", "59", "--threshold", "0", "-o", tmp_path / "p.tsv", "-q") \
        .exit_code == 0


@pytest.mark.parametrize("share", ["0", "1", "90", "-0.5"])
def test_target_precision_has_one_range_on_every_verb(cli, tmp_path, share):
    for verb in (["mine", "--src", "a", "--tgt", "b", "-o", tmp_path / "p.tsv"], ["calibrate", "--src", "a", "--tgt",
                                                                                  "b"]):
        usage_error(cli(*verb, "--target-precision", share), "--target-precision", "is a share in (0, 1)")


def test_plan_on_a_directory_says_so(cli, tmp_path):
    one_line_error(cli("plan", tmp_path, "-q"), f"{tmp_path}: is a directory; give the pipeline file")
    one_line_error(cli("run", tmp_path, "-q"), "is a directory")


def test_mine_with_filter_shares_the_warning_and_strict(cli, tmp_path):
    from tests.conftest import example_like_sets

    de, en = example_like_sets(tmp_path)
    args = ["mine", "--src", de, "--tgt", en, "--score", "ratio", "--threshold", "1.1", "--filter", "--src-lang", "en",
            "--tgt-lang", "de"]
    warned = cli(*args, "-o", tmp_path / "p.tsv", "-q")
    assert warned.exit_code == 0 and "columns look swapped" in warned.stderr, warned.stderr
    assert "swapped" in json.loads((tmp_path / "p.tsv.json").read_text())["filter"]["warnings"][0]
    one_line_error(cli(*args, "-o", tmp_path / "strict.tsv", "-q", "--strict"), "columns look swapped", "(--strict)")
    assert not (tmp_path / "strict.tsv").exists() and not (tmp_path / "strict.tsv.json").exists()


@pytest.mark.parametrize("verb", ["embed", "index", "score-pairs", "report", "calibrate", "eval tatoeba", "eval bucc",
                                  "train", "run", "plan"])
def test_json_never_replaces_an_input(cli, tmp_path, repeating_sets, verb):
    de, en = repeating_sets
    pairs = gold_pairs(tmp_path)
    config = tmp_path / "p.yaml"
    config.write_text(f"output: {tmp_path / 'out'}\nlanguages: {{de: {de / 'de.txt'}, en: {en / 'en.txt'}}}\n"
                      "pairs: [[de, en]]\n")
    args, victim = {
        "embed": (["embed", de / "de.txt", "-o", tmp_path / "emb"], de / "de.txt"),
        "index": (["index", de, "-o", tmp_path / "idx"], de / "manifest.json"),
        "score-pairs": (["score-pairs", pairs, "--src", de, "--tgt", en, "-o", tmp_path / "s.tsv"], pairs),
        "report": (["report", pairs, "-o", tmp_path / "r.html"], pairs),
        "calibrate": (["calibrate", "--src", de, "--tgt", en], en / "manifest.json"),
        "eval tatoeba": (["eval", "tatoeba", de / "de.txt", en / "en.txt"], en / "en.txt"),
        "eval bucc": (["eval", "bucc", pairs, pairs, pairs], pairs),
        "train": (["train", pairs, "-o", tmp_path / "ckpt", "--max-steps", "1"], pairs),
        "run": (["run", config, "--launcher", "inline"], config),
        "plan": (["plan", config], de / "de.txt"),
    }[verb]
    before = snapshot(tmp_path)
    one_line_error(cli(*args, "--json", victim, "-q"), str(victim), "input")
    assert_unchanged(before, tmp_path)
