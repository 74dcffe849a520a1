"""``bitextmine mine``: two embedding sets -> scored pairs (TSV)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bitextmine import defaults
from bitextmine.choices import Retrieval, Score
from bitextmine.cli.filter_options import FILTER_PANEL, with_filter_options
from bitextmine.cli.logs import setup_logging
from bitextmine.cli.options import (
    MarginAlias,
    Quiet,
    command,
    device_option,
    finite,
    json_option,
    k_option,
    length_ratio_value,
    named,
    output_option,
    refuse_second_stdout,
    retrieval_option,
    score_of,
    score_option,
    strict_option,
    target_precision_option,
    usage_error,
)

app = typer.Typer()
SEARCH = "Search and scoring"


@command(app, epilog="""\b
Examples:
    bitextmine mine --src emb/de --tgt emb/en -o pairs.tsv
    bitextmine mine --src emb/de --tgt emb/en --src-index idx/de --tgt-index idx/en -o - | gzip > p.tsv.gz
    bitextmine mine --src emb/de --tgt emb/en --score cosine --threshold 0.8 --retrieval intersect -o p.tsv
    bitextmine mine --src emb/de --tgt emb/en -o clean.tsv --filter --src-lang de --tgt-lang en""")
@with_filter_options
def mine(
    src: Annotated[list[Path], typer.Option("--src", metavar="SET", show_default=False,
                                            help="Source embedding set (repeat for several).")],
    tgt: Annotated[list[Path], typer.Option("--tgt", metavar="SET", show_default=False,
                                            help="Target embedding set (repeat for several).")],
    output: output_option("Pairs TSV (.gz/.xz/.zst compress), or - for stdout."),
    src_index: Annotated[Path | None, typer.Option(
        metavar="DIR", rich_help_panel=SEARCH, show_default=False,
        help="Index of the source side (from bitextmine index).")] = None,
    tgt_index: Annotated[Path | None, typer.Option(metavar="DIR", rich_help_panel=SEARCH, show_default=False,
                                                   help="Index of the target side.")] = None,
    k: k_option(rich_help_panel=SEARCH) = defaults.K,
    score: score_option(rich_help_panel=SEARCH) = Score(defaults.SCORE),
    margin: MarginAlias = None,
    retrieval: retrieval_option(rich_help_panel=SEARCH) = Retrieval(defaults.RETRIEVAL),
    threshold: Annotated[float | None, typer.Option(
        metavar="X", callback=finite, rich_help_panel=SEARCH, show_default=False,
        help="Keep pairs scoring at least this (default: chosen on these pools for --target-precision; with no "
             "estimate, the encoder's own for the score, else distance "
             f"{defaults.THRESHOLDS['distance']}, ratio {defaults.THRESHOLDS['ratio']}, cosine "
             f"{defaults.THRESHOLDS['cosine']}).")] = None,
    target_precision: target_precision_option(
        "Without --threshold: the estimated precision the chosen threshold must reach (a share).",
        rich_help_panel=SEARCH) = defaults.TARGET_PRECISION,
    top_n: Annotated[int | None, typer.Option(metavar="N", min=0, rich_help_panel=SEARCH, show_default=False,
                                              help="Keep only the N best pairs.")] = None,
    length_ratio: Annotated[float, typer.Option(
        metavar="X", callback=length_ratio_value, rich_help_panel=SEARCH,
        help="Drop kept pairs whose length ratio is more than X times off the ratio typical of the kept pairs "
             f"(and by more than {defaults.MINE_LENGTH_SLACK} characters): a margin cannot tell a translation "
             "from a partly parallel pair, such as a headline and the sentence that expands it. 0 keeps "
             "them.")] = defaults.MINE_LENGTH_RATIO,
    nprobe: Annotated[int | None, typer.Option(metavar="N", min=1, rich_help_panel=SEARCH, show_default=False,
                                               help="IVF lists per query (default: the index's).")] = None,
    exact_margins: Annotated[bool, typer.Option(
        "--exact-margins/--index-margins", rich_help_panel=SEARCH,
        help="Through indexes: search the rows of kept pairs exactly, so every margin written is exact "
             "(an index can miss neighbours, which raises margins); --index-margins skips it.")]
    = defaults.EXACT_MARGINS,
    device: device_option("Exact search on auto (a GPU when there is one), cpu or cuda:N.",
                          rich_help_panel=SEARCH) = defaults.DEVICE,
    with_ids: Annotated[bool, typer.Option("--ids", help="Add src_id and tgt_id columns (shard:line).")] = False,
    with_docs: Annotated[bool, typer.Option(
        "--docs", help="Add src_doc and tgt_doc columns after the ids: each sentence's document (its URL, else "
                       "input:id), from the provenance sidecars of `bitextmine prepare`.")] = False,
    json_out: json_option("The parameters and counts as JSON (default: OUTPUT.json; none when OUTPUT is -; "
                          "- for standard output).") = None,
    meta: Annotated[str | None, typer.Option("--meta", hidden=True, help="Old name of --json.")] = None,
    quiet: Quiet = False,
    strict: strict_option("the threshold's fallbacks, and with --filter languages that look swapped") = False,
    filter_pairs: Annotated[bool, typer.Option(
        "--filter", rich_help_panel=FILTER_PANEL,
        help="Apply `bitextmine filter` to the pairs before writing them (the rules below).")] = False,
    rejects: Annotated[str | None, typer.Option(
        metavar="FILE", rich_help_panel=FILTER_PANEL, show_default=False, callback=named,
        help="With --filter: write rejected pairs with their reason.")] = None,
    filter_cfg=None,
    filter_given=(),
) -> None:
    """Mine sentence pairs between two embedding sets, scored by margin or cosine.

    Finds the k nearest neighbours in both directions (exactly, or through FAISS
    indexes), scores candidates, selects pairs and writes score<TAB>src<TAB>tgt, best
    first. Identical sentences are searched once; blank lines are never mined.
    """
    import logging

    from bitextmine.mine import MineConfig
    from bitextmine.mine.output import PairsOutput, mine_to_files

    json_out = json_out or meta
    needing_filter = [*filter_given, *(["--rejects"] if rejects is not None else [])]
    if needing_filter and not filter_pairs:  # the filter's options are for --filter: without it they would be ignored
        raise usage_error(f"{needing_filter[0]} needs --filter", needing_filter[0])
    refuse_second_stdout(output, "the pairs already go", "--json", json_out)
    refuse_second_stdout(output, "the pairs already go", "--rejects", rejects)
    setup_logging(quiet)
    cfg = MineConfig(k=k, score=score_of(score, margin), retrieval=retrieval.value, threshold=threshold,
                     top_n=top_n, nprobe=nprobe, device=device, target_precision=target_precision,
                     exact_margins=exact_margins, length_ratio=length_ratio)
    target = PairsOutput(output=output, meta=json_out, with_ids=with_ids, with_docs=with_docs,
                         filter=filter_cfg if filter_pairs else None, rejects=rejects)
    mined = mine_to_files(src, tgt, cfg, target, src_index=src_index, tgt_index=tgt_index, progress=not quiet)
    threshold = mined.stats["parameters"]["threshold"]
    written = mined.stats.get("output_rows", len(mined))
    dropped = f" ({len(mined)} mined, {len(mined) - written} rejected by the filter)" if written != len(mined) else ""
    logging.getLogger("bitextmine").info("%d pairs at %s >= %s -> %s%s", written, cfg.score,
                                         "none" if threshold is None else f"{threshold:g}", output, dropped)
