"""Run a pipeline's stages through a launcher: here (inline), local workers or Slurm.

Jobs are submitted here, through submitit (which ``probes`` also imports, to time a job for
``plan``). ``local`` runs submitit's LocalExecutor (the same
job code path as Slurm, in subprocesses on this machine): one worker per visible GPU
(each sees one GPU through CUDA_VISIBLE_DEVICES), or ``launcher.workers`` on CPU.
``slurm`` submits job arrays of at most ``launcher.slurm.max_array`` tasks. A task that
crashed (killed, out of memory, a bug) is resubmitted up to ``launcher.retries`` times;
a task that fails on its input (``BitextmineError``: invalid UTF-8, a damaged file) is
reported at once with its own message, since it would fail again. Finished tasks are
skipped. Ctrl-C or SIGTERM to ``run`` cancels its jobs before it exits.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from bitextmine import defaults
from bitextmine.choices import LAUNCHERS, STAGES
from bitextmine.devices import interrupts_blocked_for_children
from bitextmine.errors import BitextmineError, Terminated
from bitextmine.io.atomic import prepare_output_dir, refuse_overwriting_inputs, save_json
from bitextmine.io.lock import output_lock
from bitextmine.launch.config import PipelineConfig, Resources
from bitextmine.launch.pipeline import STAGE_TASKS, Task, check_needs, execute
from bitextmine.launch.slurm import check_fits, read_cluster
from bitextmine.progress import progress_bar

log = logging.getLogger(__name__)
_STOPPING = threading.Event()  # set by SIGINT / SIGTERM to `run` (see _signals_stop_the_run)
_STOP_SIGNAL = [signal.SIGINT]  # the signal that set it: SIGTERM ends the run with status 143
_HOLDING_STOPS = threading.Event()  # set while jobs are submitted or stopped: a stop is then only remembered
STOP_GRACE_SECONDS = 15  # for cancelled jobs to end (the local executor sends SIGINT, then SIGKILL)
RESULT_GRACE_SECONDS = 15  # for an ended job's result file to show (submitit's own wait, for shared file systems)
# between looks at a wave's jobs: a local job's look is a process poll, so a task's end is seen
# at once; Slurm's state is asked through sacct at submitit's pace
POLL_SECONDS = {"local": 0.05, "slurm": 0.5}
LEFTOVER_GRACE_SECONDS = 60  # for the jobs of a killed run to end once cancelled
SLURM_JOBS = "slurm-jobs.txt"  # under OUTPUT/logs: the arrays this output's runs submitted


@dataclass
class StageSummary:
    stage: str
    tasks: int
    ran: int
    skipped: int
    seconds: float
    outputs: list[str]


@dataclass
class Failure:
    """Why a task did not finish: a crash is retried, an input error is not."""

    cause: str
    retry: bool
    log: Path | None = None
    error: BitextmineError | None = None  # an input error, as the task raised it


def _run_task(task: Task, threads: int, stop_on_sigterm: bool = False) -> tuple[str | None, int | None, str] | None:
    """The job body: limit threads to the task's CPUs, say where it runs, then run it.

    An input error (``BitextmineError``: invalid UTF-8, a bad file) comes back as a
    value (path, line, message): it is deterministic, so the launcher reports it at once
    instead of retrying. Anything else is a crash and propagates.

    ``stop_on_sigterm`` (local workers): SIGTERM, which the local executor forwards
    from ``run``, ends the task as Ctrl-C would (submitit otherwise ignores it, for
    Slurm's preemption), and SIGINT is restored where a background shell ignored it.
    """

    if stop_on_sigterm:
        signal.signal(signal.SIGTERM, _interrupt)
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # read by torch and faiss when they load: a node without cgroups does not bind a job to its CPUs
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(max(1, threads))
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(max(1, threads))
    print(f"bitextmine: {task.stage} task {task.name} on {socket.gethostname()}, {threads} thread(s), "
          f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '(unset)')}", file=sys.stderr, flush=True)
    try:
        execute(task)
    except BitextmineError as e:
        return e.path, e.line, e.message
    return None


def local_threads(cpus: int, together: int) -> int:
    """Threads of each of ``together`` tasks run at once on this machine: the stage's CPUs, but
    no more than an equal share of the cores. Two 2-thread FAISS tasks on 2 cores spin against
    each other (OpenMP): each took 3x its time alone, where 1 thread each takes 2x."""

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(cpus, cores // max(1, together)))


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def _last_line(text: str) -> str | None:
    """The last meaningful line of a traceback or log (submitit frames them with dashes)."""
    lines = [x.strip() for x in text.splitlines() if x.strip() and set(x.strip()) != {"-"}]
    return lines[-1] if lines else None


def _crash(job, error: Exception | None, state: str | None = None) -> Failure:
    """A job that ended without a result: the cause as the job's own error stream (or Slurm's state) tells it."""
    try:
        stderr = job.stderr() or ""
    except Exception:  # the log may be gone or unreadable: the exception text still says something
        stderr = ""
    cause = _last_line(stderr) if "Traceback" in stderr else None
    if cause is None and error is not None and "failed during processing" in str(error):
        cause = _last_line(str(error))
    if cause is None:
        tail = _last_line(stderr)
        how = f"Slurm state {state}" if state and state != "UNKNOWN" else "killed, or out of memory?"
        cause = f"the task's process ended without a result ({how})" + (f"; its last message: {tail}" if tail else "")
    return Failure(cause, retry=True, log=Path(job.paths.stderr))


def _outcome(job) -> Failure | None:
    """A finished job's result: None when the task did its work, else why not."""
    try:
        error = job.result()
    except Exception as e:  # submitit re-raises the task's crash here
        return _crash(job, e)
    if error is None:
        return None
    path, line, message = error
    return Failure(message, retry=False, log=Path(job.paths.stderr),
                   error=BitextmineError(message, path=path, line=line))


def _slurm_state(job) -> str | None:
    """As sacct last told submitit (``CANCELLED by 0``, ``FAILED``, ``OUT_OF_MEMORY``)."""
    try:
        return job.watcher.get_state(job.job_id, mode="cache")
    except Exception:  # only a detail of the message
        return None


def _stop(jobs: list) -> None:
    """End the jobs that still run (Ctrl-C or SIGTERM to ``run``) and wait a little for them.

    A local job's controller gets SIGTERM, which it forwards to the task (SIGINT, what
    submitit's own ``cancel`` sends, is ignored by processes started in the background);
    a Slurm job is cancelled.
    """
    with _stops_held():
        running = [job for job in jobs if not job.done()]
        for job in running:
            controller = getattr(job, "_process", None)  # submitit's local job: the controller process
            with contextlib.suppress(Exception):
                controller.terminate() if controller is not None else job.cancel(check=False)
        deadline = time.time() + STOP_GRACE_SECONDS
        while running and time.time() < deadline:
            running = [job for job in running if not job.done()]
            time.sleep(0.1)
        for job in running:
            controller = getattr(job, "_process", None)
            if controller is not None:
                controller.kill()
        if running:
            log.warning("%d job(s) did not stop within %d s", len(running), STOP_GRACE_SECONDS)


def _visible_gpus() -> list[int]:
    try:
        import torch  # torch: 2.5 s, only to count the GPUs (ARCHITECTURE.md, start-up)

        return list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    except ImportError:
        return []


class Launcher:
    def __init__(self, cfg: PipelineConfig, kind: str):
        if kind not in LAUNCHERS:
            raise BitextmineError(f"unknown launcher {kind!r}: use {', '.join(LAUNCHERS)}")
        self.cfg = cfg
        self.kind = kind

    def run(self, stage: str, tasks: list[Task], on_done=lambda n: None, stage_tasks: int | None = None) -> None:
        """Run ``tasks`` (none done yet); retry crashes, report input errors at once.

        A plain loop over waves rather than a retry library: a wave is many jobs
        submitted together (a Slurm array), and only its crashed tasks go again.
        ``on_done(1)`` is called as each task finishes (for a progress bar).
        ``stage_tasks``: the stage's tasks, done ones included (default: ``tasks``); a local
        task's threads follow from it, not from what is left, so that a resumed run computes
        as the uninterrupted one did (float sums in the same order, the same bytes out).
        """
        attempts = self.cfg.launcher.retries + 1
        pending = list(tasks)
        for attempt in range(1, attempts + 1):
            failures = self._run_once(stage, pending, self.cfg.resources_for(stage), on_done,
                                      stage_tasks or len(tasks))
            for task, failure in failures:
                if not failure.retry:
                    raise _input_error(stage, task, failure)
            if not failures:
                return
            if attempt < attempts:
                for task, failure in failures:
                    log.warning("%s task %s crashed (attempt %d of %d), running it again: %s", stage, task.name,
                                attempt, attempts, failure.cause)
            pending = [task for task, _ in failures]
        task, failure = failures[0]
        where = f" (log: {failure.log})" if failure.log else ""
        raise BitextmineError(f"{stage} task {task.name} failed {attempts} time(s): {failure.cause}{where}")

    def _run_once(self, stage: str, tasks: list[Task], resources: Resources, on_done,
                  stage_tasks: int) -> list[tuple[Task, Failure]]:
        if self.kind == "inline":
            failures = []
            for task in tasks:
                try:
                    execute(task)
                    on_done(1)
                except BitextmineError as e:
                    failures.append((task, Failure(e.message, retry=False, error=e)))
                    break  # an input error ends the run
                except Exception as e:  # a crash: retried like a failed job
                    failures.append((task, Failure(f"{type(e).__name__}: {e}", retry=True)))
            return failures
        executor, wave_size = self._executor(stage, resources)
        failures = []
        for start in range(0, len(tasks), wave_size):
            wave = tasks[start : start + wave_size]
            jobs = []
            try:
                if _STOPPING.is_set():
                    raise _stop_exception()
                with _stops_held():  # acted on by _outcomes' first look
                    if self.kind == "slurm":
                        jobs = _submit_array(executor, stage, wave, resources.cpus)
                        _record_jobs(self.cfg.output, jobs)
                    else:
                        threads = local_threads(resources.cpus, min(wave_size, stage_tasks))
                        # the controllers, stopped by _stop, must not print tracebacks on Ctrl-C
                        with interrupts_blocked_for_children():
                            jobs = [executor.submit(_run_task, t, threads, True) for t in wave]
                failures += self._outcomes(wave, jobs, on_done)
            except BaseException:  # Ctrl-C or SIGTERM: the workers stop with us
                _stop(jobs)
                raise
            if any(not failure.retry for _, failure in failures):
                break  # an input error ends the run: no point starting more tasks
        return failures

    def _outcomes(self, wave: list[Task], jobs: list, on_done) -> list[tuple[Task, Failure]]:
        """Wait for a wave's jobs, taking each as it ends; the failures, in task order.

        A job that ended without its result file gets ``RESULT_GRACE_SECONDS`` for the file
        to appear (a shared file system may show it late), the whole wave's such jobs at
        once: submitit's ``result()`` would wait that long for each in turn.
        """
        failures: dict[int, Failure] = {}
        waiting = dict(enumerate(jobs))
        ended_without_result: dict[int, float] = {}
        while waiting:
            if _STOPPING.is_set():
                raise _stop_exception()
            for i, job in list(waiting.items()):
                if not job.done():
                    continue
                if not job.paths.result_pickle.exists():
                    first_seen = ended_without_result.setdefault(i, time.time())
                    if time.time() - first_seen < RESULT_GRACE_SECONDS:
                        continue
                    failures[i] = _crash(job, None, _slurm_state(job) if self.kind == "slurm" else None)
                else:
                    failure = _outcome(job)
                    if failure is None:
                        on_done(1)
                    else:
                        failures[i] = failure
                del waiting[i]
            if waiting:
                time.sleep(POLL_SECONDS[self.kind])
        return [(wave[i], failures[i]) for i in sorted(failures)]

    def _executor(self, stage: str, resources: Resources):
        """(a submitit executor, tasks submitted at once)."""
        import submitit  # submitit: 0.16 s, loaded where jobs run (ARCHITECTURE.md, start-up)

        folder = self.cfg.output / "logs" / stage
        if self.kind == "local":
            executor = submitit.LocalExecutor(folder=folder)
            # only a stage that asks for GPUs looks for them: torch's import costs this process
            # a second and 0.2 GB, on top of the stage's own tasks
            gpus = _visible_gpus() if resources.gpus else []
            if gpus:
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


def _submit_array(executor, stage: str, wave: list[Task], cpus: int) -> list:
    """Submit a wave as one job array; sbatch's refusal is one error line, not submitit's traceback."""

    from submitit.core.utils import FailedJobError  # submitit: 0.16 s, where jobs run (ARCHITECTURE.md)

    told = io.StringIO()  # submitit prints sbatch's error stream before raising: the message below has it
    try:
        with contextlib.redirect_stderr(told), executor.batch():
            jobs = [executor.submit(_run_task, task, cpus) for task in wave]
    except (FailedJobError, OSError) as e:
        lines = [x.strip().removeprefix("sbatch: error: ") for x in str(e).splitlines() if x.strip()]
        refusal = next((x for x in lines if "submission failed" in x), lines[-1] if lines else type(e).__name__)
        raise BitextmineError(f"{stage}: sbatch refused the job array: {refusal}") from None
    return jobs


def _record_jobs(output: Path, jobs: list) -> None:
    """Note the array's id, so that a run after this one was killed can cancel what it left queued."""
    if jobs:
        with (output / "logs" / SLURM_JOBS).open("a", encoding="utf-8") as record:
            record.write(str(jobs[0].job_id).split("_")[0] + "\n")


def _queued(ids: list[str]) -> list[str]:
    """Those of the Slurm jobs (or arrays) that are still pending or running."""

    done = subprocess.run(["squeue", "-h", "-o", "%i", *(f"--jobs={i}" for i in ids)], capture_output=True,
                          text=True, check=False)
    return sorted({line.split("_")[0] for line in done.stdout.split() if line}) if done.returncode == 0 else []


def _cancel_leftover_jobs(output: Path) -> None:
    """Cancel the jobs that a killed ``run`` of this output left queued: they would write what this run writes."""

    record = output / "logs" / SLURM_JOBS
    if not record.is_file():
        return
    ids = sorted(set(record.read_text(encoding="utf-8").split()))
    alive = _queued(ids) if ids and shutil.which("squeue") else []
    if alive:
        log.warning("cancelling %d Slurm job(s) that an earlier run of this pipeline left queued: %s", len(alive),
                    " ".join(alive))
        subprocess.run(["scancel", *alive], capture_output=True, check=False)
        deadline = time.time() + LEFTOVER_GRACE_SECONDS
        while _queued(alive) and time.time() < deadline:
            time.sleep(1)
    record.unlink()


def _check_slurm(cfg: PipelineConfig, stages: tuple[str, ...]) -> None:
    """Before anything is submitted: every stage's request fits a node of the partition."""

    cluster = read_cluster()
    requests = {stage: (r.cpus, r.mem_gb, r.gpus, r.timeout_min) for stage in stages
                if not (stage == "index" and cfg.index.exact) for r in [cfg.resources_for(stage)]}
    check_fits(cluster, cfg.launcher.slurm.partition, requests, source=cfg.source)
    if not cluster.accounting_on:
        log.warning("Slurm accounting is off (AccountingStorageType=%s): a task killed before it wrote its result "
                    "(scancel, out of memory) leaves run waiting, since submitit asks sacct whether a job ended; "
                    "retries after a kill need accounting", cluster.accounting or "none")


def _input_error(stage: str, task: Task, failure: Failure) -> BitextmineError:
    """The task's own error, with the task named after it."""
    error = failure.error or BitextmineError(failure.cause)
    return BitextmineError(f"{error.message} ({stage} task {task.name})", path=error.path, line=error.line)


@contextlib.contextmanager
def _signals_stop_the_run() -> Iterator[None]:
    """SIGINT and SIGTERM to this process stop the run: its workers are ended, its locks released.

    SIGINT is handled even where it was inherited as ignored (a run started in the
    background by a script): whoever sends it means it.
    """

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _STOPPING.clear()
    previous = {sig: signal.signal(sig, _stop_requested) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _STOPPING.clear()  # a stop ends this run only, not a later one in this process


def _stop_requested(signum, frame):
    """Remembered as well as raised: a library that swallows the KeyboardInterrupt (it can land
    anywhere, inside submitit's polling too) does not keep the run going; the wait checks."""
    _STOP_SIGNAL[0] = signum
    _STOPPING.set()
    if not _HOLDING_STOPS.is_set():
        raise _stop_exception()


def _stop_exception() -> KeyboardInterrupt:
    return Terminated() if _STOP_SIGNAL[0] == signal.SIGTERM else KeyboardInterrupt()


@contextlib.contextmanager
def _stops_held() -> Iterator[None]:
    """A stop asked for meanwhile is remembered (``_STOPPING``), not raised.

    Submitting starts a job (a local controller process, a Slurm array) before it returns
    the job's handle: interrupted in between, the run could not stop a job it had started
    (a local controller then waits a minute for its task file, holding ``run``'s stderr).
    And a second Ctrl-C must not cut short the stopping of the jobs the first one began.
    """
    _HOLDING_STOPS.set()
    try:
        yield
    finally:
        _HOLDING_STOPS.clear()


def run_pipeline(cfg: PipelineConfig, launcher: str = defaults.LAUNCHER, stages: tuple[str, ...] = STAGES,
                 progress: bool = False) -> list[StageSummary]:
    """Run every stage (skipping finished tasks); write and return the summary.

    The output directory is locked for the run: one ``run`` per output at a time.
    """

    runner = Launcher(cfg, launcher)
    # files are sentences already; the encoder is used as it is
    stages = tuple(s for s in stages if (s != "prepare" or cfg.prepare.enabled) and (s != "adapt" or cfg.adapt.enabled))
    written = [cfg.output / d for d in ("prepare", "embed", "index", "mine", "adapt", "pairs", "logs", "summary.json")]
    refuse_overwriting_inputs(written, [shard for shards in cfg.languages.values() for shard in shards])
    if launcher == "slurm":
        _check_slurm(cfg, stages)
    prepare_output_dir(cfg.output)
    with output_lock(cfg.output, directory=True), _signals_stop_the_run():
        _cancel_leftover_jobs(cfg.output)
        return _run_stages(cfg, runner, stages, progress)


def _run_stages(cfg: PipelineConfig, runner: Launcher, stages: tuple[str, ...], progress: bool) -> list[StageSummary]:
    summaries = []
    for stage in stages:
        check_needs(cfg, stage, stages)
        tasks = STAGE_TASKS[stage](cfg)  # built now: a stage's inputs are the previous stage's outputs
        todo = [t for t in tasks if not t.is_done()]
        log.info("%s: %d task(s), %d to run", stage, len(tasks), len(todo))
        started = time.time()
        if todo:
            with progress_bar(total=len(todo), desc=stage, unit="task", disable=not progress) as bar:
                runner.run(stage, todo, on_done=bar.update, stage_tasks=len(tasks))
        summaries.append(StageSummary(stage, len(tasks), len(todo), len(tasks) - len(todo),
                                      round(time.time() - started, 2), [str(t.output) for t in tasks]))
    save_json(cfg.output / "summary.json", {"stages": [asdict(s) for s in summaries],
                                             "config": str(cfg.source) if cfg.source else None,
                                             "settings": list(cfg.settings)})
    return summaries


def final_outputs(cfg: PipelineConfig) -> list[Path]:
    return [cfg.output / "pairs" / f"{s}-{t}.tsv" for s, t in cfg.pairs]
