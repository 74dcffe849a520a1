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
    strict_option,
    target_precision_option,
)
from bitextmine.errors import warn
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
             "and recall, beside the no-gold estimate. Without it, the no-gold estimate `mine` uses.")] = None,
    target_precision: target_precision_option(
        "Recommend the threshold of best F1 at precision >= P (a share: 0.9 for 90%), as mine chooses it.")
    = defaults.TARGET_PRECISION,
    k: k_option() = defaults.K,
    score: score_option() = Score(defaults.SCORE),
    margin: MarginAlias = None,
    retrieval: retrieval_option() = Retrieval(defaults.RETRIEVAL),
    seed: Annotated[int, typer.Option(metavar="N", min=0, help="Seed of the split of the seed pairs.")] = defaults.SEED,
    json_out: json_option("The whole curve as JSON (- for standard output).") = None,
    device: device_option() = defaults.DEVICE,
    quiet: Quiet = False,
    strict: strict_option("the threshold's fallbacks: an estimate not to be trusted") = False,
) -> None:
    """Estimate precision and recall at each threshold for these pools; recommend one.

    Without --seeds: the no-gold estimate and the threshold `mine` would choose for these
    pools and target, with how sure the estimate is. With --seeds, known pairs are
    planted in the pools and mined back, and both recommendations are shown. Each
    method's failure modes are in the README.
    """
    import numpy as np

    from bitextmine.evaluate.calibrate import calibrate_sets
    from bitextmine.mine import MineConfig

    check_json_output(json_out, [*src, *tgt, seeds])
    setup_logging(quiet)
    cfg = MineConfig(k=k, score=score_of(score, margin), retrieval=retrieval.value, device=device,
                     target_precision=target_precision)
    result = calibrate_sets(src, tgt, cfg, seeds, seed, progress=not quiet)
    # said before anything is written: --strict makes a warning an error, with nothing written
    if result.no_gold is not None and result.no_gold.warning:
        warn(result.no_gold.warning)
    if result.warning:
        warn(result.warning)
    aside = json_to_stdout(json_out)  # the JSON holds stdout: the table goes to stderr too
    # standard output holds the table alone (piped: pure TSV); what is said about it goes to stderr
    typer.echo(f"method: {result.method}  ({cfg.score} score, k={k}, {cfg.retrieval} retrieval)", err=True)
    shown = np.unique(np.linspace(0, len(result.thresholds) - 1, min(TABLE_ROWS, len(result.thresholds))).astype(int))
    if len(shown):  # no curve where nothing was estimated (one text on both sides, too few sentences)
        print_table(["threshold", "precision %", "recall %", "pairs"],
                    [[f"{result.thresholds[i]:.4f}", f"{100 * result.precision[i]:.1f}",
                      "-" if np.isnan(result.recall[i]) else f"{100 * result.recall[i]:.1f}", int(result.pairs[i])]
                     for i in shown], err=aside)
    for calibration in filter(None, (result.no_gold, result)):
        typer.echo(recommendation_line(calibration, target_precision), err=True)
    for note in result.notes():  # what the recommendations above rest on
        typer.echo(note, err=True)
    if json_out:
        write_json(json_out, {**result.to_dict(), "target_precision": target_precision,
                              "config": {"k": k, "score": cfg.score, "retrieval": cfg.retrieval}})


def recommendation_line(result, target_precision: float) -> str:
    """The recommended threshold and how sure the estimate is of it, in one line."""
    name = "seeds" if result.method == "seeds" else "no gold"
    if result.recommended is None:
        return f"recommended threshold ({name}): none, keep nothing ({result.reason})"
    # printed as mine prints its threshold, so the two are read alike
    line = f"recommended threshold ({name}) for {100 * target_precision:g}% precision: {result.recommended:g}"
    if result.warning:
        return f"{line} (a fixed fallback: the estimate cannot be trusted here)"
    if result.recommended_precision is None:  # adapt's threshold for the pools it trained on
        return f"{line} ({result.reason})"
    sure = f"estimated precision {result.recommended_precision:.2f}"
    if result.interval:
        sure += f", 80% interval {result.interval[0]:.2f}-{result.interval[1]:.2f} from sampling alone"
    if result.measured_error and result.measured_error not in (result.caveat or ""):  # else it is a note below
        sure += f"; {result.measured_error}"
    if "best F1" in result.reason or "few" in result.reason:  # the target was not reached
        sure += f"; {result.reason}"
    written = result.written or {}
    if written.get("dropped_for_lengths") and written.get("estimated_precision") is not None:
        sure += (f"; mine writes {written['pairs']} pairs there, {written['dropped_for_lengths']} dropped for their "
                 f"lengths: estimated precision {written['estimated_precision']:.2f}")
    return f"{line} ({sure})"
