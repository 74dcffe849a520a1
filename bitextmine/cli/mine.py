"""``bitextmine mine``: two embedding sets -> scored pairs (TSV)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bitextmine import defaults
from bitextmine.cli.filter import (
    Boilerplate,
    Dedup,
    MaxChars,
    MaxRatio,
    MaxScore,
    MaxTokens,
    MinChars,
    MinLetters,
    MinTokens,
    NearCopy,
    Skip,
    SrcLang,
    TgtLang,
    make_filter_config,
)

app = typer.Typer()


@app.command()
def mine(
    src: Annotated[list[Path], typer.Option("--src", help="Source embedding set (repeat for several).",
                                            show_default=False)],
    tgt: Annotated[list[Path], typer.Option("--tgt", help="Target embedding set (repeat for several).",
                                            show_default=False)],
    output: Annotated[str, typer.Option("--output", "-o", help="Pairs TSV (.gz/.xz/.zst compress), or - for "
                                                              "stdout.", show_default=False)],
    src_index: Annotated[Path | None, typer.Option(help="Index of the source side (from bitextmine index).")]
    = None,
    tgt_index: Annotated[Path | None, typer.Option(help="Index of the target side.")] = None,
    k: Annotated[int, typer.Option("-k", "--k", help="Neighbours per sentence for the margin.", min=1)]
    = defaults.K,
    margin: Annotated[str, typer.Option(help="ratio, distance or absolute (= cosine).")] = defaults.MARGIN,
    score: Annotated[str | None, typer.Option(
        help="cosine: score by plain cosine (same as --margin absolute).", show_default=False)] = None,
    retrieval: Annotated[str, typer.Option(
        help="max (greedy one-to-one over both directions), union, intersect, fwd or bwd.")] = defaults.RETRIEVAL,
    threshold: Annotated[float | None, typer.Option(
        help="Keep pairs scoring at least this [default: the encoder's own for the score type; "
             f"else ratio {defaults.THRESHOLDS['ratio']}, cosine {defaults.THRESHOLDS['cosine']}].",
        show_default=False)] = None,
    top_n: Annotated[int | None, typer.Option(help="Keep only the N best pairs.", min=0, show_default=False)]
    = None,
    nprobe: Annotated[int | None, typer.Option(help="IVF lists per query [default: the index's].", min=1,
                                               show_default=False)] = None,
    with_ids: Annotated[bool, typer.Option("--ids", help="Add src_id and tgt_id columns (shard:line).")] = False,
    meta: Annotated[Path | None, typer.Option(
        help="Where to write the JSON of parameters and counts [default: OUTPUT.json; none for stdout].",
        show_default=False)] = None,
    device: Annotated[str, typer.Option(help="Exact search on auto (a GPU when there is one), cpu or cuda:N.")]
    = "auto",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No info messages.")] = False,
    filter_pairs: Annotated[bool, typer.Option(
        "--filter", help="Apply `bitextmine filter` to the pairs before writing them (same options).")] = False,
    rejects: Annotated[str | None, typer.Option(help="With --filter: write rejected pairs with their reason.",
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
) -> None:
    """Mine sentence pairs between two embedding sets, scored by margin or cosine.

    Finds the k nearest neighbours in both directions (exactly, or through FAISS
    indexes), scores candidates, selects pairs and writes score<TAB>src<TAB>tgt, best
    first. Identical sentences are searched once; blank lines are never mined.
    """
    import logging

    from bitextmine.cli import setup_logging
    from bitextmine.mine import MineConfig
    from bitextmine.mine.output import PairsOutput, mine_to_files

    setup_logging(quiet)
    cfg = MineConfig(k=k, score=score or margin, retrieval=retrieval, threshold=threshold, top_n=top_n,
                     nprobe=nprobe, device=device)
    filter_cfg = make_filter_config(skip, min_chars, max_chars, min_tokens, max_side_tokens, max_ratio, min_letters,
                                    near_copy, boilerplate, dedup, max_score, src_lang, tgt_lang)
    target = PairsOutput(output=output, meta=None if meta is None else str(meta), with_ids=with_ids,
                         filter=filter_cfg if filter_pairs else None, rejects=rejects)
    mined = mine_to_files(src, tgt, cfg, target, src_index=src_index, tgt_index=tgt_index)
    logging.getLogger("bitextmine").info("%d pairs at %s >= %g -> %s", len(mined), cfg.score,
                                         mined.stats["parameters"]["threshold"], output)
