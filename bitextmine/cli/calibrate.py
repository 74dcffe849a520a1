"""``bitextmine calibrate``: precision and recall by threshold; a recommended threshold."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bitextmine import defaults
from bitextmine.choices import Retrieval, Score
from bitextmine.cli.logs import setup_logging
from bitextmine.cli.options import (
    MarginAlias,
    Quiet,
    Strict,
    check_json_output,
    command,
    device_option,
    json_option,
    json_to_stdout,
    k_option,
    print_table,
    retrieval_option,
    score_of,
    score_option,
    target_precision_option,
)
from bitextmine.io.atomic import write_json

app = typer.Typer()
TABLE_ROWS = 15  # thresholds shown, evenly spread over the curve


@command(app, epilog="""\b
Examples:
    bitextmine calibrate --src emb/de --tgt emb/en --seeds known-pairs.tsv --target-precision 0.9
    bitextmine calibrate --src emb/de --tgt emb/en --json curve.json""")
def calibrate(
    src: Annotated[list[Path], typer.Option("--src", metavar="SET", show_default=False,
                                            help="Source embedding set (repeat for several).")],
    tgt: Annotated[list[Path], typer.Option("--tgt", metavar="SET", show_default=False,
                                            help="Target embedding set (repeat for several).")],
    seeds: Annotated[str | None, typer.Option(
        metavar="PAIRS", show_default=False,
        help="Known translation pairs, src<TAB>tgt (a few hundred): planted in the pools to measure precision "
             "and recall. Without it, each side mined against itself estimates the false pairs.")] = None,
    target_precision: target_precision_option(
        "Recommend the lowest threshold whose precision is at least P (a share: 0.9 for 90%).")
    = defaults.TARGET_PRECISION,
    k: k_option() = defaults.K,
    score: score_option() = Score(defaults.SCORE),
    margin: MarginAlias = None,
    retrieval: retrieval_option() = Retrieval(defaults.RETRIEVAL),
    seed: Annotated[int, typer.Option(metavar="N", help="Seed of the split of the seed pairs.")] = defaults.SEED,
    json_out: json_option("The whole curve as JSON (- for standard output).") = None,
    device: device_option() = defaults.DEVICE,
    quiet: Quiet = False,
    strict: Strict = False,
) -> None:
    """Estimate precision and recall at each threshold for these pools; recommend one.

    With --seeds, known pairs are planted in the pools and mined back; without, each
    side mined against itself estimates the false pairs. Each method's failure modes
    are in the README.
    """
    import numpy as np

    from bitextmine.evaluate.calibrate import calibrate_sets
    from bitextmine.mine import MineConfig

    check_json_output(json_out, [*src, *tgt, seeds])
    setup_logging(quiet)
    cfg = MineConfig(k=k, score=score_of(score, margin), retrieval=retrieval.value, device=device)
    result, recommended = calibrate_sets(src, tgt, cfg, target_precision, seeds, seed, progress=not quiet)
    aside = json_to_stdout(json_out)  # the JSON holds stdout: the table goes to stderr too
    # standard output holds the table alone (piped: pure TSV); what is said about it goes to stderr
    typer.echo(f"method: {result.method}  ({cfg.score} score, k={k}, {cfg.retrieval} retrieval)", err=True)
    for note in result.notes():
        typer.echo(note, err=True)
    if result.warning:
        typer.echo(f"cannot tell: {result.warning}; no estimate, no threshold recommended", err=True)
    else:
        shown = np.unique(np.linspace(0, len(result.thresholds) - 1,
                                      min(TABLE_ROWS, len(result.thresholds))).astype(int))
        print_table(["threshold", "precision %", "recall %", "pairs"],
                    [[f"{result.thresholds[i]:.4f}", f"{100 * result.precision[i]:.1f}",
                      "-" if np.isnan(result.recall[i]) else f"{100 * result.recall[i]:.1f}", int(result.pairs[i])]
                     for i in shown], err=aside)
        if recommended is None:
            typer.echo(f"no threshold reaches {100 * target_precision:g}% estimated precision", err=True)
        else:
            typer.echo(f"recommended threshold for {100 * target_precision:g}% precision: {recommended:.4f}",
                       err=True)
    if json_out:
        write_json(json_out, {**result.to_dict(), "recommended_threshold": recommended,
                              "target_precision": target_precision,
                              "config": {"k": k, "score": cfg.score, "retrieval": cfg.retrieval}})
