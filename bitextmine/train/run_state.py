"""What a run leaves on disk, and when it stops: checkpoints, resume, Ctrl-C, the time limit.

    OUT/config.json, model.safetensors, sentencepiece.model
                                 the encoder (format: encoders/checkpoint.py), of the best dev
                                 evaluation; of the latest step while there has been none
    OUT/train_log.jsonl          one JSON line per step (its task and loss) and per evaluation
                                 (its dev P@1, with the step's loss, lr and speed)
    OUT/state/last.safetensors   model, optimiser and RNG state: everything ``--resume`` needs,
    OUT/state/last.json          with the step, best dev score and the run's settings

No pickle anywhere: tensors go to safetensors, everything else to JSON, each written
under a temporary name and renamed.
"""

from __future__ import annotations

import contextlib
import json
import logging
import signal
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any

import torch
from pydantic import Field

from bitextmine import __version__
from bitextmine.encoders.base import Encoder
from bitextmine.encoders.checkpoint import (
    CONFIG,
    FORMAT_NAME,
    TOKENIZER,
    WEIGHTS,
    load_tensors,
    save_tensors,
    write_model,
)
from bitextmine.errors import BitextmineError, Terminated
from bitextmine.io.atomic import (
    atomic_path,
    prepare_output_dir,
    refuse_other_files,
    remove_stale_temporaries,
    save_json,
)
from bitextmine.io.lock import output_lock
from bitextmine.io.validate import Float, Int, Model, parse
from bitextmine.train.config import TrainConfig
from bitextmine.train.optim import Optimizers
from bitextmine.train.trainables import TrainableEncoder

log = logging.getLogger(__name__)

LOG = "train_log.jsonl"
STATE_DIR = "state"
OWN_FILES = (CONFIG, WEIGHTS, TOKENIZER, LOG, STATE_DIR)  # what a run writes: a killed run's are its own
SAVE_BYTES_PER_SECOND = 100e6  # a slow disk: how long a save may take before one has been timed


@dataclass
class RunState:
    step: int = 0
    best_dev: float = -1.0  # dev P@1 of the saved model; -1: no evaluation yet
    bad_evals: int = 0  # evaluations since the best
    seconds: float = 0.0  # training time over every session of the run
    time_progress: float = 0.0  # how far the time-based learning-rate decay has gone (lr_schedule "time")
    history: list = field(default_factory=list)

    @property
    def evaluated(self) -> bool:
        return self.best_dev >= 0


class _SavedRun(Model):
    step: Annotated[Int, Field(ge=0)]
    best_dev: Float
    bad_evals: Annotated[Int, Field(ge=0)]
    seconds: Annotated[Float, Field(ge=0)]
    time_progress: Annotated[Float, Field(ge=0)]
    history: list[dict[str, Any]]


class _SavedOptimizer(Model):
    param_groups: list[list[dict[str, Any]]]


class _SavedState(Model):
    """``state/last.json``: checked before anything is restored from it."""
    run: _SavedRun
    optimizer: _SavedOptimizer
    config: dict[str, Any]
    tasks: list[Any] | None = None


class Meter:
    """Training time and pairs since the last save (when they are added to ``RunState.seconds``)."""

    def __init__(self):
        self.started, self.pairs = time.time(), 0

    def seconds(self) -> float:
        return time.time() - self.started

    def pairs_per_second(self) -> float:
        return self.pairs / max(self.seconds(), 1e-9)

    def lap(self) -> float:
        seconds = self.seconds()
        self.started, self.pairs = time.time(), 0
        return seconds


def check_output(out_dir: Path, resume: bool) -> bool:
    """Whether the run in ``out_dir`` is resumed; refuses to overwrite a checkpoint otherwise."""
    resumed = resume and (out_dir / STATE_DIR / "last.json").is_file()
    if not resumed and out_dir.is_dir():
        # a folder of other files (an embedding set, the user's text) is never written into
        refuse_other_files(out_dir, "checkpoint", "give an empty or new -o", ignore=OWN_FILES)
    if (out_dir / CONFIG).exists() and not resumed:
        if not _ours(out_dir / CONFIG):
            raise BitextmineError(f"holds a {CONFIG} that is not a checkpoint's; give an empty or new -o", path=out_dir)
        raise BitextmineError("already holds a checkpoint: use --resume to continue it, or another -o", path=out_dir)
    if resume and not resumed:  # one command serves a job that may be requeued; a mistyped -o is said
        log.warning("%s: no run to resume there: a new run starts", out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    return resumed


def _ours(config: Path) -> bool:
    """Whether ``config`` is a checkpoint's (another program's config.json is not written over)."""
    try:
        return json.loads(config.read_text(encoding="utf-8")).get("format") == FORMAT_NAME
    except (OSError, ValueError, AttributeError):
        return False


@contextlib.contextmanager
def claimed_output(out_dir: Path, resume: bool, writer: bool = True) -> Iterator[bool]:
    """Hold ``out_dir`` for the run (``DIR/.bitextmine.lock``, by the writing process only);
    yield whether the run there is resumed. Temporaries a killed run left are removed."""
    if not writer:
        yield check_output(out_dir, resume)
        return
    created = prepare_output_dir(out_dir)
    try:
        with output_lock(out_dir, directory=True):
            resumed = check_output(out_dir, resume)
            for directory in (out_dir, out_dir / STATE_DIR):
                if directory.is_dir():
                    remove_stale_temporaries(directory)
            yield resumed
    except BaseException:
        if created and out_dir.is_dir() and not any(out_dir.iterdir()):  # nothing half-made is left
            out_dir.rmdir()
        raise


def append_log(out_dir: Path, *records: dict) -> None:
    path = out_dir / LOG
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    with atomic_path(path) as tmp:
        tmp.write_text(old + "".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def read_log(out_dir: Path) -> tuple[list[dict], list[dict]]:
    """The log's (steps, evaluations): {step, task, loss} and {step, loss, dev_p@1, lr, ...}."""
    path = out_dir / LOG
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []
    return [r for r in records if "task" in r], [r for r in records if "dev_p@1" in r]


def cut_log(out_dir: Path, step: int) -> None:
    """Drop the records after ``step``: a run killed after logging past its last save redoes those steps."""
    path = out_dir / LOG
    if path.exists():
        lines = path.read_text(encoding="utf-8").splitlines()
        kept = [line for line in lines if json.loads(line)["step"] <= step]
        if len(kept) < len(lines):
            with atomic_path(path) as tmp:
                tmp.write_text("".join(line + "\n" for line in kept), encoding="utf-8")


def routed_languages(cfg: TrainConfig, teacher: Encoder | None) -> list[str] | None:
    """The languages the checkpoint hands to its teacher (``--route-known``), or None."""
    if not cfg.route_known:
        return None
    languages = sorted(teacher.identity.languages or ()) if teacher is not None else []
    if not languages:
        raise BitextmineError(f"--route-known: the teacher {cfg.teacher} declares no languages to hand it")
    return languages


class Checkpoints:
    """What one run writes into ``out_dir``; only the ``writer`` process (rank 0) writes."""

    def __init__(self, out_dir: Path, model: TrainableEncoder, optimizer: Optimizers, cfg: TrainConfig,
                 teacher: Encoder | None = None, writer: bool = True, tasks: list[dict] | None = None):
        self.out_dir, self.model, self.optimizer, self.cfg, self.writer = out_dir, model, optimizer, cfg, writer
        thresholds = teacher.identity.mining_thresholds if teacher else None  # the space's: the student's too
        self.description = {**model.config(), "compatible_with": teacher.identity.space() if teacher else None,
                            "mining_thresholds": thresholds.to_dict() if thresholds else None,
                            "teacher": cfg.teacher, "teacher_languages": routed_languages(cfg, teacher),
                            "recipe": cfg.recipe, "train_config": asdict(cfg),
                            "tasks": tasks or [], "bitextmine_version": __version__}
        # what --resume must find again: each task's name, size and weight (files may move)
        self.tasks_signature = [{k: t[k] for k in ("name", "size", "weight")} for t in tasks or []]
        self.unlogged_steps: list[dict] = []  # written with the next evaluation or save

    def restore(self) -> RunState:
        """Model, optimiser and RNG as they were at the last save; refuses changed settings."""
        path = self.out_dir / STATE_DIR / "last.json"
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, RecursionError) as e:
            raise BitextmineError(f"unreadable run state: {e}; train again without --resume", path=path) from None
        parse(_SavedState, saved, path, "a run state")
        if saved["run"]["step"] > self.cfg.max_steps:
            raise BitextmineError(f"run.step: the run is at step {saved['run']['step']}, past --max-steps "
                                  f"{self.cfg.max_steps}: give more steps to train on", path=path)
        signature = self.cfg.run_signature()
        if saved["config"] != signature:
            changed = sorted(k for k in {*saved["config"], *signature} if saved["config"].get(k) != signature.get(k))
            raise BitextmineError(f"--resume with different settings ({', '.join(changed)})", path=self.out_dir)
        if saved.get("tasks", self.tasks_signature) != self.tasks_signature:
            raise BitextmineError("--resume with different tasks, task weights or data sizes", path=self.out_dir)
        tensors = load_tensors(self.out_dir / STATE_DIR / "last.safetensors")
        self.model.module.load_state_dict({k[6:]: v for k, v in tensors.items() if k.startswith("model.")})
        states: list[dict[int, dict]] = [{} for _ in saved["optimizer"]["param_groups"]]
        for key, value in tensors.items():
            if key.startswith("optim"):
                which, pid, name = key.split(".", 2)
                states[int(which[len("optim"):])].setdefault(int(pid), {})[name] = value
        self.optimizer.load_state_dict([{"state": st, "param_groups": groups} for st, groups
                                        in zip(states, saved["optimizer"]["param_groups"], strict=True)])
        torch.set_rng_state(tensors["rng.torch"])
        state = RunState(**saved["run"])
        if self.writer:
            cut_log(self.out_dir, state.step)
        log.info("resuming at step %d (best dev P@1 %s)", state.step,
                 f"{state.best_dev:.2f}" if state.best_dev >= 0 else "not measured yet")
        return state

    def record_step(self, state: RunState, task: str, loss: float) -> None:
        """The task and loss of the step just done (logged with the next evaluation or save)."""
        self.unlogged_steps.append({"step": state.step, "task": task, "loss": round(loss, 4)})

    def _log(self, *records: dict) -> None:
        if self.writer and (self.unlogged_steps or records):
            append_log(self.out_dir, *self.unlogged_steps, *records)
        self.unlogged_steps = []

    def record_evaluation(self, state: RunState, p1: float, loss: float, lr: float, meter: Meter) -> None:
        """Log a dev evaluation; keep the model when it is the best so far."""
        record = {"step": state.step, "loss": round(loss, 4), "dev_p@1": round(p1, 2), "lr": lr,
                  "seconds": round(state.seconds + meter.seconds(), 1),
                  "pairs_per_second": round(meter.pairs_per_second(), 1)}
        state.history.append(record)
        log.info("step %d  loss %.4f  dev P@1 %.2f", state.step, loss, p1)
        self._log(record)
        if p1 > state.best_dev:
            state.best_dev, state.bad_evals = p1, 0
            self.save_model(state)
        else:
            state.bad_evals += 1

    def save_model(self, state: RunState) -> None:
        if self.writer:
            write_model(self.out_dir, {**self.description, "step": state.step,
                                       "dev_p@1": state.best_dev if state.evaluated else None},
                        self.model.module, self.model.tokenizer_file)

    def save_state(self, state: RunState, meter: Meter | None = None) -> None:
        """Everything ``--resume`` needs: model, optimiser and RNG tensors, and the RunState."""
        if meter is not None:  # the training time since the last save
            state.seconds += meter.lap()
        self._log()  # before the state: a log ahead of the state is cut on --resume, one behind would miss steps
        if not self.writer:
            return
        tensors = {f"model.{k}": v for k, v in self.model.module.state_dict().items()}
        param_groups = []
        for j, opt in enumerate(self.optimizer.state_dict()):
            for pid, st in opt["state"].items():
                for name, value in st.items():
                    tensors[f"optim{j}.{pid}.{name}"] = value if torch.is_tensor(value) else torch.tensor(value)
            param_groups.append(opt["param_groups"])
        tensors["rng.torch"] = torch.get_rng_state()
        (self.out_dir / STATE_DIR).mkdir(parents=True, exist_ok=True)
        save_tensors(tensors, self.out_dir / STATE_DIR / "last.safetensors")
        save_json(self.out_dir / STATE_DIR / "last.json", {"run": asdict(state), "optimizer": {
            "param_groups": param_groups}, "config": self.cfg.run_signature(), "tasks": self.tasks_signature})

    def finish(self, state: RunState, meter: Meter | None = None) -> None:
        """The state, and a loadable encoder: the latest weights if no evaluation has kept one."""
        self.save_state(state, meter)
        if not state.evaluated:
            self.save_model(state)

    @contextlib.contextmanager
    def finished_on_interrupt(self, state: RunState) -> Iterator[None]:
        try:
            yield
        except KeyboardInterrupt:
            log.warning("interrupted: saving the run at step %d", state.step)
            self.finish(state)
            raise

    def bytes_to_save(self) -> int:
        """Roughly what a final save writes: weights in the encoder and in the state, Adam's two moments."""
        return 4 * sum(t.numel() * t.element_size() for t in self.model.module.state_dict().values())


class Interrupts:
    """Ctrl-C (SIGINT) or SIGTERM during training, acted on where the run can be saved whole.

    A stop is remembered (``requested``) and the loop stops after the step in progress;
    inside ``immediate()`` (the long preparation, with nothing half done to lose) it
    raises at once, as it would without this handler. SIGTERM is taken over only from a
    process that stops on it (the command line's, a local task's), never where submitit
    keeps it for Slurm's preemption.
    """

    def __init__(self):
        self.requested = False
        self.signal = signal.SIGINT
        self._immediate = False

    def __enter__(self) -> Interrupts:
        self._previous = {signal.SIGINT: signal.signal(signal.SIGINT, self._on_signal)}
        term = signal.getsignal(signal.SIGTERM)
        if term is not signal.SIG_IGN and not getattr(term, "__module__", "").startswith("submitit"):
            self._previous[signal.SIGTERM] = signal.signal(signal.SIGTERM, self._on_signal)
        return self

    def __exit__(self, *exc) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)

    def stop_exception(self) -> KeyboardInterrupt:
        """What a stop raises: Ctrl-C's KeyboardInterrupt, or ``Terminated`` (exit 143)."""
        return Terminated() if self.signal == signal.SIGTERM else KeyboardInterrupt()

    def _on_signal(self, signum, frame) -> None:
        if not self.requested:
            log.warning("%s: stopping after this step", "terminated" if signum == signal.SIGTERM else "interrupted")
        self.requested = True
        self.signal = signum
        if self._immediate:
            raise self.stop_exception()

    @contextlib.contextmanager
    def immediate(self) -> Iterator[None]:
        if self.requested:
            raise self.stop_exception()
        self._immediate = True
        try:
            yield
        finally:
            self._immediate = False


class Deadline:
    """``--max-minutes``: the wall time since the command started, the final save included.

    ``exhausted()`` is asked after every step: it says stop when one more step plus the
    final evaluation and save would pass the limit. Evaluations and saves are timed
    under ``final_work``; until one of each has been, they are estimated from
    ``expect_final_work``.
    """

    def __init__(self, minutes: float | None, started: float | None = None):
        now = time.monotonic()
        self.end = None if minutes is None else (started if started is not None else now) + 60 * minutes
        self.last_step_end, self.step_seconds = now, 0.0
        self.longest: dict[str, float] = {}  # "eval", "save" -> the longest timed so far
        self.training_started, self.progress_before = now, 0.0
        self.eval_steps, self.save_guess = 0.0, 0.0
        self._work_since_step = 0.0

    def expect_final_work(self, eval_steps: float, save_bytes: int) -> None:
        """Until timed: an evaluation costs ``eval_steps`` steps, a save writes ``save_bytes``."""
        self.eval_steps, self.save_guess = eval_steps, save_bytes / SAVE_BYTES_PER_SECOND

    def start_training(self, progress_before: float = 0.0) -> None:
        """The loop starts: the time-based schedule spreads what is left of its decay
        (``1 - progress_before``, less on a resumed run) over the time left."""
        self.training_started, self.progress_before = time.monotonic(), progress_before

    def time_progress(self) -> float:
        """0 when training started, 1 at the time limit (for ``lr_schedule="time"``)."""
        if self.end is None:
            return 0.0
        share = (time.monotonic() - self.training_started) / max(1e-9, self.end - self.training_started)
        return self.progress_before + (1.0 - self.progress_before) * min(1.0, max(0.0, share))

    def final_seconds(self) -> float:
        return (self.longest.get("eval", self.eval_steps * self.step_seconds)
                + self.longest.get("save", self.save_guess))

    def exhausted(self, after_step: bool = True) -> bool:
        """Whether one more step and the final work no longer fit (``after_step=False``:
        asked before the first step, which starts the step clock)."""
        now = time.monotonic()
        if after_step:  # the step's own time, without the evaluation and save timed inside it
            self.step_seconds = now - self.last_step_end - self._work_since_step
        self.last_step_end, self._work_since_step = now, 0.0
        return self.end is not None and now + self.step_seconds + self.final_seconds() > self.end

    @contextlib.contextmanager
    def final_work(self, kind: str) -> Iterator[None]:
        """Time an evaluation (``kind="eval"``) or a save (``"save"``)."""
        started = time.monotonic()
        try:
            yield
        finally:
            seconds = time.monotonic() - started
            self._work_since_step += seconds
            self.longest[kind] = max(self.longest.get(kind, 0.0), seconds)
