"""`bitextmine run`, `plan`: the pipeline over shards, locally through submitit, resumable."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from bitextmine.errors import BitextmineError
from bitextmine.launch.config import load_config
from tests.conftest import EXAMPLES, REPO, read_lines

pytest.importorskip("submitit")
pytest.importorskip("yaml")


def write_config(path, output, shards_de, shards_en, extra=""):
    def listing(shards):
        return "[" + ", ".join(str(s) for s in shards) + "]"

    path.write_text(f"""output: {output}
languages:
  de: {listing(shards_de)}
  en: {listing(shards_en)}
pairs: [[de, en]]
launcher: {{workers: 2, retries: 1}}
{extra}""")
    return path


def split_shards(tmp_path, lang, parts):
    lines = read_lines(EXAMPLES / f"{lang}.txt")
    size = -(-len(lines) // parts)
    shards = []
    for i in range(parts):
        shard = tmp_path / "corpus" / f"{lang}.{i}.txt"
        shard.parent.mkdir(exist_ok=True)
        shard.write_text("".join(x + "\n" for x in lines[i * size : (i + 1) * size]))
        shards.append(shard)
    return shards


def test_pipeline_with_the_local_executor_equals_the_commands_by_hand(cli, tmp_path):
    config = write_config(tmp_path / "p.yaml", tmp_path / "run", [EXAMPLES / "de.txt"], [EXAMPLES / "en.txt"])
    result = cli("run", config, "--launcher", "local")
    assert result.exit_code == 0, result.stderr
    assert "embed" in result.stdout and "pairs:" in result.stdout
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert [s["stage"] for s in summary["stages"]] == ["embed", "index", "mine", "filter"]
    assert [s["ran"] for s in summary["stages"]] == [2, 2, 1, 1]

    hand = tmp_path / "hand"
    for lang in ("de", "en"):
        assert cli("embed", EXAMPLES / f"{lang}.txt", "-o", hand / lang, "-q").exit_code == 0
        assert cli("index", hand / lang, "-o", hand / f"{lang}.idx", "-q").exit_code == 0
    assert cli("mine", "--src", hand / "de", "--tgt", hand / "en", "--src-index", hand / "de.idx", "--tgt-index",
               hand / "en.idx", "-o", hand / "mined.tsv", "--ids", "-q").exit_code == 0
    assert cli("filter", hand / "mined.tsv", "-o", hand / "pairs.tsv", "--src-lang", "de", "--tgt-lang", "en",
               "-q").exit_code == 0

    def pairs(path):  # ids name the shard files, which differ between the two runs
        return [line.split("\t")[:3] for line in path.read_text().splitlines()]

    assert pairs(tmp_path / "run" / "pairs" / "de-en.tsv") == pairs(hand / "pairs.tsv")
    assert len(pairs(hand / "pairs.tsv")) > 250

    again = cli("run", config, "--launcher", "local")
    assert again.exit_code == 0
    assert [s["ran"] for s in json.loads((tmp_path / "run" / "summary.json").read_text())["stages"]] == [0, 0, 0, 0]


def test_split_indexes_give_the_pairs_of_one_index(cli, tmp_path):
    de, en = split_shards(tmp_path, "de", 3), split_shards(tmp_path, "en", 3)
    one = write_config(tmp_path / "one.yaml", tmp_path / "one", de, en)
    split = write_config(tmp_path / "split.yaml", tmp_path / "split", de, en, "index: {max_rows: 200}")
    assert cli("run", one, "--launcher", "inline", "-q").exit_code == 0
    assert cli("run", split, "--launcher", "inline", "-q").exit_code == 0
    assert len(list((tmp_path / "split" / "index" / "de").glob("part-*"))) == 3
    assert len(list((tmp_path / "one" / "index" / "de").glob("part-*"))) == 1
    assert (tmp_path / "split" / "pairs" / "de-en.tsv").read_text() == (tmp_path / "one" / "pairs" / "de-en.tsv") \
        .read_text()


def test_killed_run_resumes_and_is_byte_identical(tmp_path):
    de, en = split_shards(tmp_path, "de", 4), split_shards(tmp_path, "en", 4)
    killed = write_config(tmp_path / "k.yaml", tmp_path / "killed", de, en)
    clean = write_config(tmp_path / "c.yaml", tmp_path / "clean", de, en)
    command = [sys.executable, "-m", "bitextmine", "run", "--launcher", "inline", "-q"]
    proc = subprocess.Popen([*command, str(killed)], start_new_session=True)
    deadline = time.time() + 120
    markers = []
    while proc.poll() is None and time.time() < deadline:
        markers = list((tmp_path / "killed" / "embed").glob("*/*/.task.json"))
        if len(markers) >= 2:
            break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done = {p.parent: p.stat().st_mtime_ns for p in (tmp_path / "killed" / "embed").glob("*/*/.task.json")}
    assert 2 <= len(done) < 8, "the run should have been killed part-way through embedding"
    subprocess.run([*command, str(killed)], check=True)
    subprocess.run([*command, str(clean)], check=True)
    for task_dir, stamp in done.items():
        assert (task_dir / ".task.json").stat().st_mtime_ns == stamp, f"{task_dir} was redone"
    a = (tmp_path / "killed" / "pairs" / "de-en.tsv").read_bytes()
    b = (tmp_path / "clean" / "pairs" / "de-en.tsv").read_bytes()
    assert a == b and len(a) > 0


@pytest.mark.parametrize("text, message", [
    ("output: o\nlanguages: {de: DE}\npairs: [[de, de]]\nmine: {kk: 3}\n", "unknown key mine.kk"),
    ("output: o\nlanguages: {de: DE}\npairs: [[de, de]]\nwhat: 1\n", "unknown key what"),
    ("output: o\nlanguages: {de: nothing-here.txt}\npairs: [[de, de]]\n", "no such file nothing-here.txt"),
    ("output: o\nlanguages: {de: DE}\npairs: [[de, en]]\n", "language 'en' is not under languages"),
    ("output: o\nlanguages: {de: DE}\npairs: [[de, de]]\nmine: {k: four}\n", "mine.k must be int"),
    ("output: o\nlanguages: {de: DE}\npairs: [[de, de]]\nmine: {margin: best}\n", "unknown score 'best'"),
    ("output: o\nlanguages: {de: DE}\n", "missing key pairs"),
    ("output: o\nlanguages: {de: DE\n", "invalid YAML"),
    ("output: o\nlanguages: {de: DE}\npairs: [[de, de]]\nresources: {embed: {gpus: many}}\n",
     "resources.embed.gpus must be int"),
])
def test_bad_configs_fail_before_anything_runs(cli, tmp_path, text, message):
    path = tmp_path / "p.yaml"
    path.write_text(text.replace("DE", str(EXAMPLES / "de.txt")))
    with pytest.raises(BitextmineError, match=message):
        load_config(path)
    result = cli("run", path)
    assert result.exit_code == 1 and message.split("'")[0] in result.stderr and str(path) in result.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("name", ["pipeline-labse-commoncrawl.yaml", "pipeline-ccmatrix.yaml"])
def test_example_configs_load(name):
    cfg = load_config(REPO / "examples" / name)
    assert cfg.languages["de"][0].endswith("examples/de-en/de.txt")


def test_plan_estimates_every_stage(cli, tmp_path):
    config = write_config(tmp_path / "p.yaml", tmp_path / "run", [EXAMPLES / "de.txt"], [EXAMPLES / "en.txt"])
    result = cli("plan", config, "--device", "cpu", "--json", tmp_path / "plan.json")
    assert result.exit_code == 0, result.stderr
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert [s["stage"] for s in plan["stages"]] == ["embed", "index", "mine", "filter"]
    assert plan["measured"]["lines"] == {"de": 500, "en": 500}
    assert all(s["seconds"] > 0 and s["ram_gb"] > 0 for s in plan["stages"])
    assert not (tmp_path / "run").exists()  # planning runs nothing
