"""`bitextmine run`, `plan`: the pipeline over shards, locally through submitit, resumable."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from bitextmine import defaults
from bitextmine.errors import BitextmineError
from bitextmine.launch.config import load_config
from tests.conftest import EXAMPLES, REPO, example_like_sets, read_lines
from tests.support.rates import RATES

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


def test_a_small_run_inline_writes_every_stage_and_a_rerun_redoes_nothing(cli, tmp_path):
    """The cheap check of `run`: tasks, markers and the cache (the local executor and
    indexes are checked by the slow tests below)."""
    de, en = split_shards(tmp_path, "de", 8)[:2], split_shards(tmp_path, "en", 8)[:2]
    config = write_config(tmp_path / "p.yaml", tmp_path / "run", de, en, "index: {exact: true}")
    result = cli("run", config, "--launcher", "inline", "-q")
    assert result.exit_code == 0, result.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert [(s["stage"], s["ran"]) for s in summary["stages"]] == [("embed", 4), ("index", 0), ("mine", 1),
                                                                   ("filter", 1)]
    pairs = (tmp_path / "run" / "pairs" / "de-en.tsv").read_text().splitlines()
    # a quarter of each side: about 20 of the 300 translations meet; score, texts, ids
    assert len(pairs) >= 10 and all(len(line.split("\t")) == 5 for line in pairs)
    assert cli("run", config, "--launcher", "inline", "-q").exit_code == 0
    assert [s["ran"] for s in json.loads((tmp_path / "run" / "summary.json").read_text())["stages"]] == [0, 0, 0, 0]


def test_a_stage_run_alone_names_the_unfinished_stage_it_reads(cli, tmp_path):
    de, en = split_shards(tmp_path, "de", 8)[:1], split_shards(tmp_path, "en", 8)[:1]
    config = write_config(tmp_path / "p.yaml", tmp_path / "run", de, en, "index: {type: Flat}")
    result = cli("run", config, "--launcher", "inline", "-q", "--stage", "mine")
    assert result.exit_code == 1
    assert "--stage mine reads the embed stage's output, which is not finished (2 task(s) to run)" in result.stderr
    result = cli("run", config, "--launcher", "inline", "-q", "--stage", "embed", "--stage", "mine")
    assert result.exit_code == 1 and "reads the index stage's output" in result.stderr
    assert not (tmp_path / "run" / "mine").exists()
    assert cli("run", config, "--launcher", "inline", "-q", "--stage", "index", "--stage", "mine").exit_code == 0
    result = cli("run", config, "--launcher", "inline", "-q", "--stage", "filter")
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / "run" / "pairs" / "de-en.tsv").exists()


def test_filter_settings_changed_leave_no_file_of_the_settings_before(cli, tmp_path):
    de, en = split_shards(tmp_path, "de", 8)[:1], split_shards(tmp_path, "en", 8)[:1]
    pairs = tmp_path / "run" / "pairs"
    config = write_config(tmp_path / "p.yaml", tmp_path / "run", de, en,
                          "index: {exact: true}\nfilter: {rejects: true}")
    assert cli("run", config, "--launcher", "inline", "-q").exit_code == 0
    assert {p.name for p in pairs.iterdir()} >= {"de-en.tsv", "de-en.rejects.tsv", "de-en.tsv.filter.json"}
    write_config(config, tmp_path / "run", de, en, "index: {exact: true}")
    assert cli("run", config, "--launcher", "inline", "-q").exit_code == 0
    assert not (pairs / "de-en.rejects.tsv").exists() and (pairs / "de-en.tsv.filter.json").exists()
    write_config(config, tmp_path / "run", de, en, "index: {exact: true}\nfilter: {enabled: false}")
    assert cli("run", config, "--launcher", "inline", "-q").exit_code == 0
    assert not (pairs / "de-en.tsv.filter.json").exists()
    assert (pairs / "de-en.tsv").read_bytes() == (tmp_path / "run" / "mine" / "de-en.tsv").read_bytes()


@pytest.mark.slow
def test_pipeline_with_the_local_executor_equals_the_commands_by_hand(cli, tmp_path):
    config = write_config(tmp_path / "p.yaml", tmp_path / "run", [EXAMPLES / "de.txt"], [EXAMPLES / "en.txt"])
    result = cli("run", config, "--launcher", "local")
    assert result.exit_code == 0, result.stderr
    assert "embed" in result.stdout and "pairs:" in result.stderr  # piped, standard output holds the table alone
    assert all(line.count("\t") == 5 for line in result.stdout.splitlines())
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

    # `run` gives each of the two tasks of a wave one thread of the two cores, the commands by
    # hand take both; the encoder's sums then round differently (an fp16 step in about 0.1 %
    # of the values on some CPUs), so the scores agree to float precision, not digit for digit
    by_run, by_hand = pairs(tmp_path / "run" / "pairs" / "de-en.tsv"), pairs(hand / "pairs.tsv")
    assert [texts for _, *texts in by_run] == [texts for _, *texts in by_hand]
    assert [float(score) for score, *_ in by_run] == pytest.approx([float(score) for score, *_ in by_hand], abs=1e-5)
    assert len(by_hand) > 250

    again = cli("run", config, "--launcher", "local")
    assert again.exit_code == 0
    assert [s["ran"] for s in json.loads((tmp_path / "run" / "summary.json").read_text())["stages"]] == [0, 0, 0, 0]


@pytest.mark.slow
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


@pytest.mark.slow
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
    ("output: o\nlanguages: {de: DE}\npairs: [[de, de]]\nmine: {kk: 3}\n", "mine.kk: unknown key (known: k, "),
    ("output: o\nlanguages: {de: DE}\npairs: [[de, de]]\nwhat: 1\n", "what: unknown key"),
    ("output: o\nlanguages: {de: nothing-here.txt}\npairs: [[de, de]]\n", "languages.de: no such file nothing-here"),
    ("output: o\nlanguages: {de: DE}\npairs: [[de, en]]\n", "pairs.0: language 'en' is not under languages"),
    ("output: o\nlanguages: {de: DE}\npairs: [[de, de]]\n", "pairs.0: de with itself: a pair is two languages"),
    ("output: o\nlanguages: {de: DE, en: DE}\npairs: [[de, en], [de, en]]\n", "pairs.1: [de, en] again (pairs.0)"),
    ("output: ' '\nlanguages: {de: DE, en: DE}\npairs: [[de, en]]\n", "output: is empty"),
    ("output: o\nlanguages: {de: DE, en: DE}\npairs: [[de, en]]\nresources: {embed: {mem_gb: -1}}\n",
     "resources.embed.mem_gb: Input should be greater than 0"),
    ("output: o\nlanguages: {de: DE}\npairs: [[de, de]]\nmine: {k: four}\n", "mine.k: must be an integer"),
    ("output: o\nlanguages: {de: DE}\npairs: [[de, de]]\nmine: {k: 0}\n", "mine.k: Input should be greater"),
    ("output: o\nlanguages: {de: DE}\npairs: [[de, de]]\nmine: {score: best}\n", "mine.score: Input should be "),
    ("output: o\nlanguages: {de: DE}\npairs: [[de, de]]\nmine: {margin: best}\n", "mine.margin: Input should be "),
    ("output: o\nlanguages: {de: DE}\npairs: [[de, de]]\nmine: {score: ratio, margin: cosine}\n",
     "mine: score and margin are one setting"),
    ("output: o\nlanguages: {de: DE}\npairs: [[de, de]]\nmine: {device: gpu}\n", "mine.device: unknown device 'gpu'"),
    ("output: o\nlanguages: {de: DE}\npairs: [[de, de]]\nindex: {device: cuda}\n", "index.device: Input should be"),
    ("output: o\nlanguages: {de: DE}\npairs: [[de, de]]\nmine: {threshold: .nan}\n", "mine.threshold: must be a fin"),
    ("output: o\nlanguages: {de: DE}\npairs: [[de, de]]\nembed: {errors: ignore}\n", "embed.errors: Input should be"),
    ("output: o\nlanguages: {de: DE}\npairs: [[de, de]]\nfilter: {skip: [lenght]}\n", "filter.skip.0: Input should"),
    ("output: o\nlanguages: {de: DE}\npairs: [[de, de]]\nfilter: {near_copy: 1.5}\n",
     "filter: --near-copy must be in [0.0, 1.0], not 1.5"),
    ("output: o\nlanguages: {de: DE}\n", "pairs: missing key"),
    ("output: o\nlanguages: {de: DE\n", "invalid YAML"),
    ("- output: o\n", "a pipeline file must be a mapping of keys, not a list"),
    ("output: o\nlanguages: {de: DE}\npairs: [[de, de]]\nresources: {embed: {gpus: many}}\n",
     "resources.embed.gpus: must be an integer, not str 'many'"),
    ("output: o\nlanguages: {de: DE}\npairs: [[de, de]]\nresources: {embedd: {gpus: 1}}\n",
     "resources.embedd: unknown key"),
    ("output: o\nlanguages: {../../escape: DE}\npairs: [[../../escape, ../../escape]]\n",
     "languages.../../escape: the language key '../../escape' must be a plain name"),
    ("output: o\nlanguages: {de: DE, en: [DE, DE]}\npairs: [[de, en]]\n", "languages.en: "),
    ("output: o\nlanguages: {de: DE, en: DE}\npairs: [[de, en]]\nencoder: usm3\n", "encoder: unknown encoder 'usm3'"),
    ("output: o\nlanguages: {de: DE, en: DE}\npairs: [[de, en]]\nindex: {type: Fooo}\n",
     "index.type: FAISS cannot build index type 'Fooo'"),
    ("output: o\nlanguages: {de: DE, en: DE}\npairs: [[de, en]]\nindex: {type: 'IVF0,Flat'}\n",
     "index.type: index type 'IVF0,Flat' has no lists"),
])
def test_bad_configs_fail_before_anything_runs(cli, tmp_path, text, message):
    path = tmp_path / "p.yaml"
    path.write_text(text.replace("DE", str(EXAMPLES / "de.txt")))
    with pytest.raises(BitextmineError, match="^" + re.escape(f"{path}: {message}") if "YAML" not in message
                       else message):
        load_config(path)
    result = cli("run", path)
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0].startswith(f"bitextmine: error: {path}:") and message in result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert not (tmp_path / "o").exists() and not (tmp_path.parent / "escape").exists()


@pytest.mark.parametrize("index_type, parts", [("IVF2,Flat", [3]), ("auto", [2, 1])])
def test_a_tail_too_small_to_train_the_type_given_joins_the_part_before(tmp_path, index_type, parts):
    from bitextmine.launch.pipeline import embed_dirs, index_parts
    from tests.conftest import clustered_vectors, make_embedding_set

    shards = []
    for name, rows in (("a", 150), ("b", 150), ("c", 30)):  # IVF2 trains on 2 x 39 vectors at least
        shards.append(tmp_path / f"{name}.txt")
        shards[-1].write_text("x\n" * rows)
    path = tmp_path / "p.yaml"
    path.write_text(f"output: {tmp_path / 'out'}\nlanguages: {{de: {[str(p) for p in shards]}, en: [{shards[0]}]}}\n"
                    f"pairs: [[de, en]]\nindex: {{type: '{index_type}', max_rows: 300}}\n")
    cfg = load_config(path)
    for directory, rows in zip(embed_dirs(cfg, "de"), (150, 150, 30), strict=True):
        make_embedding_set(directory, clustered_vectors(rows, dim=16))
    assert [len(part) for part in index_parts(cfg, "de")] == parts


def test_a_bad_set_is_a_usage_error_naming_it(cli, tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(f"output: o\nlanguages: {{de: [{EXAMPLES / 'de.txt'}], en: [{EXAMPLES / 'en.txt'}]}}\n"
                    "pairs: [[de, en]]\n")
    for setting, message in (("mine.kk=3", "--set mine.kk=3: unknown key"), ("mine.k=0", "--set mine.k=0: Input")):
        result = cli("run", path, "--set", setting)
        assert result.exit_code == 2 and message in " ".join(result.stderr.replace("│", " ").split()), result.stderr
    assert not (tmp_path / "o").exists()


def test_every_stage_option_can_be_set_in_the_file(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(f"""output: o
languages: {{de: {EXAMPLES / 'de.txt'}, en: {EXAMPLES / 'en.txt'}}}
pairs: [[de, en]]
embed: {{errors: replace, precision: fp32, batch_tokens: 512, max_tokens: 64, device: cpu}}
index: {{type: Flat, nprobe: 8, train_sample: 1000, seed: 7, device: cpu, max_rows: 100, exact: false}}
mine: {{k: 3, score: distance, retrieval: intersect, threshold: 0.1, top_n: 10, nprobe: 4, device: cpu}}
filter: {{skip: [numbers], dedup: pair, max_score: 2.5, min_chars: 2, max_chars: 500, min_tokens: 2,
          max_side_tokens: 100, max_ratio: 2.0, min_letters: 0.3, near_copy: 0.8, boilerplate: 5, rejects: true}}
""")
    cfg = load_config(path)
    assert cfg.embed.errors == "replace" and cfg.embed.batch_tokens == 512
    assert cfg.index.train_sample == 1000 and cfg.mine.nprobe == 4 and cfg.filter.rejects is True
    assert cfg.mine.score == "distance" and cfg.filter.max_side_tokens == 100
    from bitextmine.launch.pipeline import embed_tasks

    task = embed_tasks(cfg)[0]
    assert task.kwargs["errors"] == "replace" and task.kwargs["device"] == "cpu"
    old_name = path.read_text().replace("score: distance", "margin: distance")  # the old key is still read
    path.write_text(old_name)
    assert load_config(path).mine.score == "distance"


@pytest.mark.parametrize("name", ["pipeline-labse-commoncrawl.yaml", "pipeline-ccmatrix.yaml"])
def test_example_configs_load(name):
    cfg = load_config(REPO / "examples" / name)
    assert cfg.languages["de"][0].endswith("examples/de-en/de.txt")


def test_reading_a_pipeline_file_imports_no_torch(tmp_path):
    """`run` reads its file before every stage, the filter's included: the checks of the encoder
    and the index type must not import torch (3 s of every call of a 1-second stage)."""
    config = write_config(tmp_path / "p.yaml", tmp_path / "run", [EXAMPLES / "de.txt"], [EXAMPLES / "en.txt"],
                          "index: {type: 'IVF4,Flat'}\n")
    probe = (f"import sys\nfrom bitextmine.launch.config import load_config\nload_config({str(config)!r})\n"
             "print(sorted(m for m in ('torch', 'faiss') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "['faiss']"  # the index type is built to check it


def test_the_filter_task_runs_without_the_mining_code(tmp_path):
    """A filter task checks the mined pairs' sidecar and filters them: the mining package (its
    scipy: 2 s of a 3-second task) stays unloaded."""
    from bitextmine.io.text import file_sha256

    mined = tmp_path / "de-en.tsv"
    mined.write_text("1.2\tDas ist ein Haus.\tThis is a house.\n", encoding="utf-8")
    (tmp_path / "de-en.tsv.json").write_text(json.dumps({"output_sha256": file_sha256(mined)}), encoding="utf-8")
    probe = ("import sys\nfrom bitextmine.launch.pipeline import run_filter\n"
             f"run_filter({str(mined)!r}, {str(tmp_path / 'out.tsv')!r}, 'de', 'en', True, False, False)\n"
             "print(sorted(m for m in ('torch', 'faiss', 'scipy.stats', 'bitextmine.mine') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"
    assert (tmp_path / "out.tsv").read_text(encoding="utf-8").count("\n") == 1


def test_plan_arithmetic_from_given_measurements(tmp_path, monkeypatch):
    """The estimate without the calibration run (test_interface.py's test_plan_twice_measures_once makes one)."""
    from bitextmine.launch import costs, plan

    monkeypatch.setattr(plan, "measure", lambda *a, **k: RATES)
    config = write_config(tmp_path / "p.yaml", tmp_path / "run", [EXAMPLES / "de.txt"], [EXAMPLES / "en.txt"],
                          "resources: {embed: {gpus: 1}}\n")
    stages, m = plan.estimate(load_config(config))
    by_stage = {s.stage: s for s in stages}
    assert list(by_stage) == ["embed", "index", "mine", "filter"] and m["lines"] == {"de": 500, "en": 500}
    embed = by_stage["embed"]
    # 1,000 lines at the machine's 100 sentences/s (2 tasks at once, half the cores each), after
    # run's start (0.5 s, and torch's import to look for the GPUs the stage asks for) and one
    # task start-up: launch, a process importing torch (2 s) and loading the model (1 s); the
    # second task submitted 0.2 s after the first
    assert embed.tasks == 2
    assert embed.seconds == pytest.approx(0.5 + 1.25 + 1000 / 100 + 0.3 + 2.0 + 1.0 + 0.2)
    # the filter's task: its imports and language model, then the pairs (few: in its own process)
    pairs = 500 * defaults.PLAN_MINED_SHARE
    assert by_stage["filter"].seconds == pytest.approx(0.5 + 0.3 + 0.9 + pairs / 1e4)
    assert by_stage["filter"].ram_gb == pytest.approx(0.16 + pairs * costs.PAIR_BYTES / 1024**3)
    # the index task does not import torch either: 500 rows in a Flat index, read a block at a time
    assert by_stage["index"].ram_gb < 0.06 + 0.01 and by_stage["index"].basis.startswith("Flat: every row read")
    assert embed.disk_gb == pytest.approx(1000 * 512 * 2 / 1024**3)
    assert by_stage["mine"].tasks == by_stage["filter"].tasks == 1 and by_stage["index"].tasks == 2
    assert not (tmp_path / "run").exists()
    # no threshold in the file: the estimate's searches are counted, a sample of each side against
    # the other (the gaps) and within its own language with the sample's neighbours (the decoy)
    assert "(the gaps)" in by_stage["mine"].basis and "(the decoy)" in by_stage["mine"].basis
    assert costs.estimate_queries(500) == 500 and costs.estimate_queries(10**6) == defaults.ESTIMATE_QUERIES
    assert costs.decoy_queries(500, 4) == 500
    # the sample's 4 x 20,000 neighbours: nearly all distinct in a large pool, overlapping in a small one
    assert 0.9 * 5 * 20_000 < costs.decoy_queries(1_000_000, 4) < 5 * 20_000
    assert 20_000 < costs.decoy_queries(60_000, 4) < 0.9 * 60_000
    # and the estimate's fits, once a margin (both under the distance margin), for 500 queries a
    # side of the 20,000 the rate was measured at; none where the threshold is given
    assert "the estimate's fits: 2.0 s a margin" in by_stage["mine"].basis
    fits = 2 * 500 / defaults.ESTIMATE_QUERIES * 2.0
    assert costs.estimate_fit_seconds(500, 500, load_config(config), RATES) == pytest.approx(fits)
    given, _ = plan.estimate(load_config(config, ["mine.threshold=0.1"]))
    assert "fits" not in {s.stage: s for s in given}["mine"].basis
    # nothing embedded yet: the share of rows mined is assumed; given, more pairs mean more
    # exact margins and filtering
    assert "5.0% of the smaller side, assumed" in by_stage["filter"].basis
    more, _ = plan.estimate(load_config(config), mined_share=0.5)
    more = {s.stage: s for s in more}
    assert "50.0% of the smaller side, given" in more["filter"].basis
    assert more["filter"].seconds > by_stage["filter"].seconds and more["mine"].seconds >= by_stage["mine"].seconds
    # a filter task's pairs: in its own process on one core below FILTER_PARALLEL_MIN_PAIRS,
    # else a worker per CPU at the machine's rate, shared with the tasks running beside it
    few, many = defaults.FILTER_PARALLEL_MIN_PAIRS - 1, defaults.FILTER_PARALLEL_MIN_PAIRS
    assert costs.filter_seconds(few, RATES, share=0.5) == pytest.approx(few / 1e4)
    assert costs.filter_seconds(few, RATES, share=0.25) == pytest.approx(few / 0.5e4)
    assert costs.filter_seconds(many, RATES, share=0.5) == pytest.approx(many / 0.75e4)


def test_plan_counts_the_decoys_gathered_rows_where_mine_chooses_through_indexes(tmp_path):
    """The decoy's sample and its neighbours are gathered in fp32 before their search: at 300k
    a side about 86k rows, 0.17 GB that mine's peak holds beside an index search's (RESULTS.md)."""
    from bitextmine.launch import costs

    config = write_config(tmp_path / "p.yaml", tmp_path / "run", [EXAMPLES / "de.txt"], [EXAMPLES / "en.txt"])
    lines, text = {"de": [300_000], "en": [300_000]}, {"de": 300_000 * 60, "en": 300_000 * 60}

    def mine(*settings):
        stages = costs.estimate_from(load_config(config, list(settings)), RATES, lines, text, mined_share=0.0)
        return next(s for s in stages if s.stage == "mine")

    chosen, given = mine(), mine("mine.threshold=0.1")
    decoy = costs.decoy_queries(300_000, defaults.K) * 512 * 4 / 1024**3
    assert 80_000 < costs.decoy_queries(300_000, defaults.K) < 90_000
    assert chosen.ram_gb == pytest.approx(given.ram_gb + decoy)


def test_plan_measures_the_mined_share_where_both_sides_are_embedded(tmp_path):
    """Where run's embedding sets exist, plan samples rows, searches them exactly and scores
    them as mine does: its share is the one mine then keeps, not the assumed 5 %."""
    from bitextmine.embed.corpus import EmbeddingCorpus
    from bitextmine.launch.corpus_probes import mined_shares
    from bitextmine.launch.costs import MinedShare
    from bitextmine.launch.pipeline import embed_dirs
    from bitextmine.mine import MineConfig, mine_corpora

    config = write_config(tmp_path / "p.yaml", tmp_path / "run", [EXAMPLES / "de.txt"], [EXAMPLES / "en.txt"],
                          "mine: {score: ratio, threshold: 1.05}\n")
    cfg = load_config(config)
    assert mined_shares(cfg, "cpu")[("de", "en")] == MinedShare(0.05, "assumed")
    de, en = example_like_sets(tmp_path / "sets")
    for lang, made in (("de", de), ("en", en)):
        target = embed_dirs(cfg, lang)[0]
        target.parent.mkdir(parents=True)
        shutil.copytree(made, target)
    sampled = mined_shares(cfg, "cpu")[("de", "en")]
    # more than half the rows pass: the first round of 200 a side counts enough of them
    assert sampled.how.startswith("sampled: 200 + 200 rows, ") and sampled.how.endswith("at threshold 1.05")
    src, tgt = (EmbeddingCorpus.load(embed_dirs(cfg, lang)) for lang in ("de", "en"))
    mined = len(mine_corpora(src, tgt, MineConfig(score="ratio", threshold=1.05))) / 500
    assert 0.4 < mined < 0.8 and abs(sampled.share - mined) < 0.05


@pytest.mark.slow
def test_plan_names_an_index_type_faiss_cannot_build(cli, tmp_path):
    config = write_config(tmp_path / "p.yaml", tmp_path / "run", [EXAMPLES / "de.txt"], [EXAMPLES / "en.txt"])
    config.write_text(config.read_text() + "index: {type: FOO123}\n")
    result = cli("plan", config, "--device", "cpu", "-q")
    assert result.exit_code == 1 and result.stderr.strip() == (
        f"bitextmine: error: {config}: index.type: FAISS cannot build index type 'FOO123' for 512-d vectors: "
        "could not parse index string FOO123")


def test_local_tasks_share_the_cores_out():
    """Tasks run at once locally get an equal share of the cores, never more threads than cores."""
    import os

    from bitextmine.launch.runner import local_threads

    cores = len(os.sched_getaffinity(0))
    assert local_threads(cpus=4, together=1) == min(4, cores)
    assert local_threads(cpus=cores, together=2) == max(1, cores // 2)
    assert local_threads(cpus=1, together=1) == 1
    assert local_threads(cpus=8, together=4 * cores) == 1  # never zero
