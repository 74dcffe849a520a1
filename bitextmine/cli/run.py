"""``bitextmine run`` and ``bitextmine plan``: the whole pipeline from one YAML file."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Annotated

import typer

from bitextmine import defaults
from bitextmine.choices import Launcher, Stage
from bitextmine.cli.logs import setup_logging
from bitextmine.cli.options import (
    Quiet,
    check_json_output,
    command,
    device_option,
    json_option,
    json_to_stdout,
    print_table,
    usage_error,
)
from bitextmine.errors import BitextmineError, printable
from bitextmine.io.atomic import write_json

app = typer.Typer()
Pipeline = Annotated[Path, typer.Argument(metavar="PIPELINE.yaml", show_default=False,
                                          help="A pipeline file (see examples/pipeline-*.yaml).")]


def _key_value(values: list[str] | None) -> list[str] | None:
    for value in values or ():
        key, equals, _ = value.partition("=")
        if not equals or not all(key.split(".")):
            raise typer.BadParameter(f"{value!r} is not KEY=VALUE (e.g. resources.embed.gpus=0)")
    return values


Settings = Annotated[list[str] | None, typer.Option(
    "--set", metavar="KEY=VALUE", show_default=False, callback=_key_value,
    help="Change a setting of the pipeline file (repeatable; VALUE is YAML), e.g. --set resources.embed.gpus=0.")]
LauncherOption = Annotated[Launcher, typer.Option(
    help="local (submitit local executor: a worker per visible GPU, or launcher.workers on CPU), slurm "
         "(submitit job arrays) or inline (this process, one task at a time).")]


@command(app, epilog="""\b
Examples:
    bitextmine run examples/pipeline-ccmatrix.yaml
    bitextmine run pipeline.yaml --launcher slurm --stage embed --stage index
    bitextmine run pipeline.yaml --launcher slurm --set resources.embed.gpus=0""")
def run(
    pipeline: Pipeline,
    launcher: LauncherOption = Launcher(defaults.LAUNCHER),
    stage: Annotated[list[Stage] | None, typer.Option(
        metavar="STAGE", show_default=False,
        help="Run only these stages (repeatable): prepare, embed, index, mine, adapt, filter.")] = None,
    settings: Settings = None,
    json_out: json_option("The stages (tasks run and skipped, seconds, outputs) and the pairs files as JSON "
                          "(- for standard output).") = None,
    quiet: Quiet = False,
) -> None:
    """Run prepare -> embed -> index -> mine (-> adapt) -> filter over every shard and language pair of a pipeline.

    Finished tasks are skipped, so a killed run resumes where it was. On Slurm, a stage
    whose resources no node of the partition has stops the run before anything is submitted.
    """
    from bitextmine.choices import STAGES
    from bitextmine.launch.runner import final_outputs, run_pipeline

    setup_logging(quiet)
    cfg = _load_config(pipeline, settings)
    check_json_output(json_out, [pipeline, *(s for shards in cfg.languages.values() for s in shards)])
    chosen = {s.value for s in stage} if stage else set(STAGES)
    summaries = run_pipeline(cfg, launcher.value, tuple(s for s in STAGES if s in chosen), progress=not quiet)
    aside = json_to_stdout(json_out)
    print_table(["stage", "tasks", "ran", "skipped", "seconds", "output"],
                [[s.stage, s.tasks, s.ran, s.skipped, f"{s.seconds:.1f}",
                  _stage_folder(s.outputs)] for s in summaries], err=aside)
    pairs = {}
    for path in final_outputs(cfg):
        if path.exists():
            with path.open(encoding="utf-8") as lines:
                pairs[str(path)] = sum(1 for _ in lines)
            typer.echo(printable(f"pairs: {path} ({pairs[str(path)]} lines)"), err=True)  # the table alone on stdout
    if json_out:
        write_json(json_out, {"pipeline": str(pipeline), "output": str(cfg.output),
                              "stages": [{"stage": s.stage, "tasks": s.tasks, "ran": s.ran, "skipped": s.skipped,
                                          "seconds": round(s.seconds, 3), "outputs": [str(p) for p in s.outputs]}
                                         for s in summaries],
                              "pairs": [{"file": path, "lines": lines} for path, lines in pairs.items()]})


@command(app, epilog="""\b
Examples:
    bitextmine plan examples/pipeline-ccmatrix.yaml --json plan.json
    bitextmine plan pipeline.yaml --launcher slurm
    bitextmine plan pipeline.yaml --remeasure""")
def plan(
    pipeline: Pipeline,
    device: device_option("Device the calibration run measures: auto, cpu or cuda:N.") = defaults.DEVICE,
    launcher: LauncherOption = Launcher(defaults.LAUNCHER),
    settings: Settings = None,
    json_out: json_option("The estimates as JSON (- for standard output).") = None,
    mined_share: Annotated[float | None, typer.Option(
        "--mined-share", min=0.0, max=1.0, metavar="SHARE",
        help="Pairs mined per sentence of the smaller side: mine's exact margins and the filter grow with it. "
             "By default measured on a sample where both sides are embedded, else assumed "
             f"({defaults.PLAN_MINED_SHARE:g}). A previous run's: pairs / rows in its mine sidecar.")] = None,
    remeasure: Annotated[bool, typer.Option(
        "--remeasure", help="Calibrate this machine again instead of using the calibration kept from an earlier "
                            "plan with the same settings and version (under $XDG_CACHE_HOME/bitextmine/plan).")]
    = False,
    quiet: Quiet = False,
) -> None:
    """Estimate RAM, GPU memory, disk and time per stage before anything runs.

    The estimates come from the corpus line counts and throughputs measured by a quick
    calibration on a sample, on this machine (kept for the next plan with the same
    settings and version). With --launcher slurm, also the job arrays, the resources of a
    task and the queue-free wall time on the partition.
    """
    from dataclasses import asdict

    from bitextmine.launch.costs import total
    from bitextmine.launch.pipeline import with_prepared_shards
    from bitextmine.launch.plan import estimate

    setup_logging(quiet)
    # a pipeline that starts from documents is estimated from its prepared shards
    cfg = with_prepared_shards(_load_config(pipeline, settings))
    check_json_output(json_out, [pipeline, *(s for shards in cfg.languages.values() for s in shards)])
    partition = _slurm_partition(cfg) if launcher == Launcher.slurm else None
    estimates, measured = estimate(cfg, device, progress=not quiet, mined_share=mined_share, remeasure=remeasure)
    aside = json_to_stdout(json_out)
    calibration = measured["calibration"]
    when = (f"kept from {calibration['measured_at']} (--remeasure to measure again)" if calibration["cached"]
            else "measured now, kept for the next plan")
    typer.echo(f"this machine: {measured['embed_sentences_per_second']:.0f} sentences/s embedding, "
               f"{measured['knn_gflops']:.0f} GFLOP/s exact search; calibration {when}", err=True)
    everything = total(estimates)
    print_table(["stage", "tasks", "RAM GB", "GPU GB", "disk GB", "time", "basis"],
                [[e.stage, e.tasks, f"{e.ram_gb:.2f}", f"{e.gpu_gb:.2f}", f"{e.disk_gb:.3f}", _duration(e.seconds),
                  e.basis] for e in [*estimates, everything]], err=aside)
    plan_json = {"measured": measured, "stages": [asdict(e) for e in estimates], "total": asdict(everything)}
    if partition is not None:
        plan_json["slurm"] = _print_slurm_plan(cfg, estimates, partition, aside)
    if json_out:
        write_json(json_out, plan_json)


def _slurm_partition(cfg):
    """The partition the jobs would go to (read from Slurm before the calibration, which takes a while)."""
    from bitextmine.launch.slurm import read_cluster

    return read_cluster().partition(cfg.launcher.slurm.partition)


def _print_slurm_plan(cfg, estimates, partition, err: bool) -> dict:
    from dataclasses import asdict

    from bitextmine.launch.slurm import misfits, slurm_estimates

    stages = slurm_estimates(cfg, estimates, partition)
    print_table(["stage", "tasks", "arrays", "per task", "at once", "task time", "wall time"],
                [[s.stage, s.tasks, s.arrays,
                  f"{s.cpus} CPU, {s.gpus} GPU, {s.mem_gb:g} GB, {s.timeout_min} min",
                  s.concurrent, _duration(s.task_seconds),
                  _duration(s.seconds) if s.seconds is not None else "does not fit"] for s in stages],
                title=f"on Slurm, partition {partition.name!r}: {partition.limits()}; wall time without queueing "
                      "= ceil(tasks / at once) x task time", err=err)
    problems = [m for s in stages for m in misfits(partition, s.stage, s.cpus, s.mem_gb, s.gpus, s.timeout_min)]
    for problem in problems:  # `run` would stop on these before submitting
        logging.getLogger("bitextmine").warning("%s: %s", cfg.source, problem)
    return {"partition": partition.name, "limits": partition.limits(), "stages": [asdict(s) for s in stages],
            "misfits": [str(p) for p in problems]}


def _stage_folder(outputs: list[str]) -> str:
    """The folder holding a stage's outputs (every language's: ``out/embed``, not ``out/embed/de``)."""
    if not outputs:
        return "-"
    return os.path.commonpath([str(Path(o).parent) for o in outputs])


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _load_config(pipeline, settings):
    """The pipeline file with ``--set`` over it; a bad ``--set`` is a usage error (exit 2)."""
    from bitextmine.launch.config import load_config

    try:
        return load_config(pipeline, settings or ())
    except BitextmineError as e:
        if e.message.startswith("--set "):
            raise usage_error(e.message, "--set") from None
        raise
