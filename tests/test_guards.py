"""No silent damage, containment, and guards against the user's own mistakes.

Each case is an attack that once gave a wrong result, a traceback or a file outside the
named paths: truncated .zst shards, checkpoints that point out of their folder, an output
that replaces its input, two writers of one checkpoint, values no run can use, and input
that is plainly wrong (languages swapped).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import zstandard

from tests.conftest import EXAMPLES, read_lines
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
