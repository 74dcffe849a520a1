"""``bitextmine report``: mined pairs -> one static HTML page with plots."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer()


@app.command()
def report(
    mined: Annotated[str, typer.Argument(help="Mined pairs TSV (score<TAB>src<TAB>tgt...).", show_default=False)],
    output: Annotated[Path, typer.Option("--output", "-o", help="HTML file; the PNGs are written beside it.",
                                         show_default=False)],
    meta: Annotated[str | None, typer.Option(help="Mining sidecar JSON [default: MINED.json when present].",
                                             show_default=False)] = None,
    filter_report: Annotated[str | None, typer.Option(help="A filter report JSON, for the filter counts.",
                                                      show_default=False)] = None,
) -> None:
    """Write a mining report: score histogram, pairs kept against the threshold, sampled
    pairs per score band, filter counts and parameters. Opens without a server."""
    from bitextmine.evaluate.report import make_report

    written = make_report(mined, output, meta, filter_report)
    typer.echo("wrote " + ", ".join(str(p) for p in written), err=True)
