"""``bitextmine filter``: mined pairs -> NMT-ready pairs, with a report of what went."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bitextmine import defaults
from bitextmine.filter import DEDUP_MODES, RULES, FilterConfig

app = typer.Typer()

# The filter options, shared with `bitextmine mine --filter` so one pipe can do both.
Skip = Annotated[list[str] | None, typer.Option(
    "--skip", help=f"Switch a rule off (repeatable): {', '.join(RULES)}.", show_default=False)]
MinChars = Annotated[int, typer.Option(help="Shortest side, in characters.")]
MaxChars = Annotated[int, typer.Option(help="Longest side, in characters.")]
MinTokens = Annotated[int, typer.Option(help="Fewest tokens per side (CJK/Thai: characters).")]
MaxTokens = Annotated[int, typer.Option("--max-side-tokens", help="Most tokens per side.")]
MaxRatio = Annotated[float, typer.Option(help="Longest/shortest side, in UTF-8 bytes.")]
MinLetters = Annotated[float, typer.Option(help="Smallest share of letters per side.")]
NearCopy = Annotated[float, typer.Option(help="Word overlap (Jaccard) that makes the sides near copies.")]
Boilerplate = Annotated[int, typer.Option(help="A side seen this many times in the input is boilerplate.")]
Dedup = Annotated[str, typer.Option(help="Deduplicate on normalised text by: pair, src, tgt, or both sides.")]
MaxScore = Annotated[float | None, typer.Option(
    help="Score cap: drop suspiciously high scores (mostly duplicates) [default: off].", show_default=False)]
SrcLang = Annotated[str | None, typer.Option(help="Source language (ISO 639-1 or -3); turns language ID on.",
                                             show_default=False)]
TgtLang = Annotated[str | None, typer.Option(help="Target language; turns language ID on.", show_default=False)]


def make_filter_config(skip, min_chars, max_chars, min_tokens, max_side_tokens, max_ratio, min_letters, near_copy,
                       boilerplate, dedup, max_score, src_lang, tgt_lang) -> FilterConfig:
    if dedup not in DEDUP_MODES:
        raise typer.BadParameter(f"use one of {', '.join(DEDUP_MODES)}", param_hint="--dedup")
    return FilterConfig(disabled=tuple(skip or ()), min_chars=min_chars, max_chars=max_chars, min_tokens=min_tokens,
                        max_tokens=max_side_tokens, max_ratio=max_ratio, min_letters=min_letters,
                        near_copy=near_copy, boilerplate_count=boilerplate, dedup=dedup, max_score=max_score,
                        src_lang=src_lang, tgt_lang=tgt_lang)


@app.command("filter")
def filter_command(
    input: Annotated[str, typer.Argument(help="Mined pairs TSV (score, src, tgt[, ids]) or src<TAB>tgt; - for "
                                              "stdin; .gz/.xz/.zst read.", show_default=False)],
    output: Annotated[str, typer.Option("--output", "-o", help="Kept pairs (same columns), or - for stdout.",
                                        show_default=False)],
    report: Annotated[Path | None, typer.Option(help="JSON report: per-rule counts [default: OUTPUT.filter.json; "
                                                     "none for stdout].", show_default=False)] = None,
    rejects: Annotated[str | None, typer.Option(help="Write each rejected pair with its reason (first column).",
                                                show_default=False)] = None,
    skip: Skip = None,
    min_chars: MinChars = defaults.FILTER_MIN_CHARS,
    max_chars: MaxChars = defaults.FILTER_MAX_CHARS,
    min_tokens: MinTokens = defaults.FILTER_MIN_TOKENS,
    max_side_tokens: MaxTokens = defaults.FILTER_MAX_TOKENS,
    max_ratio: MaxRatio = defaults.FILTER_MAX_LENGTH_RATIO,
    min_letters: MinLetters = defaults.FILTER_MIN_LETTER_SHARE,
    near_copy: NearCopy = defaults.FILTER_NEAR_COPY_JACCARD,
    boilerplate: Boilerplate = defaults.FILTER_BOILERPLATE_COUNT,
    dedup: Dedup = "both",
    max_score: MaxScore = None,
    src_lang: SrcLang = None,
    tgt_lang: TgtLang = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No summary on stderr.")] = False,
) -> None:
    """Filter mined pairs: length, length ratio, language ID, copies, numbers, URLs,
    letters, boilerplate, duplicates and a score cap, each switchable (--skip RULE)."""
    from bitextmine.cli import setup_logging
    from bitextmine.filter import read_pairs
    from bitextmine.filter.run import filter_pairs_to_files
    from bitextmine.io.atomic import refuse_overwriting_inputs, sidecar_path
    from bitextmine.io.lock import output_locks
    from bitextmine.io.text import read_lines

    setup_logging(quiet)
    cfg = make_filter_config(skip, min_chars, max_chars, min_tokens, max_side_tokens, max_ratio, min_letters,
                             near_copy, boilerplate, dedup, max_score, src_lang, tgt_lang)
    report_path = report if report is not None else sidecar_path(output, ".filter.json")
    outputs = [output, report_path, rejects]
    refuse_overwriting_inputs(outputs, [input])
    with output_locks(outputs):
        pairs = read_pairs(read_lines(input), input)
        filter_pairs_to_files(pairs, cfg, output, report_path, rejects)
