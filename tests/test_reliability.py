"""What is guaranteed, under abuse: every failure is one line and exit 1, nothing half written.

Outputs (devices, FIFOs, links, ``-``, an output that is an input), damaged inputs,
a full disk, paths out of artifacts, index checksums, one writer at a time, the pairs
file and its sidecar, and ``run`` (input errors, crashes, damaged outputs, stopping).
All through the command line.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import EXAMPLES, REPO, clustered_vectors, make_embedding_set, read_lines, wait_for

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def one_line_error(result, *fragments: str) -> str:
    """The result is exit 1 with one line `bitextmine: error: ...` holding every fragment."""
    lines = [x for x in result.stderr.splitlines() if x.strip()]
    assert result.exit_code == 1, (result.exit_code, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    assert len(lines) == 1 and lines[0].startswith("bitextmine: error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` with its size and modification time."""
    return {str(p.relative_to(root)): (p.lstat().st_size, p.lstat().st_mtime_ns)
            for p in sorted(root.rglob("*")) if not p.is_dir() or p.is_symlink()}


def assert_unchanged(before: dict, root: Path, *allowed: str) -> None:
    after = snapshot(root)
    changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    assert changed <= set(allowed), sorted(changed - set(allowed))


@pytest.fixture
def sets(tmp_path):
    """Two small synthetic embedding sets whose rows i are translations of each other."""
    src = clustered_vectors(60, dim=32, seed=1)
    noise = 0.05 * np.random.default_rng(2).standard_normal(src.shape).astype(np.float32)
    tgt = src + noise
    tgt /= np.linalg.norm(tgt, axis=1, keepdims=True)
    make_embedding_set(tmp_path / "src", src, [f"Satz Nummer {i}" for i in range(60)], shard="de")
    make_embedding_set(tmp_path / "tgt", tgt, [f"sentence number {i}" for i in range(60)], shard="en")
    return tmp_path / "src", tmp_path / "tgt"


def mine_args(sets, *more):
    return ["mine", "--src", sets[0], "--tgt", sets[1], "--margin", "absolute", "--threshold", "0.5", "-q", *more]


def run_cli(*args) -> subprocess.CompletedProcess:
    """The CLI in a process of its own."""
    return subprocess.run([sys.executable, "-m", "bitextmine", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True)


# --- outputs: devices, FIFOs, links, standard output --------------------------------------

@pytest.fixture
def char_device(tmp_path):
    """A character device to write to: a private copy of /dev/null as root (so that a bug
    cannot replace the real one), /dev/null itself otherwise (a non-root user cannot)."""
    if not IS_ROOT:
        return Path("/dev/null")
    path = tmp_path / "null"
    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    return path


def test_a_character_device_is_written_through_with_no_sidecar(cli, sets, char_device):
    listing = sorted(os.listdir(char_device.parent))
    result = cli(*mine_args(sets, "-o", char_device))
    assert result.exit_code == 0, result.stderr
    assert stat.S_ISCHR(char_device.stat().st_mode)
    assert sorted(os.listdir(char_device.parent)) == listing  # no .json sidecar, no temporary


def test_a_fifo_is_written_through(cli, sets, tmp_path):
    fifo = tmp_path / "pairs.fifo"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text(encoding="utf-8")))
    reader.start()
    result = cli(*mine_args(sets, "-o", fifo))
    reader.join(timeout=30)
    assert result.exit_code == 0, result.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert received and received[0].count("\n") >= 50 and "Satz Nummer" in received[0]
    assert not (tmp_path / "pairs.fifo.json").exists()


def test_a_link_through_proc_is_written_through(sets, tmp_path):
    link = tmp_path / "stdout.json"
    link.symlink_to("/proc/self/fd/1")  # what /dev/stdout is
    done = run_cli(*mine_args(sets, "-o", tmp_path / "pairs.tsv", "--json", link))
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and os.readlink(link) == "/proc/self/fd/1"
    assert json.loads(done.stdout)["output_rows"] > 50


def test_a_link_to_a_file_keeps_the_link_and_replaces_the_target(cli, sets, tmp_path):
    target = tmp_path / "real.tsv"
    target.write_text("old\n")
    link = tmp_path / "pairs.tsv"
    link.symlink_to(target)
    assert cli(*mine_args(sets, "-o", link)).exit_code == 0
    assert link.is_symlink() and "Satz Nummer" in target.read_text()
    assert json.loads((tmp_path / "pairs.tsv.json").read_text())["output_rows"] > 50


def test_dash_is_standard_output_for_json_too(cli, sets, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = cli(*mine_args(sets, "-o", "pairs.tsv", "--json", "-"))
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["pairs"] > 50
    assert not (tmp_path / "-").exists()
    both = cli(*mine_args(sets, "-o", "-", "--json", "-"))  # a usage error, caught before any work
    assert both.exit_code == 2 and "standard output" in both.stderr and "Traceback" not in both.stderr
    assert not both.stdout


def test_an_output_that_is_an_input_is_refused_before_any_work(cli, sets, tmp_path):
    before = snapshot(tmp_path)
    one_line_error(cli(*mine_args(sets, "-o", sets[0] / "manifest.json")), "manifest.json", "input")
    one_line_error(cli(*mine_args(sets, "-o", sets[1] / "en.txt")), "en.txt", "input")
    one_line_error(cli(*mine_args(sets, "-o", tmp_path / "p.tsv", "--json", tmp_path / "p.tsv")), "two outputs")
    assert_unchanged(before, tmp_path)

    assert cli(*mine_args(sets, "-o", tmp_path / "pairs.tsv")).exit_code == 0
    before = snapshot(tmp_path)
    one_line_error(cli("filter", tmp_path / "pairs.tsv", "-o", tmp_path / "pairs.tsv", "-q"), "is also an input")
    one_line_error(cli("report", tmp_path / "pairs.tsv", "-o", tmp_path / "pairs.tsv"), "is also an input")
    one_line_error(cli("index", sets[0], "-o", sets[0], "-q"), "input")
    assert_unchanged(before, tmp_path)


def test_json_never_replaces_what_the_command_reads(cli, sets, tmp_path):
    """--json is an output like -o: not an embedding set's text, not the sidecar report reads
    by default, not prepare's input or shard; refused before any work."""
    import dataclasses

    from bitextmine.embed.embedding_set import EmbeddingSet

    emb_set = EmbeddingSet.load(sets[0])  # its text moved out of the set, as `embed` leaves it
    text = tmp_path / "de.txt"
    (sets[0] / "de.txt").rename(text)
    emb_set.shards = [dataclasses.replace(emb_set.shards[0], source=str(text))]
    emb_set.save()
    assert cli(*mine_args(sets, "-o", tmp_path / "pairs.tsv")).exit_code == 0
    before = snapshot(tmp_path)
    one_line_error(cli("calibrate", "--src", sets[0], "--tgt", sets[1], "-k", "2", "-q", "--json", text),
                   "de.txt", "input")
    one_line_error(cli("score-pairs", tmp_path / "pairs.tsv", "--src", sets[0], "--tgt", sets[1], "-o",
                       tmp_path / "rescored.tsv", "-q", "--json", text), "de.txt", "input")
    one_line_error(cli("report", tmp_path / "pairs.tsv", "-o", tmp_path / "pairs.tsv.json"), "is also an input")
    one_line_error(cli("report", tmp_path / "pairs.tsv", "-o", tmp_path / "r.html", "--json",
                       tmp_path / "pairs.tsv.json"), "is also an input")
    assert_unchanged(before, tmp_path)

    lines = tmp_path / "lines.txt"
    lines.write_text("Ein ganz gewöhnlicher Satz.\nNoch ein Satz hier.\n", encoding="utf-8")
    one_line_error(cli("prepare", lines, "--lang", "de", "-o", tmp_path / "prep", "-q", "--json", lines), "input")
    one_line_error(cli("prepare", lines, "--lang", "de", "-o", tmp_path / "prep", "-q", "--json",
                       tmp_path / "prep" / "lines.0000.txt"), "input")
    assert lines.read_text(encoding="utf-8").startswith("Ein ganz")


def test_json_into_a_place_that_cannot_be_written_fails_before_any_work(cli, sets, tmp_path):
    pairs = _pairs(cli, sets, tmp_path)
    blocker = tmp_path / "file.txt"
    blocker.write_text("a file\n")
    before = snapshot(tmp_path)
    one_line_error(cli("score-pairs", pairs, "--src", sets[0], "--tgt", sets[1], "-o", tmp_path / "out.tsv", "-q",
                       "--json", blocker / "x.json"), "file.txt/x.json", "cannot write")
    one_line_error(cli("calibrate", "--src", sets[0], "--tgt", sets[1], "-q", "--json", blocker / "sub" / "c.json"),
                   "cannot write")
    assert_unchanged(before, tmp_path)
    # a folder that does not exist yet is made, by every verb alike
    result = cli("report", pairs, "-o", tmp_path / "page" / "r.html", "--json", tmp_path / "new" / "r.json")
    assert result.exit_code == 0, result.stderr
    assert json.loads((tmp_path / "new" / "r.json").read_text())["written"]
    result = cli(*mine_args(sets, "-o", tmp_path / "mined" / "p.tsv", "--json", tmp_path / "meta" / "p.json"))
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / "mined" / "p.tsv").read_text() and json.loads((tmp_path / "meta" / "p.json").read_text())
    result = cli("filter", pairs, "-o", tmp_path / "kept" / "f.tsv", "--rejects", tmp_path / "dropped" / "r.tsv")
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / "kept" / "f.tsv").exists() and (tmp_path / "dropped" / "r.tsv").exists()


def _pairs(cli, sets, tmp_path) -> Path:
    assert cli(*mine_args(sets, "-o", tmp_path / "pairs.tsv")).exit_code == 0
    return tmp_path / "pairs.tsv"


def test_a_second_output_into_standard_output_is_a_usage_error(cli, sets, tmp_path):
    """/dev/stdout and a file stdout is redirected to are standard output as much as - is."""
    pairs = _pairs(cli, sets, tmp_path)
    with open(tmp_path / "captured", "w") as out:
        done = subprocess.run([sys.executable, "-m", "bitextmine", *map(str, mine_args(sets, "-o", "-", "--json",
                                                                                       "/dev/stdout"))],
                              cwd=REPO, stdout=out, stderr=subprocess.PIPE, text=True)
    assert done.returncode == 2 and "--json" in done.stderr and "Traceback" not in done.stderr
    assert (tmp_path / "captured").read_text() == ""
    rejects = cli("filter", pairs, "-o", "-", "--rejects", "-", "-q")
    assert rejects.exit_code == 2 and "--rejects" in rejects.stderr


def test_output_under_a_regular_file_is_one_line(cli, sets, tmp_path):
    blocker = tmp_path / "file.txt"
    blocker.write_text("a file\n")
    before = snapshot(tmp_path)
    one_line_error(cli(*mine_args(sets, "-o", blocker / "pairs.tsv")), "not a directory")
    one_line_error(cli("index", sets[0], "-o", blocker / "idx", "-q"), "is a file, not a directory")
    one_line_error(cli("embed", EXAMPLES / "de.txt", "-o", blocker / "emb", "-q"), "is a file, not a directory")
    assert_unchanged(before, tmp_path)


@pytest.mark.slow
def test_permission_denied_is_one_line(sets, tmp_path):
    """Root ignores permissions: as root the commands run without that capability (setpriv)."""
    wrapper = []
    if IS_ROOT:
        if not shutil.which("setpriv"):
            pytest.skip("needs setpriv to drop root's permission override")
        wrapper = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        for args in (mine_args(sets, "-o", locked / "pairs.tsv"), ["index", sets[0], "-o", locked / "idx", "-q"],
                     ["embed", EXAMPLES / "de.txt", "-o", locked / "emb", "-q"]):
            done = subprocess.run([*wrapper, sys.executable, "-m", "bitextmine", *map(str, args)], cwd=REPO,
                                  capture_output=True, text=True)
            lines = [x for x in done.stderr.splitlines() if x.strip()]
            assert done.returncode == 1 and len(lines) == 1, done.stderr
            assert lines[0].startswith(f"bitextmine: error: {locked}") and "permission denied" in lines[0]
        assert os.listdir(locked) == []
    finally:
        locked.chmod(0o755)


# --- damaged inputs -----------------------------------------------------------------------

def test_pipes_are_read_where_a_file_is_read_once(cli, sets, tmp_path):
    """A FIFO (what <(...) gives) is read as it comes, like -; a directory is named as one."""
    pairs = _pairs(cli, sets, tmp_path)
    fifo = tmp_path / "pairs.fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(pairs.read_bytes()))
    writer.start()
    result = cli("filter", fifo, "-o", tmp_path / "kept.tsv", "--skip", "boilerplate", "-q")
    writer.join(timeout=30)
    assert result.exit_code == 0, result.stderr
    assert read_lines(tmp_path / "kept.tsv") and "Satz Nummer" in (tmp_path / "kept.tsv").read_text()
    one_line_error(cli("filter", tmp_path, "-o", "-", "-q"), "is a directory")


def test_a_set_given_twice_for_one_side_is_refused(cli, sets):
    one_line_error(cli("mine", "--src", sets[0], "--src", sets[0], "--tgt", sets[1], "-o", "-", "-q"),
                   "given twice for one side")


def test_calibrate_refuses_the_k_that_mine_refuses(cli, sets):
    for verb, output in (("calibrate", []), ("mine", ["-o", "-"])):
        command = [verb, "--src", sets[0], "--tgt", sets[1], *output]
        one_line_error(cli(*command, "-k", "60", "-q"), "-k 60 needs more than 60 distinct sentences")


def test_eval_refuses_sets_of_one_name_and_ids_given_twice(cli, tmp_path):
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "t.de").write_text("Hallo.\nWie geht es?\n", encoding="utf-8")
        (tmp_path / folder / "t.en").write_text("Hello.\nHow are you?\n", encoding="utf-8")
    one_line_error(cli("eval", "tatoeba", *(tmp_path / f / n for f in "ab" for n in ("t.de", "t.en")), "-q"),
                   "two sets are named 't.de'")
    src = tmp_path / "b.de"
    src.write_text("d1\tHallo.\nd2\tWie geht es?\nd1\tNoch einmal.\n", encoding="utf-8")
    (tmp_path / "b.en").write_text("e1\tHello.\ne2\tHow are you?\n", encoding="utf-8")
    (tmp_path / "b.gold").write_text("d1\te1\n", encoding="utf-8")
    one_line_error(cli("eval", "bucc", src, tmp_path / "b.en", tmp_path / "b.gold", "-q"),
                   "b.de:3:", "'d1' given twice (also on line 1)")



@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncated", "not gzip"])
def test_a_damaged_gz_shard_is_one_line(cli, tmp_path, damage):
    data = gzip.compress((EXAMPLES / "de.txt").read_bytes())
    shard = tmp_path / "de.txt.gz"
    shard.write_bytes(data[: len(data) // 2] if damage == "truncated" else b"plain text, not gzip\n")
    one_line_error(cli("embed", shard, "-o", tmp_path / "emb", "-q"), f"{shard}: cannot decompress")
    assert not (tmp_path / "emb").exists()


@pytest.mark.parametrize("manifest, fragment", [
    ("[]", "malformed manifest: a JSON object is expected, not a list"),
    ('"text"', "malformed manifest: a JSON object is expected, not a str"),
    ("{", "unreadable manifest"),
])
def test_a_manifest_that_is_not_an_object_is_one_line(cli, sets, tmp_path, manifest, fragment):
    (sets[0] / "manifest.json").write_text(manifest)
    one_line_error(cli(*mine_args(sets, "-o", tmp_path / "p.tsv")), f"{sets[0] / 'manifest.json'}: {fragment}")
    one_line_error(cli("index", sets[0], "-o", tmp_path / "idx", "-q"), fragment)
    one_line_error(cli("embed", EXAMPLES / "de.txt", "-o", sets[0], "-q"), fragment)
    assert not (tmp_path / "p.tsv").exists() and not (tmp_path / "idx").exists()


@pytest.mark.parametrize("key, value, fragment", [
    ("lines", "many", "shards.0.lines: must be an integer, not str 'many'"),
    ("file", 7, "shards.0.file: must be a string"),
    ("source_sha256", None, "shards.0.source_sha256: must be a string"),
    ("extra", 1, "shards.0.extra: unknown key"),
])
def test_a_manifest_with_wrong_types_is_one_line(cli, sets, tmp_path, key, value, fragment):
    path = sets[0] / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["shards"][0][key] = value
    path.write_text(json.dumps(manifest))
    one_line_error(cli(*mine_args(sets, "-o", tmp_path / "p.tsv")), f"{path}: {fragment}")


@pytest.mark.parametrize("option, content, fragment", [
    ("--meta", "{not json", "not valid JSON"),
    ("--meta", "[1, 2]", "a JSON object is expected, not a list"),
    ("--meta", '{"parameters": {"threshold": "high"}}', "parameters.threshold: must be a number"),
    ("--filter-report", "[]", "a JSON object is expected, not a list"),
    ("--filter-report", '{"total": 3, "kept": "all"}', "kept: must be an integer"),
    ("--filter-report", '{"kept": 3}', "not a filter report (the JSON `filter` writes): it has no 'total'"),
    ("--meta", '{"method": "seeds"}', "not a mining sidecar"),
])
def test_report_with_bad_json_is_one_line_and_writes_nothing(cli, tmp_path, option, content, fragment):
    mined = tmp_path / "pairs.tsv"
    mined.write_text("1.2\tHallo\tHello\n1.1\tJa\tYes\n")
    side = tmp_path / "side.json"
    side.write_text(content)
    one_line_error(cli("report", mined, "-o", tmp_path / "out" / "report.html", option, side), str(side), fragment)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("score", ["nan", "inf", "-inf"])
def test_report_refuses_scores_that_are_not_numbers(cli, tmp_path, score):
    mined = tmp_path / "pairs.tsv"
    mined.write_text(f"1.2\tHallo\tHello\n{score}\tJa\tYes\n")
    one_line_error(cli("report", mined, "-o", tmp_path / "out" / "report.html"), f"{mined}:2:", "not a finite")
    assert not (tmp_path / "out").exists()


def test_report_to_standard_output_writes_no_png(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pairs.tsv").write_text("1.2\tHallo\tHello\n1.1\tJa\tYes\n")
    result = cli("report", "pairs.tsv", "-o", "-")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("<!doctype html>") and sorted(os.listdir(tmp_path)) == ["pairs.tsv"]


# --- a full disk --------------------------------------------------------------------------

@pytest.mark.slow
def test_embed_on_a_full_disk_is_one_line_not_sigbus(cli, tmp_path, small_disk):
    disk = small_disk(64)
    result = cli("embed", EXAMPLES / "de.txt", "-o", disk / "emb", "-q")  # 500 x 512 fp16 = 500 KiB
    one_line_error(result, f"{disk / 'emb' / 'de.npy'}: not enough free space")
    assert not (disk / "emb").exists()


@pytest.mark.slow
def test_embed_when_the_disk_fills_while_writing_is_one_line(cli, tmp_path, small_disk, monkeypatch):
    """As if another process filled the disk after the free-space check."""
    import bitextmine.embed.shard

    monkeypatch.setattr(bitextmine.embed.shard, "_check_free_space", lambda *args: None)
    disk = small_disk(64)
    one_line_error(cli("embed", EXAMPLES / "de.txt", "-o", disk / "emb", "-q"), "de.npy: cannot write: no space left")
    assert not (disk / "emb").exists()


@pytest.mark.slow
def test_mine_on_a_full_disk_is_one_line_and_leaves_no_half_file(cli, sets, small_disk):
    disk = small_disk(64)
    fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT)
    with contextlib.suppress(OSError):  # fill it up
        while True:
            os.write(fd, b"x" * 4096)
    os.close(fd)
    for extra in ([], ["--filter", "--skip", "lid"]):
        one_line_error(cli(*mine_args(sets, "-o", disk / "pairs.tsv.gz" if extra else disk / "pairs.tsv", *extra)),
                       "cannot write: no space left on the device")
        assert sorted(os.listdir(disk)) == ["filler"]


@pytest.mark.slow
def test_index_on_a_full_disk_is_one_line(cli, tmp_path, small_disk):
    make_embedding_set(tmp_path / "big", clustered_vectors(300, dim=64))
    disk = small_disk(32)
    one_line_error(cli("index", tmp_path / "big", "-o", disk / "idx", "-q"),
                   f"{disk / 'idx' / 'index.faiss'}: cannot write: no space left on the device")
    assert os.listdir(disk) == []


# --- paths out of artifacts ---------------------------------------------------------------

@pytest.mark.parametrize("name", ["../victim/keep.npy", "/tmp/elsewhere.npy", "sub/../../victim/keep.npy",
                                  "manifest.json", ".", ".bitextmine.lock", "..\\victim\\keep.npy", ""])
def test_manifest_file_names_stay_inside_the_set(cli, sets, tmp_path, name):
    victim = tmp_path / "victim"
    victim.mkdir()
    np.save(victim / "keep.npy", np.ones((60, 32), np.float16))
    path = sets[0] / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["shards"][0]["file"] = name
    manifest["encoder"]["name"] = "other"  # `embed --overwrite` would delete the listed files
    path.write_text(json.dumps(manifest))
    before = snapshot(tmp_path)
    one_line_error(cli(*mine_args(sets, "-o", tmp_path / "p.tsv")), "shards.0.file must be a plain file name")
    one_line_error(cli("embed", EXAMPLES / "de.txt", "-o", sets[0], "--overwrite", "-q"), "shards.0.file")
    assert_unchanged(before, tmp_path)


def test_a_link_out_of_the_set_is_refused(cli, sets, tmp_path):
    outside = tmp_path / "outside.npy"
    shutil.move(sets[0] / "de.npy", outside)
    (sets[0] / "de.npy").symlink_to(outside)
    one_line_error(cli(*mine_args(sets, "-o", tmp_path / "p.tsv")), "leads out of", "de.npy")


def test_links_planted_in_artifact_directories_redirect_nothing(cli, sets, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    before = victim.read_bytes()
    manifest = sets[0] / "manifest.json"
    moved = tmp_path / "elsewhere.json"
    shutil.move(manifest, moved)
    manifest.symlink_to(moved)
    one_line_error(cli(*mine_args(sets, "-o", tmp_path / "p.tsv")), "the manifest", "leads out of")
    one_line_error(cli("embed", EXAMPLES / "de.txt", "-o", sets[0], "-q"), "the manifest", "leads out of")

    index_dir = tmp_path / "idx"
    index_dir.mkdir()
    for name in ("index.faiss", "index.json", ".bitextmine.lock"):  # what `index` writes there
        (index_dir / name).symlink_to(victim)
    one_line_error(cli("index", sets[1], "-o", index_dir, "-q"), ".bitextmine.lock is a link, not a lock")
    (index_dir / ".bitextmine.lock").unlink()
    assert cli("index", sets[1], "-o", index_dir, "-q").exit_code == 0  # the links are replaced, not followed
    assert victim.read_bytes() == before and not (index_dir / "index.faiss").is_symlink()
    (tmp_path / "pairs.tsv.lock").symlink_to(victim)
    one_line_error(cli(*mine_args((sets[1], sets[1]), "-o", tmp_path / "pairs.tsv")), "pairs.tsv.lock is a link")
    assert victim.read_bytes() == before


def test_a_stdin_text_file_name_stays_inside_the_set(cli, sets, tmp_path):
    path = sets[0] / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["shards"][0]["text_file"] = "../../etc/passwd"
    path.write_text(json.dumps(manifest))
    one_line_error(cli(*mine_args(sets, "-o", tmp_path / "p.tsv")), "shards.0.text_file must be a plain file name")


def test_a_pipeline_language_key_cannot_leave_the_output(cli, tmp_path):
    config = tmp_path / "p.yaml"
    config.write_text(f"output: {tmp_path / 'out'}\nlanguages: {{'../../escape': {EXAMPLES / 'de.txt'}}}\n"
                      "pairs: [['../../escape', '../../escape']]\n")
    one_line_error(cli("run", config, "--launcher", "inline"), f"{config}: languages.../../escape", "plain name")
    assert not (tmp_path / "out").exists() and not (tmp_path.parent / "escape").exists()


# --- index checksum -----------------------------------------------------------------------

@pytest.fixture
def indexed(cli, sets, tmp_path):
    for side, name in zip(sets, ("src.idx", "tgt.idx"), strict=True):
        assert cli("index", side, "-o", tmp_path / name, "-q").exit_code == 0
    return tmp_path / "src.idx", tmp_path / "tgt.idx"


def index_args(sets, indexed, out):
    return [*mine_args(sets, "-o", out), "--src-index", indexed[0], "--tgt-index", indexed[1]]


def test_the_index_checksum_is_recorded_and_a_flipped_byte_refused(cli, sets, tmp_path, indexed):
    meta = json.loads((indexed[1] / "index.json").read_text())
    faiss_file = indexed[1] / "index.faiss"
    assert len(meta["index_sha256"]) == 64
    assert cli(*index_args(sets, indexed, tmp_path / "ok.tsv")).exit_code == 0
    data = bytearray(faiss_file.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, other vectors
    faiss_file.write_bytes(bytes(data))
    one_line_error(cli(*index_args(sets, indexed, tmp_path / "p.tsv")), f"{faiss_file}: checksum mismatch")
    assert not (tmp_path / "p.tsv").exists()


def test_a_truncated_index_is_one_line(cli, sets, tmp_path, indexed):
    faiss_file = indexed[1] / "index.faiss"
    faiss_file.write_bytes(faiss_file.read_bytes()[:100])
    one_line_error(cli(*index_args(sets, indexed, tmp_path / "p.tsv")), f"{faiss_file}: checksum mismatch")
    meta_path = indexed[1] / "index.json"  # without a checksum to catch it: faiss's own error, on one line
    meta = json.loads(meta_path.read_text())
    del meta["index_sha256"]
    meta_path.write_text(json.dumps(meta))
    result = cli(*index_args(sets, indexed, tmp_path / "p.tsv"))
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 1 and "Traceback" not in result.stderr
    assert "records no checksum" in lines[0]  # the warning about the old index.json, then the error
    assert lines[1].startswith(f"bitextmine: error: {faiss_file}: not a readable FAISS index") and len(lines) == 2


def test_an_old_index_without_checksum_is_used_with_a_warning(cli, sets, tmp_path, indexed):
    meta_path = indexed[1] / "index.json"
    meta = json.loads(meta_path.read_text())
    del meta["index_sha256"]
    meta_path.write_text(json.dumps(meta))
    result = cli(*index_args(sets, indexed, tmp_path / "p.tsv"))
    assert result.exit_code == 0, result.stderr
    assert "records no checksum" in result.stderr and "rebuild" in result.stderr


@pytest.mark.parametrize("meta, fragment", [("[]", "not a bitextmine-index"), ("{", "unreadable index metadata")])
def test_a_damaged_index_json_is_one_line(cli, sets, tmp_path, indexed, meta, fragment):
    (indexed[0] / "index.json").write_text(meta)
    one_line_error(cli(*index_args(sets, indexed, tmp_path / "p.tsv")), fragment)


# --- one writer at a time -----------------------------------------------------------------

HOLD_LOCK = """
import sys, time
from bitextmine.io.lock import output_lock
with output_lock(sys.argv[1], directory=sys.argv[2] == "dir"):
    print("held", flush=True)
    time.sleep(120)
"""


@contextlib.contextmanager
def lock_held_by_another_process(path, directory: bool):
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(path), "dir" if directory else "file"],
                              cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        yield holder
    finally:
        holder.kill()  # SIGKILL: no chance to clean up, and still no stale lock
        holder.wait()


@pytest.mark.slow
def test_sigterm_ends_a_command_as_ctrl_c_does(tmp_path):
    """timeout, Slurm and Kubernetes stop a command with SIGTERM: its temporary files and
    locks go, it says so in one line and exits 143."""
    text = tmp_path / "de.txt"
    text.write_text("".join(f"Satz Nummer {i} über etwas ganz anderes.\n" for i in range(60_000)), encoding="utf-8")
    out = tmp_path / "set"
    embed = subprocess.Popen([sys.executable, "-m", "bitextmine", "embed", str(text), "-o", str(out), "-q"], cwd=REPO,
                             stderr=subprocess.PIPE, text=True)
    wait_for(lambda: (out / ".bitextmine.lock").exists() or embed.poll() is not None)
    time.sleep(1.0)  # into the embedding
    embed.send_signal(signal.SIGTERM)
    _, err = embed.communicate(timeout=120)
    assert embed.returncode == 143, err
    assert err.strip().splitlines() == ["bitextmine: terminated"]
    assert not out.exists() or not [p for p in out.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.slow
def test_workers_of_a_killed_command_die_with_it_and_leave_no_lock(tmp_path):
    """Forked workers share the output's lock: a parent killed outright (SIGKILL, out of
    memory) must take them with it, or the next run is refused for good."""
    text = tmp_path / "de.txt"
    text.write_text("".join(f"Der {i}. Satz handelt von etwas ganz anderem als der davor.\n" for i in range(200_000)),
                    encoding="utf-8")
    out = tmp_path / "prepared"
    args = [sys.executable, "-m", "bitextmine", "prepare", str(text), "-o", str(out), "--lang", "de",
            "--workers", "2", "-q"]
    prepare = subprocess.Popen(args, cwd=REPO, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: (out / ".bitextmine.lock").exists() or prepare.poll() is not None)

    def workers() -> list[int]:
        return [int(p) for p in subprocess.run(["pgrep", "-P", str(prepare.pid)], capture_output=True,
                                               text=True).stdout.split()]

    # the workers start once the input is read, later on a slow machine: wait for them, not a fixed time
    children = wait_for(lambda: workers() or prepare.poll() is not None)
    children = children if isinstance(children, list) else []
    time.sleep(0.5)  # the workers are judging
    prepare.kill()
    prepare.wait()
    assert children, "prepare had no workers when killed"
    wait_for(lambda: not any(Path(f"/proc/{pid}").exists() for pid in children))
    rerun = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr


def test_a_second_writer_fails_at_once_and_a_killed_one_leaves_no_stale_lock(cli, sets, tmp_path):
    out = tmp_path / "pairs.tsv"
    with lock_held_by_another_process(out, directory=False) as holder:
        started = time.time()
        line = one_line_error(cli(*mine_args(sets, "-o", out)), f"{out}: another bitextmine process",
                              f"pid {holder.pid}", "pairs.tsv.lock")
        assert time.time() - started < 10, line
        assert not out.exists()
        one_line_error(cli("filter", EXAMPLES / "gold.tsv", "-o", out, "-q"), f"pid {holder.pid}")
    assert cli(*mine_args(sets, "-o", out)).exit_code == 0  # the holder was killed: the lock went with it

    index_dir = tmp_path / "idx"
    index_dir.mkdir()
    with lock_held_by_another_process(index_dir, directory=True) as holder:
        one_line_error(cli("index", sets[0], "-o", index_dir, "-q"), f"{index_dir}: another", f"pid {holder.pid}")
        one_line_error(cli("embed", EXAMPLES / "de.txt", "-o", index_dir, "-q"), f"pid {holder.pid}")
    assert cli("index", sets[0], "-o", index_dir, "-q").exit_code == 0
    assert not (index_dir / ".bitextmine.lock").exists()


def test_a_second_run_on_one_output_fails_at_once(cli, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    config = tmp_path / "p.yaml"
    config.write_text(f"output: {out}\nlanguages: {{de: {EXAMPLES / 'de.txt'}, en: {EXAMPLES / 'en.txt'}}}\n"
                      "pairs: [[de, en]]\n")
    with lock_held_by_another_process(out, directory=True) as holder:
        one_line_error(cli("run", config, "--launcher", "inline", "-q"), f"{out}: another", f"pid {holder.pid}")
    assert sorted(os.listdir(out)) == [".bitextmine.lock"]  # left by the killed holder; harmless


@pytest.mark.slow
def test_two_embeds_into_one_set_one_refused_the_set_intact(tmp_path):
    shard = tmp_path / "de.txt"
    shard.write_text("".join(f"{line}\n" for line in read_lines(EXAMPLES / "de.txt") * 4))
    command = [sys.executable, "-m", "bitextmine", "embed", str(shard), "-o", str(tmp_path / "emb"), "-q",
               "--device", "cpu"]
    first = subprocess.Popen(command, cwd=REPO, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while not (tmp_path / "emb" / ".bitextmine.lock").exists() and time.time() < deadline:
        time.sleep(0.05)
    second = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    assert first.wait(timeout=300) == 0, first.stderr.read()
    lines = second.stderr.strip().splitlines()
    assert second.returncode == 1 and len(lines) == 1 and "another bitextmine process" in lines[0], second.stderr
    from bitextmine.embed.embedding_set import EmbeddingSet

    assert EmbeddingSet.load(tmp_path / "emb", verify=True).shards[0].lines == 2000


# --- the pairs file and its sidecar -------------------------------------------------------

def test_the_sidecar_records_the_tsv_checksum_and_readers_check_it(cli, sets, tmp_path):
    from bitextmine.io.text import file_sha256

    out = tmp_path / "pairs.tsv"
    assert cli(*mine_args(sets, "-o", out)).exit_code == 0
    side = json.loads((tmp_path / "pairs.tsv.json").read_text())
    assert side["output_sha256"] == file_sha256(out) and side["output_rows"] == len(out.read_text().splitlines())
    assert cli("report", out, "-o", tmp_path / "r" / "index.html").exit_code == 0

    out.write_text("".join(out.read_text().splitlines(keepends=True)[:10]))  # a new TSV beside the old sidecar
    one_line_error(cli("report", out, "-o", tmp_path / "r2" / "index.html"), f"{out}:",
                   "does not describe this file")
    assert not (tmp_path / "r2").exists()


def test_mine_with_filter_records_the_kept_rows(cli, sets, tmp_path):
    out = tmp_path / "kept.tsv.gz"
    assert cli(*mine_args(sets, "-o", out, "--filter", "--skip", "lid", "--rejects", tmp_path / "rej.tsv")) \
        .exit_code == 0
    side = json.loads((tmp_path / "kept.tsv.gz.json").read_text())
    assert side["output_rows"] == side["filter"]["kept"] == len(gzip.decompress(out.read_bytes()).splitlines())


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
def test_pairs_whose_sidecar_cannot_be_written_are_not_left_behind(cli, sets, tmp_path):
    """The sidecar fails after the pairs were written (a full disk): neither the pairs nor the
    rejects stay, as no half of a result does."""
    out, rejects = tmp_path / "kept.tsv", tmp_path / "rej.tsv"
    result = cli(*mine_args(sets, "-o", out, "--json", "/dev/full", "--filter", "--skip", "lid",
                            "--rejects", rejects))
    one_line_error(result, "/dev/full:", "no space left")
    assert not out.exists() and not rejects.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(("kept", "rej", "."))]


# --- run ----------------------------------------------------------------------------------

def write_pipeline(tmp_path, shards_de, shards_en, extra: str = "", retries: int = 1) -> Path:
    config = tmp_path / "p.yaml"
    config.write_text(f"output: {tmp_path / 'out'}\nlanguages:\n  de: {[str(s) for s in shards_de]}\n"
                      f"  en: {[str(s) for s in shards_en]}\npairs: [[de, en]]\n"
                      f"launcher: {{workers: 2, retries: {retries}}}\n{extra}")
    return config


def small_shards(tmp_path, lines: int = 40) -> tuple[Path, Path]:
    """The first ``lines`` gold pairs of the examples, one side per shard: pools of translations,
    so that mine keeps pairs (the examples' first lines hold almost none)."""
    de, en = tmp_path / "de.txt", tmp_path / "en.txt"
    gold = [line.split("\t") for line in read_lines(EXAMPLES / "gold.tsv")[:lines]]
    de_lines, en_lines = read_lines(EXAMPLES / "de.txt"), read_lines(EXAMPLES / "en.txt")
    de.write_text("".join(de_lines[int(i) - 1] + "\n" for i, _ in gold))
    en.write_text("".join(en_lines[int(j) - 1] + "\n" for _, j in gold))
    return de, en


@pytest.mark.slow
def test_run_reports_an_input_error_at_once_with_its_message(cli, tmp_path):
    de, en = small_shards(tmp_path)
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"gut\nschlecht \xc3\x28\n")
    config = write_pipeline(tmp_path, [de, bad], [en], retries=2)
    result = cli("run", config, "--launcher", "local", "-q")
    one_line_error(result, f"{bad}:2: invalid UTF-8", "(embed task de/bad)")
    assert "crashed" not in result.stderr
    jobs = [p for p in (tmp_path / "out" / "logs" / "embed").glob("*_0_log.err")]
    assert len(jobs) == 2  # the first wave (de, bad), once: not retried, and no wave after it

    config.write_text(config.read_text() + "embed: {errors: replace}\n")  # what the CLI's --errors does
    result = cli("run", config, "--launcher", "inline", "-q")
    assert result.exit_code == 0, result.stderr


def find_processes(fragment: str) -> list[int]:
    """Processes whose command line holds ``fragment`` (a path of this test's own)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if fragment in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                    found.append(int(entry.name))
    return found


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="finds worker processes through /proc")
def test_a_crashed_task_is_retried_and_its_cause_quoted(tmp_path):
    de, en = small_shards(tmp_path)
    logs = str(tmp_path / "out" / "logs" / "embed")
    for retries, expect_success in ((0, False), (1, True)):  # the embed stage only: enough to crash
        shutil.rmtree(tmp_path / "out", ignore_errors=True)
        config = write_pipeline(tmp_path, [de], [en], retries=retries)
        parent = subprocess.Popen([sys.executable, "-m", "bitextmine", "run", str(config), "--stage", "embed", "-q"],
                                  cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        victim = wait_for(lambda: [p for p in find_processes(logs) if
                                   b"submitit.core._submit" in Path(f"/proc/{p}/cmdline").read_bytes()])[0]
        os.kill(victim, signal.SIGKILL)  # as the out-of-memory killer would
        _, stderr = parent.communicate(timeout=600)
        if expect_success:
            assert parent.returncode == 0, stderr
            assert "crashed (attempt 1 of 2)" in stderr
        else:
            lines = stderr.strip().splitlines()
            assert parent.returncode == 1 and len(lines) == 1, stderr
            assert "failed 1 time(s): the task's process ended without a result" in lines[0]
            assert "(log: " in lines[0] and "_log.err)" in lines[0]


@pytest.mark.slow
def test_a_crash_is_quoted_from_the_job_error_stream(tmp_path):
    """A task that raises (a bug, not bad input) fails with its exception, not submitit's wrapper."""
    from bitextmine.errors import BitextmineError
    from bitextmine.launch.config import load_config
    from bitextmine.launch.pipeline import Task
    from bitextmine.launch.runner import Launcher

    de, en = small_shards(tmp_path)
    cfg = load_config(write_pipeline(tmp_path, [de], [en], retries=0))
    task = Task("embed", "de/x", tmp_path / "out" / "x", "run_embed", {"bogus": 1})
    with pytest.raises(BitextmineError, match=r"^embed task de/x failed 1 time\(s\): TypeError: run_embed\(\) got an "
                                              r"unexpected keyword argument 'bogus' \(log: .*_log\.err\)$"):
        Launcher(cfg, "local").run("embed", [task])


@pytest.mark.slow
def test_a_damaged_output_under_a_done_marker_is_redone(cli, tmp_path):
    de, en = small_shards(tmp_path)
    config = write_pipeline(tmp_path, [de], [en])
    assert cli("run", config, "--launcher", "inline", "-q").exit_code == 0
    pairs = (tmp_path / "out" / "pairs" / "de-en.tsv").read_bytes()
    npy = tmp_path / "out" / "embed" / "de" / "de" / "de.npy"
    data = bytearray(npy.read_bytes())
    data[-7] ^= 0x55
    npy.write_bytes(bytes(data))
    mined = tmp_path / "out" / "mine" / "de-en.tsv"
    mined.write_text(mined.read_text().replace("\t", " \t", 1))

    result = cli("run", config, "--launcher", "inline")
    assert result.exit_code == 0, result.stderr
    assert "de.npy is missing or damaged" in result.stderr and "de-en.tsv is missing or damaged" in result.stderr
    ran = {s["stage"]: s["ran"] for s in json.loads((tmp_path / "out" / "summary.json").read_text())["stages"]}
    assert ran == {"embed": 1, "index": 0, "mine": 1, "filter": 0}
    assert (tmp_path / "out" / "pairs" / "de-en.tsv").read_bytes() == pairs


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "to_group"), [(signal.SIGTERM, False), (signal.SIGINT, False), (signal.SIGINT, True)])
@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="finds worker processes through /proc")
def test_stopping_run_stops_its_workers(tmp_path, sig, to_group):
    """To ``run`` alone, or as a terminal's Ctrl-C to its whole process group, workers included."""
    de, en = small_shards(tmp_path, lines=500)
    config = write_pipeline(tmp_path, [de], [en])
    logs = str(tmp_path / "out" / "logs")
    # started the way a script starts a background job: SIGINT ignored
    parent = subprocess.Popen([sys.executable, "-m", "bitextmine", "run", str(config), "-q"], cwd=REPO,
                              stderr=subprocess.PIPE, text=True, start_new_session=to_group,
                              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    wait_for(lambda: len(find_processes(logs)) >= 2)
    os.killpg(parent.pid, sig) if to_group else parent.send_signal(sig)
    _, stderr = parent.communicate(timeout=60)
    assert parent.returncode == 128 + sig and "Traceback" not in stderr, stderr
    assert stderr.strip().splitlines()[-1] == f"bitextmine: {'terminated' if sig == signal.SIGTERM else 'interrupted'}"
    wait_for(lambda: not find_processes(logs), seconds=10)
    assert not (tmp_path / "out" / ".bitextmine.lock").exists()


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="finds worker processes through /proc")
def test_a_stop_during_submission_still_stops_the_started_job(tmp_path, monkeypatch):
    """SIGINT lands after submitit started a job's process but before it returned the job."""
    import submitit

    from bitextmine.launch import runner
    from bitextmine.launch.config import load_config
    from bitextmine.launch.pipeline import STAGE_TASKS

    de, en = small_shards(tmp_path)
    cfg = load_config(write_pipeline(tmp_path, [de], [en]))
    real_submit = submitit.LocalExecutor._submit_command

    def submit_then_interrupted(self, command):
        job = real_submit(self, command)
        os.kill(os.getpid(), signal.SIGINT)  # handled at once, inside submitit's submit
        return job

    monkeypatch.setattr(submitit.LocalExecutor, "_submit_command", submit_then_interrupted)
    logs = str(tmp_path / "out" / "logs")
    with pytest.raises(KeyboardInterrupt), runner._signals_stop_the_run():
        runner.Launcher(cfg, "local").run("embed", STAGE_TASKS["embed"](cfg))
    # a controller left behind waits 60 s for its task file before it gives up
    wait_for(lambda: not find_processes(logs), seconds=20)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
def test_a_full_standard_output_is_named(monkeypatch):
    """`> /dev/full`: the error names standard output, which has no file name of its own."""
    from bitextmine.cli.options import echo, print_table
    from bitextmine.errors import BitextmineError
    from bitextmine.io.atomic import atomic_text_writer

    full = open("/dev/full", "w")  # noqa: SIM115 (closed below, where what it still buffers fails too)
    monkeypatch.setattr(sys, "stdout", full)
    with pytest.raises(BitextmineError, match="^standard output: cannot write: no space left"):
        print_table(["threshold", "pairs"], [["0.1", "3"]])
    with pytest.raises(BitextmineError, match="^standard output: cannot write: no space left"):
        with atomic_text_writer("-") as out:
            out.write("0.5\tein Satz\ta sentence\n" * 10_000)
    with pytest.raises(BitextmineError, match="^standard output: cannot write: no space left"):
        echo("bitextmine 1.0")  # doctor's report, --version
    monkeypatch.undo()
    with contextlib.suppress(OSError):
        full.close()
