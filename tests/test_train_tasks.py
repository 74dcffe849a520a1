"""Several tasks in one run: --task values, the step schedule, resume, the checkpoint's record."""

import json

import numpy as np
import pytest

from bitextmine import defaults
from bitextmine.errors import BitextmineError
from bitextmine.train import TrainConfig, train
from bitextmine.train.data import ParallelData
from bitextmine.train.run_state import read_log
from bitextmine.train.tasks import TaskBatches, TaskSchedule, TaskSpec, TrainingTask, parse_task_option, task_specs
from tests.test_train import TINY, example_pairs
from tests.test_train_run import interrupted_at_step

TINY_CLI = ["--dim", "32", "--layers", "1", "--heads", "2", "--ff", "64", "--vocab-size", "300", "--batch-size", "16",
            "--dev-size", "40", "--device", "cpu", "--amp", "off"]


@pytest.fixture(scope="module")
def pairs():
    return example_pairs()


def nli_triples(pairs: ParallelData) -> ParallelData:
    """Toy triples: the German translation entails the English anchor, its denial contradicts it.

    The contradiction holds every piece of the anchor, the entailment few: before
    training, the contradiction is the closer; only training turns that round.
    """
    return ParallelData(pairs.src, pairs.tgt, [f"It is not true that {s}" for s in pairs.src])


def write_tsv(path, *columns) -> str:
    path.write_text("".join("\t".join(row) + "\n" for row in zip(*columns, strict=True)), encoding="utf-8")
    return str(path)


def test_task_options_name_files_and_weights():
    assert parse_task_option("nli=a.tsv") == TaskSpec("nli", ("a.tsv",), None)
    assert parse_task_option("nli=a.tsv,b.tsv.gz:0.25") == TaskSpec("nli", ("a.tsv", "b.tsv.gz"), 0.25)
    assert parse_task_option("translation:2") == TaskSpec("translation", (), 2.0)
    # positional pairs are the translation task, first; defaults from defaults.py
    specs = task_specs(["p.tsv", "en.txt,de.txt"], ["nli=n.tsv"])
    assert specs == [TaskSpec("translation", ("p.tsv", "en.txt,de.txt"), defaults.TRAIN_TASK_WEIGHTS["translation"]),
                     TaskSpec("nli", ("n.tsv",), defaults.TRAIN_TASK_WEIGHTS["nli"])]
    # --task translation weighs them, and may add files
    assert task_specs(["p.tsv"], ["nli=n.tsv:0.5", "translation=q.tsv:2"]) == [
        TaskSpec("translation", ("p.tsv", "q.tsv"), 2.0), TaskSpec("nli", ("n.tsv",), 0.5)]
    assert task_specs([], ["nli=n.tsv"]) == [TaskSpec("nli", ("n.tsv",), defaults.TRAIN_TASK_WEIGHTS["nli"])]


@pytest.mark.parametrize(("values", "message"), [
    (["sts=a.tsv"], "unknown task 'sts'"),
    (["nli=a.tsv:abc"], "bad weight 'abc'"),
    (["nli=a.tsv:0"], "bad weight '0'"),
    (["nli=a.tsv:-1"], "bad weight '-1'"),
    (["nli=a.tsv:nan"], "bad weight 'nan'"),
    (["nli=a.tsv,"], "an empty file name"),
    (["nli=a.tsv", "nli=b.tsv"], "given twice"),
    (["translation:0.5"], "without files"),
    ([], "no training data"),
])
def test_bad_task_values(values, message):
    with pytest.raises(BitextmineError, match=message):
        task_specs([], values)


def test_bad_task_values_from_the_cli_are_one_line_errors_before_any_work(cli, tmp_path, pairs):
    triples = nli_triples(pairs)
    nli = write_tsv(tmp_path / "nli.tsv", triples.src, triples.tgt, triples.negative)
    two = write_tsv(tmp_path / "pairs.tsv", pairs.src, pairs.tgt)
    for args, message in (([two, "--task", "para=x.tsv"], "--task para=x.tsv: unknown task 'para'"),
                          ([two, "--task", f"nli={nli}:heavy"], "bad weight 'heavy'"), ([], "no training data")):
        result = cli("train", *args, "-o", tmp_path / "ckpt", *TINY_CLI, "--max-steps", "2")
        assert result.exit_code == 2 and "Traceback" not in result.stderr, (args, result.stderr)  # usage errors
        assert message in " ".join(result.stderr.replace("│", " ").split()), result.stderr
        assert not (tmp_path / "ckpt").exists()
    cases = [
        (["--task", f"nli={two}"], f"{two}:1: 2 columns: translation pairs, not NLI triples"),
        ([two, "--task", f"nli={nli},{tmp_path / 'missing.tsv'}"], "missing.tsv: no such file (--task nli)"),
        ([two, "--task", f"nli={nli}", "--recipe", "add-language"], "the add-language recipe trains on translation"),
    ]
    for args, message in cases:
        result = cli("train", *args, "-o", tmp_path / "ckpt", *TINY_CLI, "--max-steps", "2")
        assert result.exit_code == 1, (args, result.stderr)
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("bitextmine: error: "), result.stderr
        assert message in result.stderr
        assert not (tmp_path / "ckpt").exists()  # nothing written


def test_a_third_column_of_translation_pairs_is_left_aside_with_a_warning(cli, tmp_path, pairs):
    three = write_tsv(tmp_path / "ids.tsv", pairs.src, pairs.tgt, [f"id{i}" for i in range(len(pairs.src))])
    result = cli("train", three, "-o", tmp_path / "ckpt", *TINY_CLI, "--max-steps", "2")
    assert result.exit_code == 0, result.stderr
    assert "a third column, left aside: the pairs are the first two" in result.stderr


def test_the_schedule_follows_the_weights_and_the_seed():
    schedule = TaskSchedule([1.0, 0.3], seed=5)
    draws = np.array([schedule.task_at(s) for s in range(20_000)])
    assert abs(draws.mean() - 0.3 / 1.3) < 0.01  # the share of the second task
    assert [TaskSchedule([1.0, 0.3], seed=5).task_at(s) for s in range(200)] == draws[:200].tolist()
    other = [TaskSchedule([1.0, 0.3], seed=6).task_at(s) for s in range(200)]
    assert other != draws[:200].tolist()
    assert schedule.counts_before(1000) == [int((draws[:1000] == 0).sum()), int((draws[:1000] == 1).sum())]
    three = np.array([TaskSchedule([2, 1, 1], seed=0).task_at(s) for s in range(20_000)])
    assert np.allclose(np.bincount(three) / len(three), [0.5, 0.25, 0.25], atol=0.01)
    assert {TaskSchedule([0.3], seed=1).task_at(s) for s in range(100)} == {0}


def test_batches_resumed_at_a_step_continue_each_task_where_it_stood():
    tasks = [TrainingTask("translation", ParallelData(["a"] * 100, ["b"] * 100), 1.0),
             TrainingTask("nli", ParallelData(["a"] * 30, ["b"] * 30, ["c"] * 30), 1.0)]

    def run(start, end):
        mix = TaskBatches(tasks, [None, None], TrainConfig(batch_size=8, seed=3, accumulation=2), start_step=start)
        out = []
        for step in range(start, end):
            task, batches = mix.at(step)
            out.append((task, next(batches), next(batches)))
        return out

    whole = run(0, 40)
    assert {task for task, *_ in whole} == {0, 1}
    assert run(17, 40) == whole[17:]
    # each task's batches cover its rows: the other task's steps do not skip any
    nli_rows = [r for task, a, b in whole if task == 1 for r in a + b]
    assert set(nli_rows[:24]) <= set(range(30)) and len(set(nli_rows[:24])) == 24


def test_the_checkpoint_and_log_record_the_tasks(cli, tmp_path, pairs):
    triples = nli_triples(pairs)
    nli = write_tsv(tmp_path / "nli.tsv", triples.src, triples.tgt, triples.negative)
    two = write_tsv(tmp_path / "pairs.tsv", pairs.src, pairs.tgt)
    result = cli("train", two, "--task", f"nli={nli}:0.5", "-o", tmp_path / "ckpt", *TINY_CLI, "--max-steps", "6",
                 "--eval-every", "3", "-q")
    assert result.exit_code == 0, result.stderr
    config = json.loads((tmp_path / "ckpt" / "config.json").read_text())
    assert config["tasks"] == [
        {"name": "translation", "files": [two], "size": 270, "weight": 1.0, "share": 0.6667},  # 30 held out for dev
        {"name": "nli", "files": [nli], "size": 300, "weight": 0.5, "share": 0.3333}]
    steps, evaluations = read_log(tmp_path / "ckpt")
    schedule = TaskSchedule([1.0, 0.5], seed=defaults.SEED)
    assert [(r["step"], r["task"]) for r in steps] == [
        (s, ("translation", "nli")[schedule.task_at(s - 1)]) for s in range(1, 7)]
    assert all(np.isfinite(r["loss"]) for r in steps)
    assert [r["step"] for r in evaluations] == [3, 6] and evaluations[-1]["loss"] == steps[-1]["loss"]


@pytest.mark.slow
def test_resume_trains_the_same_tasks_with_the_same_losses(tmp_path, pairs, monkeypatch):
    tasks = [TrainingTask("translation", pairs, 1.0), TrainingTask("nli", nli_triples(pairs), 0.5)]
    cfg = TrainConfig(max_steps=20, **{**TINY, "eval_every": 5, "save_every": 100})
    full = train(tasks, tmp_path / "full", cfg, progress=False)
    saved = interrupted_at_step(10, tasks, tmp_path / "part", cfg, monkeypatch)
    assert saved["run"]["step"] == 10 and saved["tasks"][1] == {"name": "nli", "size": 300, "weight": 0.5}
    resumed = train(tasks, tmp_path / "part", cfg, resume=True, progress=False)
    assert [r["loss"] for r in resumed["history"]] == [r["loss"] for r in full["history"]]
    full_steps, _ = read_log(tmp_path / "full")
    part_steps, _ = read_log(tmp_path / "part")
    assert len({r["task"] for r in full_steps}) == 2
    assert part_steps == full_steps  # each step's task and loss, none logged twice

    reweighed = [tasks[0], TrainingTask("nli", tasks[1].data, 0.6)]
    with pytest.raises(BitextmineError, match="different tasks"):
        train(reweighed, tmp_path / "part", cfg, resume=True, progress=False)


@pytest.mark.slow
def test_an_nli_only_run_puts_entailments_closer_than_contradictions(cli, tmp_path, pairs):
    from bitextmine.encoders import load_encoder

    triples = nli_triples(pairs)
    nli = write_tsv(tmp_path / "nli.tsv", triples.src, triples.tgt, triples.negative)

    def entailment_closer(ckpt) -> float:
        encoder = load_encoder(f"ckpt:{ckpt}", device="cpu")
        a, e, c = (encoder.encode(x) for x in (triples.src, triples.tgt, triples.negative))
        return float(((a * e).sum(axis=1) > (a * c).sum(axis=1)).mean())

    common = ["--task", f"nli={nli}", *TINY_CLI, "--lr", "3e-3", "--warmup-steps", "5", "-q"]
    untrained = cli("train", *common, "-o", tmp_path / "untrained", "--max-steps", "1", "--lr", "1e-9")
    trained = cli("train", *common, "-o", tmp_path / "trained", "--max-steps", "40", "--eval-every", "40")
    assert untrained.exit_code == trained.exit_code == 0, trained.stderr
    before, after = entailment_closer(tmp_path / "untrained"), entailment_closer(tmp_path / "trained")
    assert before < 0.1 and after > 0.9, (before, after)
    assert json.loads((tmp_path / "trained" / "config.json").read_text())["tasks"][0]["name"] == "nli"
