"""``bitextmine score-pairs``: margin scores for an existing bitext, from monolingual pools."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bitextmine import defaults
from bitextmine.choices import Score
from bitextmine.cli.options import MarginAlias, Quiet, command, device_option, k_option, score_of, score_option

app = typer.Typer()


@command(app, "score-pairs")
def score_pairs_command(
    pairs: Annotated[str, typer.Argument(
        metavar="PAIRS", show_default=False,
        help="Bitext: src<TAB>tgt per line, or mined score<TAB>src<TAB>tgt (the score is replaced); further "
             "columns are kept; - for stdin.")],
    src_pool: Annotated[list[Path], typer.Option(metavar="SET", show_default=False,
                                                 help="Embedding set(s) of source-language monolingual text.")],
    tgt_pool: Annotated[list[Path], typer.Option(metavar="SET", show_default=False,
                                                 help="Embedding set(s) of target-language monolingual text.")],
    output: Annotated[str, typer.Option("--output", "-o", metavar="FILE", show_default=False,
                                        help="score<TAB>src<TAB>tgt, input order; - for stdout.")],
    k: k_option() = defaults.K,
    score: score_option() = Score(defaults.SCORE),
    margin: MarginAlias = None,
    sort: Annotated[bool, typer.Option("--sort", help="Best first instead of input order.")] = False,
    device: device_option() = defaults.DEVICE,
    quiet: Quiet = False,
) -> None:
    """Margin-score an existing bitext (a crawl, a bought corpus) against monolingual pools.

    Each pair's sides are embedded with the pools' encoder and their neighbourhoods drawn
    from the pools, exactly as `bitextmine mine` scores; the output goes straight into
    `bitextmine filter`.

    \b
    Example:
        bitextmine score-pairs crawled.tsv --src-pool emb/de --tgt-pool emb/en -o scored.tsv
    """
    from bitextmine.cli import setup_logging
    from bitextmine.io.atomic import atomic_text_writer
    from bitextmine.mine import MineConfig
    from bitextmine.mine.rescore import score_bitext_file

    setup_logging(quiet)
    cfg = MineConfig(k=k, score=score_of(score, margin), device=device)
    scored = score_bitext_file(pairs, src_pool, tgt_pool, cfg, progress=not quiet)
    if sort:
        scored.sort(key=lambda p: -p.score)
    with atomic_text_writer(output) as out:
        for pair in scored:
            out.write("\t".join(pair.fields()) + "\n")
