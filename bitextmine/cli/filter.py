"""``bitextmine filter``: mined pairs -> NMT-ready pairs, with a report of what went."""

from __future__ import annotations

from typing import Annotated

import typer

from bitextmine.cli.options import (
    Quiet,
    Strict,
    command,
    json_option,
    json_to_stdout,
    usage_error,
    with_filter_options,
)

app = typer.Typer()


@command(app, "filter")
@with_filter_options
def filter_command(
    input: Annotated[str, typer.Argument(
        metavar="PAIRS", show_default=False,
        help="Mined pairs TSV (score, src, tgt[, ids]) or src<TAB>tgt; - for stdin; .gz/.xz/.zst read.")],
    output: Annotated[str, typer.Option("--output", "-o", metavar="FILE", show_default=False,
                                        help="Kept pairs (same columns), or - for stdout.")],
    json_out: json_option("Per-rule counts as JSON (default: OUTPUT.filter.json; none when OUTPUT is -; - for "
                          "standard output).") = None,
    report: Annotated[str | None, typer.Option("--report", hidden=True, help="Old name of --json.")] = None,
    rejects: Annotated[str | None, typer.Option(metavar="FILE", show_default=False,
                                                help="Write each rejected pair with its reason (first column).")]
    = None,
    quiet: Quiet = False,
    strict: Strict = False,
    filter_cfg=None,
) -> None:
    """Filter mined pairs: length, ratio, language, copies, numbers, URLs, junk, duplicates.

    Each rule can be switched off (--skip RULE); a rejected pair is charged to the first
    rule it fails, and the report counts them per rule.

    \b
    Examples:
        bitextmine filter pairs.tsv -o clean.tsv --src-lang de --tgt-lang en --rejects rejects.tsv
        bitextmine filter pairs.tsv -o clean.tsv --skip numbers --dedup pair --max-score 1.5
    """
    from bitextmine.cli import setup_logging
    from bitextmine.filter.run import filter_pairs_to_files, report_document
    from bitextmine.io.atomic import refuse_overwriting_inputs, sidecar_path, write_json
    from bitextmine.io.lock import output_locks
    from bitextmine.io.pairs import read_pairs

    json_out = json_out or report
    if output == "-" and json_to_stdout(json_out):
        raise usage_error("the pairs already go to standard output: give --json a file", "--json")
    setup_logging(quiet)
    json_path = json_out if json_out is not None else sidecar_path(output, ".filter.json")
    outputs = [output, json_path, rejects]
    refuse_overwriting_inputs(outputs, [input])
    with output_locks(outputs):
        pairs = read_pairs(input)
        report = filter_pairs_to_files(pairs, filter_cfg, output, None, rejects)
        if json_path is not None:
            write_json(json_path, report_document(filter_cfg, report))
