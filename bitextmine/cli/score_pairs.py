"""``bitextmine score-pairs``: margin scores for an existing bitext, from monolingual pools."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bitextmine import defaults
from bitextmine.choices import Score
from bitextmine.cli.logs import setup_logging
from bitextmine.cli.options import (
    MarginAlias,
    Quiet,
    check_json_output,
    command,
    device_option,
    json_option,
    k_option,
    output_option,
    refuse_second_stdout,
    score_of,
    score_option,
    usage_error,
)
from bitextmine.io.atomic import write_json

app = typer.Typer()
PoolAlias = Annotated[list[Path] | None, typer.Option(hidden=True, help="Old name of --src / --tgt.")]


@command(app, "score-pairs", epilog="""\b
Example:
    bitextmine score-pairs crawled.tsv --src emb/de --tgt emb/en -o scored.tsv""")
def score_pairs_command(
    pairs: Annotated[str, typer.Argument(
        metavar="PAIRS", show_default=False,
        help="Bitext: src<TAB>tgt per line, or mined score<TAB>src<TAB>tgt (the score is replaced); further "
             "columns are kept; - for stdin.")],
    output: output_option("score<TAB>src<TAB>tgt, input order; - for stdout."),
    src: Annotated[list[Path] | None, typer.Option(
        "--src", metavar="SET", show_default=False,
        help="Embedding set(s) of source-language monolingual text (the pool; repeat for several).")] = None,
    tgt: Annotated[list[Path] | None, typer.Option(
        "--tgt", metavar="SET", show_default=False,
        help="Embedding set(s) of target-language monolingual text.")] = None,
    src_pool: PoolAlias = None,
    tgt_pool: PoolAlias = None,
    k: k_option() = defaults.K,
    score: score_option() = Score(defaults.SCORE),
    margin: MarginAlias = None,
    sort: Annotated[bool, typer.Option("--sort", help="Best first instead of input order.")] = False,
    device: device_option() = defaults.DEVICE,
    json_out: json_option("The parameters and counts as JSON (- for standard output).") = None,
    quiet: Quiet = False,
) -> None:
    """Margin-score an existing bitext (a crawl, a bought corpus) against monolingual pools.

    Each pair's sides are scored with their neighbourhoods among the pools' distinct
    sentences, exactly as `bitextmine mine` scores the pair mined from the same sets (a
    sentence the pool holds keeps the pool's vector); the output goes straight into
    `bitextmine filter`.
    """
    from bitextmine.mine import MineConfig
    from bitextmine.mine.rescore import score_pairs_to_file

    src, tgt = src or src_pool, tgt or tgt_pool
    for name, given in (("--src", src), ("--tgt", tgt)):
        if not given:
            raise usage_error(f"give the {name[2:]} pool: {name} SET", name)
    refuse_second_stdout(output, "the pairs already go", "--json", json_out)
    check_json_output(json_out, [pairs, *src, *tgt], [output])
    setup_logging(quiet)
    cfg = MineConfig(k=k, score=score_of(score, margin), device=device)
    summary = score_pairs_to_file(pairs, src, tgt, cfg, output, sort=sort, progress=not quiet)
    if json_out:
        write_json(json_out, summary)
