"""``bitextmine filter``: mined pairs -> NMT-ready pairs, with a report of what went."""

from __future__ import annotations

from typing import Annotated

import typer

from bitextmine.cli.filter_options import with_filter_options
from bitextmine.cli.logs import setup_logging
from bitextmine.cli.options import (
    Quiet,
    command,
    json_option,
    named,
    output_option,
    refuse_second_stdout,
    strict_option,
)

app = typer.Typer()


@command(app, "filter", epilog="""\b
Examples:
    bitextmine filter pairs.tsv -o clean.tsv --src-lang de --tgt-lang en --rejects rejects.tsv
    bitextmine filter pairs.tsv -o clean.tsv --skip numbers --dedup pair --max-score 0.5""")
@with_filter_options
def filter_command(
    input: Annotated[str, typer.Argument(
        metavar="PAIRS", show_default=False,
        help="Mined pairs TSV (score, src, tgt[, ids]) or src<TAB>tgt; - for stdin; .gz/.xz/.zst read.")],
    output: output_option("Kept pairs (same columns), or - for stdout."),
    json_out: json_option("Per-rule counts as JSON (default: OUTPUT.filter.json; none when OUTPUT is -; - for "
                          "standard output).") = None,
    report: Annotated[str | None, typer.Option("--report", hidden=True, help="Old name of --json.")] = None,
    rejects: Annotated[str | None, typer.Option(metavar="FILE", show_default=False, callback=named,
                                                help="Write each rejected pair with its reason (first column).")]
    = None,
    quiet: Quiet = False,
    strict: strict_option("languages that look swapped, ...") = False,
    filter_cfg=None,
) -> None:
    """Filter mined pairs: length, ratio, language, copies, numbers, URLs, junk, duplicates.

    Each rule can be switched off (--skip RULE); a rejected pair is charged to the first
    rule it fails, and the report counts them per rule.
    """
    from bitextmine.filter.run import filter_file

    json_out = json_out or report
    refuse_second_stdout(output, "the pairs already go", "--json", json_out)
    refuse_second_stdout(output, "the pairs already go", "--rejects", rejects)
    setup_logging(quiet)
    filter_file(input, filter_cfg, output, json_out, rejects)
