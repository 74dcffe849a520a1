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
        help="Keep pairs scoring at least this [default: chosen on these pools for --target-precision (margins); "
             "else the encoder's own, or ratio "
             f"{defaults.THRESHOLDS['ratio']}, cosine {defaults.THRESHOLDS['cosine']}].",
        show_default=False)] = None,
    target_precision: Annotated[float, typer.Option(
        help="Without --threshold: the estimated precision the chosen threshold must reach.", min=0.01, max=0.99)]
    = defaults.TARGET_PRECISION,
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
    from bitextmine.embed.corpus import EmbeddingCorpus
    from bitextmine.io.atomic import write_json
    from bitextmine.mine import MineConfig, mine_corpora, write_pairs

    setup_logging(quiet)
    cfg = MineConfig(k=k, score=score or margin, retrieval=retrieval, threshold=threshold, top_n=top_n,
                     nprobe=nprobe, device=device, target_precision=target_precision)
    src_corpus = EmbeddingCorpus.load(src, verify=True)
    tgt_corpus = EmbeddingCorpus.load(tgt, verify=True)
    filter_cfg = make_filter_config(skip, min_chars, max_chars, min_tokens, max_side_tokens, max_ratio, min_letters,
                                    near_copy, boilerplate, dedup, max_score, src_lang, tgt_lang)
    mined = mine_corpora(src_corpus, tgt_corpus, cfg, src_index=src_index, tgt_index=tgt_index)
    stats = {**mined.stats, "output": output}
    if filter_pairs:
        from bitextmine.filter.run import filter_pairs_to_files

        report = filter_pairs_to_files(mined.as_filter_pairs(with_ids), filter_cfg, output, None, rejects)
        stats["filter"] = {"config": {**filter_cfg.__dict__, "disabled": list(filter_cfg.disabled)},
                           **report.to_dict()}
    else:
        write_pairs(mined, output, with_ids=with_ids)
    meta_path = meta if meta is not None else (None if output == "-" else Path(output + ".json"))
    if meta_path is not None:
        write_json(meta_path, stats)
    logging.getLogger("bitextmine").info("%d pairs at %s >= %g -> %s", len(mined), cfg.score,
                                         mined.stats["parameters"]["threshold"], output)
