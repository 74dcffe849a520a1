"""``bitextmine mine``: two embedding sets -> scored pairs (TSV)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bitextmine import defaults

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
                     nprobe=nprobe, device=device)
    src_corpus = EmbeddingCorpus.load(src, verify=True)
    tgt_corpus = EmbeddingCorpus.load(tgt, verify=True)
    mined = mine_corpora(src_corpus, tgt_corpus, cfg, src_index=src_index, tgt_index=tgt_index)
    write_pairs(mined, output, with_ids=with_ids)
    meta_path = meta if meta is not None else (None if output == "-" else Path(output + ".json"))
    if meta_path is not None:
        write_json(meta_path, {**mined.stats, "output": output})
    logging.getLogger("bitextmine").info("%d pairs at %s >= %g -> %s", len(mined), cfg.score,
                                         mined.stats["parameters"]["threshold"], output)
