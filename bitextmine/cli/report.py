"""``bitextmine report``: mined pairs -> one static HTML page with plots."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bitextmine.cli.options import Quiet, command

app = typer.Typer()


@command(app)
def report(
    mined: Annotated[str, typer.Argument(metavar="PAIRS", show_default=False,
                                         help="Mined pairs TSV (score<TAB>src<TAB>tgt...).")],
    output: Annotated[Path, typer.Option("--output", "-o", metavar="FILE", show_default=False,
                                         help="HTML file; the PNGs are written beside it.")],
    meta: Annotated[str | None, typer.Option(metavar="FILE", show_default=False,
                                             help="Mining sidecar JSON (default: PAIRS.json when present).")] = None,
    filter_report: Annotated[str | None, typer.Option(metavar="FILE", show_default=False,
                                                      help="A filter report JSON, for the filter counts.")] = None,
    quiet: Quiet = False,
) -> None:
    """Write a mining report: one HTML page that opens without a server.

    It holds the score histogram, the pairs kept against the threshold, sampled pairs
    per score band, the filter counts and the parameters.

    \b
    Example:
        bitextmine report pairs.tsv -o report/index.html --filter-report clean.tsv.filter.json
    """
    import logging

    from bitextmine.cli import setup_logging
    from bitextmine.evaluate.report import make_report

    setup_logging(quiet)
    written = make_report(mined, output, meta, filter_report)
    logging.getLogger("bitextmine").info("wrote %s", ", ".join(str(p) for p in written))
