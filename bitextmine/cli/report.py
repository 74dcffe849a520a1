"""``bitextmine report``: mined pairs -> one static HTML page with plots."""

from __future__ import annotations

from typing import Annotated

import typer

from bitextmine.cli.logs import setup_logging
from bitextmine.cli.options import (
    Quiet,
    check_json_output,
    command,
    json_option,
    output_option,
    refuse_second_stdout,
)
from bitextmine.io.atomic import write_json

app = typer.Typer()


@command(app, epilog="""\b
Example:
    bitextmine report pairs.tsv -o report/index.html --filter-report clean.tsv.filter.json""")
def report(
    mined: Annotated[str, typer.Argument(metavar="PAIRS", show_default=False,
                                         help="Mined pairs TSV (score<TAB>src<TAB>tgt...).")],
    output: output_option("HTML file; the PNGs are written beside it (- for standard output: the page alone)."),
    meta: Annotated[str | None, typer.Option(metavar="FILE", show_default=False,
                                             help="Mining sidecar JSON (default: PAIRS.json when present).")] = None,
    filter_report: Annotated[str | None, typer.Option(metavar="FILE", show_default=False,
                                                      help="A filter report JSON, for the filter counts.")] = None,
    calibration: Annotated[str | None, typer.Option(
        metavar="FILE", show_default=False,
        help="A `bitextmine calibrate --json` file: plot its estimated precision and recall.")] = None,
    json_out: json_option("The files written and the figures' counts as JSON (- for standard output).") = None,
    quiet: Quiet = False,
) -> None:
    """Write a mining report: one HTML page that opens without a server.

    It holds the histogram of all candidate scores, the pairs kept and the estimated
    precision against the threshold (the threshold in use marked), sampled pairs per
    score band, the filter counts and the parameters.
    """
    import logging

    from bitextmine.evaluate.report import make_report, report_files, sidecar_read

    refuse_second_stdout(output, "the page already goes", "--json", json_out)
    check_json_output(json_out, [mined, sidecar_read(mined, meta), filter_report, calibration], report_files(output))
    setup_logging(quiet)
    written, counts = make_report(mined, output, meta, filter_report, calibration)
    logging.getLogger("bitextmine").info("wrote %s", ", ".join(str(p) for p in written))
    if json_out:
        write_json(json_out, {"input": mined, "output": output, "written": [str(p) for p in written], **counts})
