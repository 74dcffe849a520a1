"""``bitextmine score-pairs``: margin scores for an existing bitext, from monolingual pools."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bitextmine import defaults

app = typer.Typer()


@app.command("score-pairs")
def score_pairs_command(
    pairs: Annotated[str, typer.Argument(help="Bitext: src<TAB>tgt per line (extra columns ignored); - for stdin.",
                                         show_default=False)],
    src_pool: Annotated[list[Path], typer.Option(help="Embedding set(s) of source-language monolingual text.",
                                                 show_default=False)],
    tgt_pool: Annotated[list[Path], typer.Option(help="Embedding set(s) of target-language monolingual text.",
                                                 show_default=False)],
    output: Annotated[str, typer.Option("--output", "-o", help="score<TAB>src<TAB>tgt, input order; - for stdout.",
                                        show_default=False)],
    k: Annotated[int, typer.Option("-k", "--k", help="Neighbours for the margin.", min=1)] = defaults.K,
    margin: Annotated[str, typer.Option(help="ratio, distance or absolute (= cosine).")] = defaults.MARGIN,
    sort: Annotated[bool, typer.Option("--sort", help="Best first instead of input order.")] = False,
    device: Annotated[str, typer.Option(help="auto, cpu, cuda or cuda:N.")] = "auto",
) -> None:
    """Margin-score an existing bitext (e.g. a crawled corpus) with neighbourhoods drawn
    from large monolingual pools; the output goes straight into `bitextmine filter`."""
    import numpy as np

    from bitextmine.devices import resolve_devices
    from bitextmine.embed.corpus import EmbeddingCorpus
    from bitextmine.encoders import load_encoder
    from bitextmine.errors import BitextmineError
    from bitextmine.io.atomic import atomic_text_writer
    from bitextmine.io.text import read_lines
    from bitextmine.mine.score_pairs import score_bitext

    src_texts, tgt_texts = [], []
    for number, line in enumerate(read_lines(pairs), 1):
        if not line.strip():
            continue
        cols = line.split("\t")
        if len(cols) < 2:
            raise BitextmineError("expected src<TAB>tgt", path=pairs, line=number)
        src_texts.append(cols[0].strip())
        tgt_texts.append(cols[1].strip())
    src_corpus, tgt_corpus = EmbeddingCorpus.load(src_pool), EmbeddingCorpus.load(tgt_pool)
    device_name = resolve_devices(device)[0]
    encoder = load_encoder(src_corpus.encoder.name, device=device_name)
    scores = score_bitext(src_texts, tgt_texts, src_corpus, tgt_corpus, encoder, margin, k, device_name) \
        if src_texts else np.empty(0, np.float32)
    order = np.argsort(-scores, kind="stable") if sort else np.arange(len(scores))
    with atomic_text_writer(output) as out:
        for i in order.tolist():
            out.write(f"{scores[i]:.6f}\t{src_texts[i]}\t{tgt_texts[i]}\n")
