"""``bitextmine run`` and ``bitextmine plan``: the whole pipeline from one YAML file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer()


@app.command()
def run(
    pipeline: Annotated[Path, typer.Argument(help="pipeline.yaml (see examples/pipeline-*.yaml).",
                                             show_default=False)],
    launcher: Annotated[str, typer.Option(
        help="local (submitit local executor: a worker per visible GPU, or launcher.workers on CPU), slurm "
             "(submitit job arrays) or inline (this process, one task at a time).")] = "local",
    stage: Annotated[list[str] | None, typer.Option(
        help="Run only these stages (repeatable): embed, index, mine, filter.", show_default=False)] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No info messages.")] = False,
) -> None:
    """Run embed -> index -> mine -> filter over every shard and language pair of a
    pipeline file. Finished tasks are skipped, so a killed run resumes where it was."""
    from bitextmine.cli import setup_logging
    from bitextmine.errors import BitextmineError
    from bitextmine.launch.config import STAGES, load_config
    from bitextmine.launch.runner import final_outputs, run_pipeline

    setup_logging(quiet)
    cfg = load_config(pipeline)
    stages = tuple(stage) if stage else STAGES
    unknown = set(stages) - set(STAGES)
    if unknown:
        raise BitextmineError(f"unknown stage {sorted(unknown)[0]}: stages are {', '.join(STAGES)}")
    summaries = run_pipeline(cfg, launcher, tuple(s for s in STAGES if s in stages))
    typer.echo(f"{'stage':8} {'tasks':>6} {'ran':>5} {'skipped':>8} {'seconds':>9}  output")
    for s in summaries:
        where = str(Path(s.outputs[0]).parent) if s.outputs else "-"
        typer.echo(f"{s.stage:8} {s.tasks:6d} {s.ran:5d} {s.skipped:8d} {s.seconds:9.1f}  {where}")
    for path in final_outputs(cfg):
        if path.exists():
            typer.echo(f"pairs: {path} ({sum(1 for _ in path.open(encoding='utf-8'))} lines)")


@app.command()
def plan(
    pipeline: Annotated[Path, typer.Argument(help="pipeline.yaml.", show_default=False)],
    device: Annotated[str, typer.Option(help="Device the calibration run measures: auto, cpu or cuda:N.")]
    = "auto",
    json_out: Annotated[Path | None, typer.Option("--json", help="Also write the estimates as JSON.",
                                                  show_default=False)] = None,
) -> None:
    """Estimate RAM, GPU memory, disk and time per stage before anything runs, from the
    corpus line counts and throughputs measured by a quick calibration on a sample."""
    from dataclasses import asdict

    from bitextmine.io.atomic import write_json
    from bitextmine.launch.config import load_config
    from bitextmine.launch.plan import estimate

    cfg = load_config(pipeline)
    estimates, measured = estimate(cfg, device)
    typer.echo(f"measured on this machine: {measured['embed_sentences_per_second']:.0f} sentences/s embedding, "
               f"{measured['knn_gflops']:.0f} GFLOP/s exact search")
    typer.echo(f"{'stage':8} {'tasks':>6} {'RAM GB':>8} {'GPU GB':>7} {'disk GB':>8} {'time':>10}  basis")
    for e in estimates:
        typer.echo(f"{e.stage:8} {e.tasks:6d} {e.ram_gb:8.2f} {e.gpu_gb:7.2f} {e.disk_gb:8.3f} "
                   f"{_duration(e.seconds):>10}  {e.basis}")
    if json_out:
        write_json(json_out, {"measured": measured, "stages": [asdict(e) for e in estimates]})


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"
