"""Several tasks in one run (USE-xling's multi-task dual encoder): what each step trains.

A task is training data with its objective (``objective.prepare_objective``):

- ``translation``: pairs ``src<TAB>tgt`` -> bidirectional additive-margin ranking, with its
  duplicate masking, hard negatives and distillation;
- ``nli``: English NLI triples ``anchor<TAB>entailment<TAB>contradiction`` -> contrastive
  loss with the contradiction as hard negative (mSimCSE).

On the command line the positional files are translation pairs, and
``--task NAME=FILE[,FILE...][:WEIGHT]`` adds a task (``--task translation:W`` sets the
weight of the positional pairs). Weights are relative: a task trains on weight / (sum of
weights) of the steps. The task of step s is drawn from the seed and s alone, so a resumed
run trains the same tasks in the same order; each task walks through its own seeded
batches, the steps of the other tasks leaving its position alone.
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch

from bitextmine import defaults
from bitextmine.errors import BitextmineError
from bitextmine.train.config import TrainConfig
from bitextmine.train.data import ParallelData, concatenate, read_parallel, with_dev_slice

TASKS = ("translation", "nli")
SYNTAX = "NAME=FILE[,FILE...][:WEIGHT]"


@dataclass(frozen=True)
class TaskSpec:
    """A task as asked for: its name, files (as given) and weight (None: the default)."""

    name: str
    files: tuple[str, ...]
    weight: float | None = None


@dataclass
class TrainingTask:
    name: str
    data: ParallelData
    weight: float
    files: tuple[str, ...] = ()  # as given; empty when the data came from the API

    def describe(self, total_weight: float) -> dict:
        """What the checkpoint's config.json records of the task."""
        return {"name": self.name, "files": list(self.files), "size": len(self.data), "weight": self.weight,
                "share": round(self.weight / total_weight, 4)}


def parse_task_option(text: str) -> TaskSpec:
    """``NAME[=FILE[,FILE...]][:WEIGHT]`` -> TaskSpec; a one-line error for anything else."""
    head, weight = text, None
    if ":" in text:
        head, _, raw = text.rpartition(":")
        weight = _parse_weight(raw, text)
    name, has_files, files_text = head.partition("=")
    if name not in TASKS:
        raise BitextmineError(f"--task {text}: unknown task {name!r} (use {' or '.join(TASKS)}, as {SYNTAX})")
    files = tuple(files_text.split(",")) if has_files else ()
    if has_files and not all(files):
        raise BitextmineError(f"--task {text}: an empty file name (use {SYNTAX})")
    return TaskSpec(name, files, weight)


def _parse_weight(raw: str, text: str) -> float:
    try:
        weight = float(raw)
    except ValueError:
        weight = math.nan
    if not (math.isfinite(weight) and weight > 0):
        raise BitextmineError(f"--task {text}: bad weight {raw!r}, use a positive number ({SYNTAX})")
    return weight


def task_specs(pair_files: list[str], options: list[str]) -> list[TaskSpec]:
    """The tasks of a run: the positional translation pairs, then each ``--task`` in order."""
    parsed = [parse_task_option(o) for o in options]
    seen: set[str] = set()
    for spec in parsed:
        if spec.name in seen:
            raise BitextmineError(f"--task {spec.name} given twice: list its files once, comma-separated")
        seen.add(spec.name)
    given = {spec.name: spec for spec in parsed}
    specs = []
    if pair_files or "translation" in given:
        extra = given.get("translation", TaskSpec("translation", ()))
        specs.append(TaskSpec("translation", tuple(pair_files) + extra.files, extra.weight))
    specs += [spec for spec in parsed if spec.name != "translation"]
    if not specs:
        raise BitextmineError(f"no training data: give translation pairs, or a task as --task {SYNTAX}")
    for spec in specs:
        if not spec.files:
            raise BitextmineError(f"--task {spec.name} without files, and no translation pairs given as arguments")
    return [TaskSpec(s.name, s.files, defaults.TRAIN_TASK_WEIGHTS[s.name] if s.weight is None else s.weight)
            for s in specs]


def read_tasks(specs: list[TaskSpec]) -> list[TrainingTask]:
    """Each task's files read and checked: pairs for translation, triples for nli.

    Every file is looked for before any is read, so that a typo fails in a moment.
    """
    for spec in specs:
        for path in (p for given in spec.files for p in given.split(",")):  # SRC,TGT: two aligned files
            if not Path(path).is_file():
                what = "is a directory: give a file" if Path(path).is_dir() else "no such file"
                raise BitextmineError(f"{what} (--task {spec.name})" if spec.name != "translation" else what,
                                      path=path)
    return [TrainingTask(spec.name, read_task_files(spec.name, spec.files), spec.weight, spec.files)
            for spec in specs]


def read_task_files(name: str, files: tuple[str, ...]) -> ParallelData:
    parts = []
    for spec in files:
        # the task says what a third column is: a triple's contradiction, or a pair's extra column
        part = read_parallel([spec], triples={"nli": True, "translation": False}.get(name))
        if name == "nli" and part.negative is None:
            raise BitextmineError("2 columns: translation pairs, not NLI triples (anchor<TAB>entailment<TAB>"
                                  "contradiction); translation pairs are the positional arguments", path=spec, line=1)
        parts.append(part)
    return concatenate(parts)


def as_tasks(data: ParallelData | list[TrainingTask]) -> list[TrainingTask]:
    """Data given as one ParallelData: one task, NLI when it holds triples."""
    if isinstance(data, ParallelData):
        return [TrainingTask("nli" if data.negative is not None else "translation", data, 1.0)]
    if not data:
        raise BitextmineError("no training data given")
    return data


def split_dev(tasks: list[TrainingTask], dev: ParallelData | None,
              cfg: TrainConfig) -> tuple[list[TrainingTask], ParallelData]:
    """``dev`` when given, else a seeded slice of the first task's data (the translation pairs, if any).

    Joined pairs (``--join-pairs``) are made from the training pairs after the slice, so no
    dev sentence is trained on and the dev slice stays single pairs."""
    if cfg.student_sides == "target" and any(t.name != "translation" for t in tasks):
        raise BitextmineError("the add-language recipe trains on translation pairs only: drop --task nli")
    first, dev = with_dev_slice(tasks[0].data, dev, cfg.dev_size, cfg.seed, cfg.dev_per_language, tasks[0].files)
    if tasks[0].name == "translation":
        first = first.with_joined(cfg.join_pairs, cfg.seed)
    return [TrainingTask(tasks[0].name, first, tasks[0].weight, tasks[0].files), *tasks[1:]], dev


def vocabulary_data(tasks: list[TrainingTask]) -> ParallelData:
    """The data a new SentencePiece vocabulary (or an extension) learns from: every task's two sides."""
    if len(tasks) == 1:
        return tasks[0].data  # with its languages, for a vocabulary extension
    return ParallelData([s for t in tasks for s in t.data.src], [s for t in tasks for s in t.data.tgt])


class TaskSchedule:
    """The task of each step: drawn by weight from (seed, step) alone."""

    def __init__(self, weights: list[float], seed: int):
        total = sum(weights)
        self.bounds = [sum(weights[: i + 1]) / total for i in range(len(weights))]
        self.seed = seed

    def task_at(self, step: int) -> int:
        if len(self.bounds) == 1:
            return 0
        # a string seed is hashed (SHA-512): draws of consecutive steps are independent, which
        # consecutive integer seeds of the Mersenne Twister are not quite
        draw = random.Random(f"{self.seed}:{step}").random()
        return min(bisect.bisect_right(self.bounds, draw), len(self.bounds) - 1)

    def counts_before(self, step: int) -> list[int]:
        """How many of steps 0..step-1 each task trained."""
        counts = [0] * len(self.bounds)
        for s in range(step):
            counts[self.task_at(s)] += 1
        return counts


class TaskBatches:
    """Per step: the task it trains and that task's iterator of batches.

    The batches are seeded rows, unless the task's objective draws its own (``batches``).
    """

    def __init__(self, tasks: list[TrainingTask], objectives: list, cfg: TrainConfig, start_step: int = 0,
                 rank: int = 0, world_size: int = 1):
        self.schedule = TaskSchedule([t.weight for t in tasks], cfg.seed)
        done = self.schedule.counts_before(start_step)  # where each task's batches stand on --resume
        self.batches = [objective.batches(steps * cfg.accumulation, rank, world_size) if hasattr(objective, "batches")
                        else seeded_batches(len(t.data), cfg.batch_size, cfg.seed, steps * cfg.accumulation, rank,
                                            world_size)
                        for t, objective, steps in zip(tasks, objectives, done, strict=True)]

    def at(self, step: int) -> tuple[int, Iterator[list[int]]]:
        task = self.schedule.task_at(step)
        return task, self.batches[task]


def seeded_batches(n: int, batch_size: int, seed: int, start_batch: int, rank: int = 0,
                   world_size: int = 1) -> Iterator[list[int]]:
    """Endless seeded batches of row indices; batch b is the same on every run.

    With several processes, each takes its own share of every global batch.
    """
    per_epoch = max(1, n // batch_size)
    per_rank = batch_size // world_size
    b = start_batch
    epoch, perm = -1, None
    while True:
        e = b // per_epoch
        if e != epoch:
            epoch = e
            perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed * 100_003 + e))
        pos = (b % per_epoch) * batch_size
        rows = perm[pos : pos + batch_size].tolist()
        yield rows if world_size == 1 else rows[rank * per_rank : (rank + 1) * per_rank]
        b += 1
