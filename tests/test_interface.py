"""One consistent interface: the same names on every verb, JSON machines can read, help that
helps, and ``plan``'s calibration kept per machine.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import shlex

import numpy as np
import pytest
import zstandard

from tests.conftest import EXAMPLES, clustered_vectors, example_like_sets, make_embedding_set, read_lines
from tests.support.rates import RATES
from tests.test_cli import VERBS, assert_usage_error, bitextmine
from tests.test_reliability import one_line_error


def all_commands():
    """(words, click command) of every verb, ``eval``'s included."""
    from typer.main import get_command

    from bitextmine.cli import app

    root = get_command(app)
    for name, command in root.commands.items():
        if hasattr(command, "commands"):
            for sub, inner in command.commands.items():
                yield [name, sub], inner
        else:
            yield [name], command


def examples(command) -> list[str]:
    """The example command lines of a verb's help (its epilog), as a user would paste them."""
    return [line.strip() for line in (command.epilog or "").splitlines() if line.strip().startswith("bitextmine ")
            or " | bitextmine " in line]


# --- 9. the same name for the same thing on every verb ------------------------------------------------

@pytest.mark.parametrize("verb", VERBS, ids=" ".join)
def test_every_verb_writes_json(cli, monkeypatch, verb):
    monkeypatch.setenv("COLUMNS", "200")
    if verb == ["eval"]:
        pytest.skip("a group: its verbs have the option")
    assert "--json" in cli(*verb, "--help").stdout


@pytest.mark.parametrize("args, option", [
    (["embed", "x.txt", "-o", "out", "--lang", "xx"], "--lang"),
    (["filter", "p.tsv", "-o", "out", "--src-lang", "french"], "--src-lang"),
    (["mine", "--src", "a", "--tgt", "b", "-o", "out", "--filter", "--tgt-lang", "qqq"], "--tgt-lang"),
    (["eval", "tatoeba", "--data", "d", "--langs", "de,klingon"], "--langs"),
])
def test_an_unknown_language_is_a_usage_error_everywhere(cli, tmp_path, monkeypatch, args, option):
    monkeypatch.chdir(tmp_path)
    assert_usage_error(cli(*args), option, "unknown language")
    assert not (tmp_path / "out").exists()


def test_eval_tatoeba_takes_iso_639_1_and_639_3_codes(cli, tmp_path):
    gold = [tuple(int(x) - 1 for x in line.split("\t")) for line in read_lines(EXAMPLES / "gold.tsv")]
    all_de, all_en = read_lines(EXAMPLES / "de.txt"), read_lines(EXAMPLES / "en.txt")
    de, en = [all_de[a] for a, _ in gold[:12]], [all_en[b] for _, b in gold[:12]]
    (tmp_path / "tatoeba.deu-eng.deu").write_text("".join(f"{x}\n" for x in de))
    (tmp_path / "tatoeba.deu-eng.eng").write_text("".join(f"{x}\n" for x in en))
    reports = []
    for code in ("de", "deu", "ger"):
        result = cli("eval", "tatoeba", "--data", tmp_path, "--langs", code, "--json", "-", "-q", "--device", "cpu")
        assert result.exit_code == 0, result.stderr
        reports.append(json.loads(result.stdout)["metrics"])
    assert reports[0] == reports[1] == reports[2]
    metrics = reports[0]
    assert metrics["deu_pairs"] == 12 and isinstance(metrics["deu_pairs"], int)
    assert 0.9 <= metrics["deu_p@1_mean"] <= 1  # a share, as bucc's rates
    assert metrics["deu_xsim_error_src2tgt"] == pytest.approx(1 - metrics["deu_p@1_src2tgt"])


def test_quiet_silences_faiss_too(cli, tmp_path):
    make_embedding_set(tmp_path / "set", clustered_vectors(600, dim=32))
    loud = cli("index", tmp_path / "set", "--type", "IVF4,PQ4", "-o", tmp_path / "loud")
    assert loud.exit_code == 0 and "WARNING clustering" in loud.stderr  # FAISS's own, from C++
    quiet = cli("index", tmp_path / "set", "--type", "IVF4,PQ4", "-o", tmp_path / "quiet", "-q")
    assert quiet.exit_code == 0 and quiet.stderr == "", quiet.stderr


# --- 10. JSON that machines can read; piped tables pure TSV --------------------------------------------

def no_python_reprs(value) -> None:
    """Plain JSON: no ``PosixPath('...')`` or ``[...]`` written as a string, no float that counts."""
    if isinstance(value, dict):
        for v in value.values():
            no_python_reprs(v)
    elif isinstance(value, list):
        for v in value:
            no_python_reprs(v)
    elif isinstance(value, str):
        assert "PosixPath(" not in value and not (value.startswith("[") and value.endswith("]")), value


def test_json_holds_strings_lists_integers_and_shares(cli, tmp_path):
    de, en = example_like_sets(tmp_path)
    for side in (de, en):
        assert cli("index", side, "-o", tmp_path / f"{side.name}.idx", "-q", "--json", tmp_path / f"{side.name}.json")\
            .exit_code == 0
    mined = cli("mine", "--src", de, "--tgt", en, "--src-index", tmp_path / "de.idx", "--tgt-index",
                tmp_path / "en.idx", "-o", tmp_path / "pairs.tsv", "--score", "ratio", "--threshold", "1.1",
                "--json", "-", "-q")
    assert mined.exit_code == 0, mined.stderr
    sidecar = json.loads(mined.stdout)
    no_python_reprs(sidecar)
    assert sidecar["parameters"]["src_index"] == [str(tmp_path / "de.idx")]
    assert isinstance(sidecar["pairs"], int) and isinstance(sidecar["output_rows"], int)
    index = json.loads((tmp_path / "de.json").read_text())
    assert isinstance(index["ntotal"], int) and index["ntotal"] == 500

    from bitextmine.evaluate import bucc_metrics

    metrics = bucc_metrics([("a", "1"), ("b", "9")], {("a", "1"), ("c", "3")})
    assert metrics["bucc_pairs"] == 2 and isinstance(metrics["bucc_pairs"], int) and isinstance(
        metrics["bucc_gold"], int) and metrics["bucc_precision"] == 0.5


def test_piped_tables_are_pure_tsv(cli, tmp_path):
    de, en = read_lines(EXAMPLES / "de.txt")[:10], read_lines(EXAMPLES / "en.txt")[:10]
    (tmp_path / "a.de").write_text("".join(f"{x}\n" for x in de))
    (tmp_path / "a.en").write_text("".join(f"{x}\n" for x in en))
    result = cli("eval", "tatoeba", tmp_path / "a.de", tmp_path / "a.en", "-q", "--device", "cpu",
                 "--json", tmp_path / "t.json")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 2 and all(line.count("\t") == 5 for line in lines)  # header and one row, nothing else
    assert "signature: " in result.stderr and json.loads((tmp_path / "t.json").read_text())["signature"]


# --- 11. help that helps ------------------------------------------------------------------------------

def test_examples_come_after_the_options(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    for words, command in all_commands():
        assert examples(command), words
        shown = cli(*words, "--help").stdout
        assert shown.index("--help") < shown.index("Example"), words


def test_every_example_is_pasteable():
    """Each example parses as the command line it is: known options, valid values, required ones given."""
    from typer.main import get_command

    from bitextmine.cli import app

    root = get_command(app)
    count = 0
    for words, command in all_commands():
        for line in examples(command):
            argv = shlex.split(line)
            argv = argv[argv.index("bitextmine") + 1:]
            argv = argv[: next((i for i, w in enumerate(argv) if w in ("|", ">")), len(argv))]
            assert argv[: len(words)] == words, line
            parent = root.make_context("bitextmine", list(words), resilient_parsing=True)
            command.make_context(" ".join(words), argv[len(words):], parent=parent)  # raises on a bad line
            count += 1
    assert count >= 25


@pytest.mark.parametrize("args, hint", [
    (["mine", "--src", "a", "--tgt", "b", "-o", "p.tsv", "--neighborhood", "4"], "-k"),
    (["mine", "--src", "a", "--tgt", "b", "-o", "p.tsv", "--mode", "mine"], "bitextmine mine"),
    (["embed", "x.txt", "-o", "e", "--gpu"], "--device cuda"),
    (["filter", "p.tsv", "-o", "k.tsv", "--margin", "ratio"], "--score"),
    (["mine", "--src", "a", "--tgt", "b", "-o", "p.tsv", "--unify"], "identical sentences"),
])
def test_laser_option_names_point_to_ours(cli, tmp_path, monkeypatch, args, hint):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")
    assert_usage_error(cli(*args), args[[a.startswith("--") and a not in ("--src", "--tgt") for a in args].index(True)],
                       "LASER", hint)


def test_laser_margin_still_works_where_it_is_our_score(cli, tmp_path):
    from tests.test_reliability import mine_args

    de, en = example_like_sets(tmp_path)
    assert cli(*mine_args((de, en), "-o", tmp_path / "p.tsv")).exit_code == 0  # mine_args passes --margin absolute


def test_an_encoder_named_like_a_path_is_pointed_to_its_kind(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")
    (tmp_path / "x.txt").write_text("Hallo.\n")
    (tmp_path / "ckpt" / "x").mkdir(parents=True)
    assert_usage_error(cli("embed", "x.txt", "-o", "e", "--encoder", "ckpt/x"), "ckpt:ckpt/x")
    (tmp_path / "labse").mkdir()
    (tmp_path / "labse" / "modules.json").write_text("[]")
    assert_usage_error(cli("embed", "x.txt", "-o", "e", "--encoder", "labse"), "hf:labse")
    assert_usage_error(cli("eval", "tatoeba", "a", "b", "--encoder", "ckpt/x"), "ckpt:ckpt/x")
    assert not (tmp_path / "e").exists()


@pytest.mark.parametrize("compress", [gzip.compress, zstandard.ZstdCompressor().compress])
def test_compressed_standard_input_is_decompressed(cli, tmp_path, compress):
    pairs = "".join(f"1.2\tDas ist Haus Nummer {i}.\tThis is house number {i}.\n" for i in range(30))
    result = cli("filter", "-", "-o", "-", "-q", "--skip", "dedup", stdin=compress(pairs.encode()))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == pairs.replace("1.2\t", "1.200000\t")
    cut = compress(pairs.encode())
    one_line_error(cli("filter", "-", "-o", "-", "-q", stdin=cut[: len(cut) // 2]), "-: cannot decompress")


# --- 12. plan keeps its calibration -----------------------------------------------------------------

def test_plan_keeps_its_calibration_per_settings_and_remeasures_when_asked(tmp_path, monkeypatch):
    from bitextmine.launch.config import load_config
    from bitextmine.launch.plan_cache import cache_dir, cached_measure

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    config = tmp_path / "p.yaml"
    config.write_text(f"output: out\nlanguages: {{de: {EXAMPLES / 'de.txt'}, en: {EXAMPLES / 'en.txt'}}}\n"
                      "pairs: [[de, en]]\n")
    calls = []

    def measure():
        calls.append(1)
        return dataclasses.replace(RATES, embed_sentences_per_second=100.0 * len(calls),
                                   encode_vectors_per_second=float("inf"))

    cfg = load_config(config)
    first = cached_measure(cfg, "cpu", measure)
    again = cached_measure(cfg, "cpu", measure)
    assert len(calls) == 1 and again.embed_sentences_per_second == first.embed_sentences_per_second
    assert not first.calibration["cached"] and again.calibration["cached"]
    assert again.encode_vectors_per_second == float("inf")
    assert cache_dir() == tmp_path / "cache" / "bitextmine" / "plan" and len(list(cache_dir().iterdir())) == 1
    other = cached_measure(load_config(config, ["index.type=Flat"]), "cpu", measure)  # other settings measure
    assert len(calls) == 2 and not other.calibration["cached"]
    fresh = cached_measure(cfg, "cpu", measure, remeasure=True)
    assert len(calls) == 3 and fresh.embed_sentences_per_second == 300.0
    assert cached_measure(cfg, "cpu", measure).embed_sentences_per_second == 300.0  # the new one is kept


def test_plan_adds_a_total_row():
    from bitextmine.launch.costs import StageEstimate, total

    stages = [StageEstimate("embed", 2, 1.5, 0.0, 0.25, 60.0, ""), StageEstimate("mine", 1, 3.0, 0.5, 0.125, 30.0, "")]
    everything = total(stages)
    assert (everything.tasks, everything.ram_gb, everything.gpu_gb, everything.disk_gb, everything.seconds) == \
        (3, 3.0, 0.5, 0.375, 90.0)


@pytest.mark.slow
def test_plan_twice_measures_once(tmp_path):
    config = tmp_path / "p.yaml"
    config.write_text(f"output: {tmp_path / 'out'}\nlanguages: {{de: {EXAMPLES / 'de.txt'}, en: {EXAMPLES / 'en.txt'}}}"
                      "\npairs: [[de, en]]\n")
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    first = bitextmine("plan", config, "--device", "cpu", "-q", "--json", tmp_path / "1.json", env=env)
    second = bitextmine("plan", config, "--device", "cpu", "-q", "--json", tmp_path / "2.json", env=env)
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    assert "measured now" in first.stderr and "kept from" in second.stderr
    one, two = (json.loads((tmp_path / f"{i}.json").read_text()) for i in (1, 2))
    assert one["measured"]["knn_gflops"] == two["measured"]["knn_gflops"]
    assert two["total"]["seconds"] == pytest.approx(sum(s["seconds"] for s in two["stages"]))
    rows = second.stdout.splitlines()
    assert rows[-1].startswith("total\t") and all(r.count("\t") == 6 for r in rows)
    assert np.isfinite(two["total"]["disk_gb"])
    # every stage estimated from the measured rates and the corpus's own line counts, nothing run
    assert [s["stage"] for s in one["stages"]] == ["embed", "index", "mine", "filter"]
    assert one["measured"]["lines"] == {"de": 500, "en": 500}
    assert all(s["seconds"] > 0 and s["ram_gb"] > 0 for s in one["stages"])
    assert not (tmp_path / "out").exists()
