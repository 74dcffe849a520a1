"""``bitextmine run`` and ``bitextmine plan``: the whole pipeline from one YAML file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bitextmine import defaults
from bitextmine.choices import Launcher, Stage
from bitextmine.cli.options import (
    Quiet,
    command,
    device_option,
    json_option,
    json_to_stdout,
    print_table,
)
from bitextmine.io.atomic import write_json

app = typer.Typer()
Pipeline = Annotated[Path, typer.Argument(metavar="PIPELINE.yaml", show_default=False,
                                          help="A pipeline file (see examples/pipeline-*.yaml).")]


@command(app)
def run(
    pipeline: Pipeline,
    launcher: Annotated[Launcher, typer.Option(
        help="local (submitit local executor: a worker per visible GPU, or launcher.workers on CPU), slurm "
             "(submitit job arrays) or inline (this process, one task at a time).")] = Launcher(defaults.LAUNCHER),
    stage: Annotated[list[Stage] | None, typer.Option(
        metavar="STAGE", show_default=False,
        help="Run only these stages (repeatable): embed, index, mine, filter.")] = None,
    quiet: Quiet = False,
) -> None:
    """Run embed -> index -> mine -> filter over every shard and language pair of a pipeline.

    Finished tasks are skipped, so a killed run resumes where it was.

    \b
    Examples:
        bitextmine run examples/pipeline-ccmatrix.yaml
        bitextmine run pipeline.yaml --launcher slurm --stage embed --stage index
    """
    from bitextmine.choices import STAGES
    from bitextmine.cli import setup_logging
    from bitextmine.launch.config import load_config
    from bitextmine.launch.runner import final_outputs, run_pipeline

    setup_logging(quiet)
    cfg = load_config(pipeline)
    chosen = {s.value for s in stage} if stage else set(STAGES)
    summaries = run_pipeline(cfg, launcher.value, tuple(s for s in STAGES if s in chosen), progress=not quiet)
    print_table(["stage", "tasks", "ran", "skipped", "seconds", "output"],
                [[s.stage, s.tasks, s.ran, s.skipped, f"{s.seconds:.1f}",
                  str(Path(s.outputs[0]).parent) if s.outputs else "-"] for s in summaries])
    for path in final_outputs(cfg):
        if path.exists():
            with path.open(encoding="utf-8") as lines:
                typer.echo(f"pairs: {path} ({sum(1 for _ in lines)} lines)")


@command(app)
def plan(
    pipeline: Pipeline,
    device: device_option("Device the calibration run measures: auto, cpu or cuda:N.") = defaults.DEVICE,
    json_out: json_option("The estimates as JSON (- for standard output).") = None,
    quiet: Quiet = False,
) -> None:
    """Estimate RAM, GPU memory, disk and time per stage before anything runs.

    The estimates come from the corpus line counts and throughputs measured by a quick
    calibration on a sample, on this machine.

    \b
    Example:
        bitextmine plan examples/pipeline-ccmatrix.yaml --json plan.json
    """
    from dataclasses import asdict

    from bitextmine.cli import setup_logging
    from bitextmine.launch.config import load_config
    from bitextmine.launch.plan import estimate

    setup_logging(quiet)
    cfg = load_config(pipeline)
    estimates, measured = estimate(cfg, device, progress=not quiet)
    aside = json_to_stdout(json_out)
    typer.echo(f"measured on this machine: {measured['embed_sentences_per_second']:.0f} sentences/s embedding, "
               f"{measured['knn_gflops']:.0f} GFLOP/s exact search", err=aside)
    print_table(["stage", "tasks", "RAM GB", "GPU GB", "disk GB", "time", "basis"],
                [[e.stage, e.tasks, f"{e.ram_gb:.2f}", f"{e.gpu_gb:.2f}", f"{e.disk_gb:.3f}", _duration(e.seconds),
                  e.basis] for e in estimates], err=aside)
    if json_out:
        write_json(json_out, {"measured": measured, "stages": [asdict(e) for e in estimates]})


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"
