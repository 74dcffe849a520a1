"""``bitextmine prepare``: documents (text, JSONL, Parquet, WARC/WET) -> sentence shards with provenance."""

from __future__ import annotations

from typing import Annotated

import typer

from bitextmine import defaults
from bitextmine.choices import InputErrors, InputFormat, PrepareRule, TextDocuments
from bitextmine.cli.logs import setup_logging
from bitextmine.cli.options import (
    Quiet,
    check_json_output,
    command,
    finite,
    json_option,
    language_code,
    output_option,
    usage_error,
)

app = typer.Typer()
INPUT = "Input"
RULES = "Rules"


@command(app, epilog="""\b
Examples:
    bitextmine prepare 'crawl/de.*.jsonl.gz' -o prep/de --lang de
    bitextmine prepare CC-MAIN-*.warc.wet.gz -o prep/cs --lang ces --errors skip
    bitextmine prepare news.parquet -o prep/zh --lang zho --column body --id-field doc_id
    zcat books.txt.gz | bitextmine prepare - -o prep/fr --lang fr --docs paragraph""")
def prepare(
    inputs: Annotated[list[str], typer.Argument(
        metavar="INPUT", show_default=False,
        help="Documents: paths, globs (quoted) or - for stdin. .gz, .zst and .xz are decompressed.")],
    output: output_option("Directory of sentence shards (created, or resumed).", metavar="DIR"),
    lang: Annotated[str, typer.Option(metavar="LANG", show_default=False, callback=language_code,
                                      help="The language to keep (ISO 639: de or deu).")],
    format: Annotated[InputFormat, typer.Option(
        rich_help_panel=INPUT, help="auto (by the file name: .jsonl/.json/.ndjson, .parquet, .warc/.wet; "
                                    "else text), text, jsonl, parquet or warc.")]
    = InputFormat(defaults.PREPARE_FORMAT),
    docs: Annotated[TextDocuments, typer.Option(
        "--docs", rich_help_panel=INPUT, help="Plain text: a document per line, or per paragraph "
                                              "(lines between blank lines).")]
    = TextDocuments(defaults.PREPARE_TEXT_DOCUMENTS),
    field: Annotated[str, typer.Option("--field", "--column", metavar="NAME", rich_help_panel=INPUT,
                                       help="The JSONL field (Parquet column) that holds the text.")]
    = defaults.PREPARE_TEXT_FIELD,
    id_field: Annotated[str, typer.Option(metavar="NAME", rich_help_panel=INPUT,
                                          help="The field (column) of the document id, when there is one.")]
    = defaults.PREPARE_ID_FIELD,
    url_field: Annotated[str, typer.Option(metavar="NAME", rich_help_panel=INPUT,
                                           help="The field (column) of the document URL, when there is one.")]
    = defaults.PREPARE_URL_FIELD,
    errors: Annotated[InputErrors, typer.Option(
        rich_help_panel=INPUT, help="Bad input (malformed JSON, invalid UTF-8, a truncated record, a missing "
                                    "column): strict (an error naming file and line) or skip (counted).")]
    = InputErrors(defaults.PREPARE_ERRORS),
    min_chars: Annotated[int, typer.Option(metavar="N", min=0, rich_help_panel=RULES,
                                           help="Shortest sentence, in characters (CJK: three each).")]
    = defaults.PREPARE_MIN_CHARS,
    max_chars: Annotated[int, typer.Option(metavar="N", min=1, rich_help_panel=RULES,
                                           help="Longest sentence, in characters (CJK: three each).")]
    = defaults.PREPARE_MAX_CHARS,
    min_letters: Annotated[float, typer.Option(metavar="X", min=0.0, max=1.0, callback=finite,
                                               rich_help_panel=RULES, help="Smallest share of letters.")]
    = defaults.PREPARE_MIN_LETTER_SHARE,
    min_lang_prob: Annotated[float, typer.Option(
        metavar="P", min=0.0, max=1.0, callback=finite, rich_help_panel=RULES,
        help="Keep a sentence when language ID gives LANG at least this probability.")]
    = defaults.PREPARE_MIN_LANG_PROB,
    skip: Annotated[list[PrepareRule] | None, typer.Option(
        "--skip", metavar="RULE", rich_help_panel=RULES, show_default=False,
        help="Switch a rule off (repeatable): " + ", ".join(r.value for r in PrepareRule) + ".")] = None,
    shard_lines: Annotated[int, typer.Option(
        metavar="N", min=1, help="A shard is closed once it holds this many sentences (whole documents).")]
    = defaults.PREPARE_SHARD_LINES,
    workers: Annotated[int | None, typer.Option(metavar="N", min=1, show_default=False,
                                                help="Worker processes (default: one per CPU).")] = None,
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="Replace what DIR holds from other inputs or settings instead of refusing.")] = False,
    json_out: json_option("The counts per rule as JSON (also in DIR/prepare.json; - for standard output).") = None,
    quiet: Quiet = False,
) -> None:
    """Split documents into sentences of one language, clean and deduplicated, for embed.

    Normalises Unicode and white space, splits sentences, drops those too short or
    long, without letters, boilerplate, not in LANG, or written before in the run, and
    writes shards of one sentence a line, each with a provenance sidecar (input file,
    document id, URL, sentence number). Re-running resumes.

    """
    import logging

    from bitextmine.errors import BitextmineError
    from bitextmine.io.atomic import write_json
    from bitextmine.io.text import expand_shards
    from bitextmine.prepare import PrepareConfig, prepare_inputs

    setup_logging(quiet)
    try:
        cfg = PrepareConfig(lang=lang, format=format.value, text_documents=docs.value, field=field,
                            id_field=id_field, url_field=url_field, errors=errors.value, min_chars=min_chars,
                            max_chars=max_chars, min_letters=min_letters, min_lang_prob=min_lang_prob,
                            skip=tuple(rule.value for rule in skip or ()), shard_lines=shard_lines, workers=workers)
    except BitextmineError as e:
        raise usage_error(e.message) from None
    shards = expand_shards(inputs, verb="prepare")
    check_json_output(json_out, [*shards, output])
    report = prepare_inputs(shards, output, cfg, overwrite=overwrite, progress=not quiet)
    if json_out:
        write_json(json_out, report)
    dropped = {rule: n for rule, n in report["rejected"].items() if n}
    logging.getLogger("bitextmine").info(
        "%s: %d documents, %d sentences, %d kept in %d shard(s); dropped: %s", output, report["documents"],
        report["sentences"], report["kept"], len(report["shards"]),
        ", ".join(f"{rule} {n}" for rule, n in dropped.items()) or "none")
