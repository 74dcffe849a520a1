"""Run a pipeline's stages through a launcher: here (inline), local workers or Slurm.

Only this module imports submitit. ``local`` runs submitit's LocalExecutor (the same
job code path as Slurm, in subprocesses on this machine): one worker per visible GPU
(each sees one GPU through CUDA_VISIBLE_DEVICES), or ``launcher.workers`` on CPU.
``slurm`` submits job arrays of at most ``launcher.slurm.max_array`` tasks. A failed
task is resubmitted up to ``launcher.retries`` times; finished tasks are skipped.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from bitextmine.errors import BitextmineError
from bitextmine.io.atomic import write_json
from bitextmine.launch.config import STAGES, PipelineConfig, Resources
from bitextmine.launch.pipeline import STAGE_TASKS, Task, execute

log = logging.getLogger(__name__)
LAUNCHERS = ("local", "slurm", "inline")


@dataclass
class StageSummary:
    stage: str
    tasks: int
    ran: int
    skipped: int
    seconds: float
    outputs: list[str]


def _run_task(task: Task, threads: int) -> str:
    """The job body: limit threads to the task's CPUs, then run it."""
    import torch

    torch.set_num_threads(max(1, threads))
    return execute(task)


def _visible_gpus() -> list[int]:
    try:
        import torch

        return list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    except ImportError:
        return []


class Launcher:
    def __init__(self, cfg: PipelineConfig, kind: str):
        if kind not in LAUNCHERS:
            raise BitextmineError(f"unknown launcher {kind!r}: use {', '.join(LAUNCHERS)}")
        self.cfg = cfg
        self.kind = kind

    def run(self, stage: str, tasks: list[Task], on_done=lambda n: None) -> None:
        """Run ``tasks`` (none done yet), retrying failures; raise when one keeps failing.

        ``on_done(1)`` is called as each task finishes (for a progress bar)."""
        resources = self.cfg.resources_for(stage)
        pending = list(tasks)
        for attempt in range(self.cfg.launcher.retries + 1):
            failures = self._run_once(stage, pending, resources, on_done)
            if not failures:
                return
            pending = [t for t, _ in failures]
            for task, error in failures:
                log.warning("%s %s failed (attempt %d): %s", stage, task.name, attempt + 1, error)
        task, error = failures[0]
        raise BitextmineError(f"{stage} task {task.name} failed {self.cfg.launcher.retries + 1} times: {error} "
                              f"(logs in {self.cfg.output / 'logs' / stage})")

    def _run_once(self, stage: str, tasks: list[Task], resources: Resources, on_done) -> list[tuple[Task, str]]:
        if self.kind == "inline":
            failures = []
            for task in tasks:
                try:
                    execute(task)
                    on_done(1)
                except Exception as e:  # reported and retried like a failed job
                    failures.append((task, f"{type(e).__name__}: {e}"))
            return failures
        executor, waves = self._executor(stage, resources)
        failures = []
        for start in range(0, len(tasks), waves):
            wave = tasks[start : start + waves]
            if self.kind == "slurm":
                with executor.batch():
                    jobs = [executor.submit(_run_task, t, resources.cpus) for t in wave]
            else:
                jobs = [executor.submit(_run_task, t, resources.cpus) for t in wave]
            for task, job in zip(wave, jobs, strict=True):
                try:
                    job.result()
                    on_done(1)
                except Exception as e:  # submitit re-raises the job's error (or a timeout) here
                    failures.append((task, str(e).strip().splitlines()[-1] if str(e).strip() else repr(e)))
        return failures

    def _executor(self, stage: str, resources: Resources):
        """(a submitit executor, tasks submitted at once)."""
        import submitit

        folder = self.cfg.output / "logs" / stage
        if self.kind == "local":
            executor = submitit.LocalExecutor(folder=folder)
            gpus = _visible_gpus()
            if gpus and resources.gpus:
                executor.update_parameters(timeout_min=resources.timeout_min, gpus_per_node=1, visible_gpus=gpus)
                return executor, len(gpus)
            executor.update_parameters(timeout_min=resources.timeout_min)
            return executor, max(1, self.cfg.launcher.workers or 1)
        slurm = self.cfg.launcher.slurm
        executor = submitit.AutoExecutor(folder=folder, cluster="slurm")
        params = {"timeout_min": resources.timeout_min, "cpus_per_task": resources.cpus, "mem_gb": resources.mem_gb,
                  "gpus_per_node": resources.gpus, "slurm_array_parallelism": slurm.max_array,
                  "name": f"bitextmine-{stage}"}
        for key in ("partition", "account", "qos", "constraint"):
            if getattr(slurm, key):
                params[f"slurm_{key}"] = getattr(slurm, key)
        executor.update_parameters(**params)
        return executor, slurm.max_array


def run_pipeline(cfg: PipelineConfig, launcher: str = "local", stages: tuple[str, ...] = STAGES,
                 progress: bool = False) -> list[StageSummary]:
    """Run every stage (skipping finished tasks); write and return the summary."""
    from bitextmine.progress import progress_bar

    runner = Launcher(cfg, launcher)
    cfg.output.mkdir(parents=True, exist_ok=True)
    summaries = []
    for stage in stages:
        tasks = STAGE_TASKS[stage](cfg)  # built now: a stage's inputs are the previous stage's outputs
        todo = [t for t in tasks if not t.is_done()]
        log.info("%s: %d task(s), %d to run", stage, len(tasks), len(todo))
        started = time.time()
        if todo:
            with progress_bar(total=len(todo), desc=stage, unit="task", disable=not progress) as bar:
                runner.run(stage, todo, on_done=bar.update)
        summaries.append(StageSummary(stage, len(tasks), len(todo), len(tasks) - len(todo),
                                      round(time.time() - started, 2), [str(t.output) for t in tasks]))
    write_json(cfg.output / "summary.json", {"stages": [asdict(s) for s in summaries],
                                             "config": str(cfg.source) if cfg.source else None})
    return summaries


def final_outputs(cfg: PipelineConfig) -> list[Path]:
    return [cfg.output / "pairs" / f"{s}-{t}.tsv" for s, t in cfg.pairs]
