"""``bitextmine index`` and ``bitextmine index-merge``: FAISS indexes over embedding sets."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bitextmine import defaults

app = typer.Typer()


@app.command()
def index(
    embeddings: Annotated[list[Path], typer.Argument(help="Embedding set directories, indexed as one database.",
                                                     show_default=False)],
    output: Annotated[Path, typer.Option("--output", "-o", help="Index directory to write.", show_default=False)],
    index_type: Annotated[str, typer.Option(
        "--type", help="auto (by database size: Flat up to 10k rows, then OPQ64,IVFn,PQ64) or a FAISS factory "
                       "string such as OPQ64,IVF4096,PQ64.")] = "auto",
    nprobe: Annotated[int, typer.Option(help="IVF lists searched per query (recorded, used by mine).", min=1)]
    = defaults.NPROBE,
    train_sample: Annotated[int | None, typer.Option(
        help=f"Training vectors [default: {defaults.TRAIN_SAMPLES_PER_LIST} per IVF list].", min=1,
        show_default=False)] = None,
    seed: Annotated[int, typer.Option(help="Seed of the training sample.")] = defaults.SEED,
    trained_from: Annotated[Path | None, typer.Option(
        help="Reuse the training of this index (fill only), so that the results can be merged.")] = None,
    device: Annotated[str, typer.Option(help="auto (faiss-gpu when installed and a GPU is visible) or cpu.")]
    = "auto",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No info messages.")] = False,
) -> None:
    """Build a FAISS index (inner product) over embedding sets; blank lines are left out."""
    from bitextmine.cli import setup_logging
    from bitextmine.index import IndexConfig, build_index

    setup_logging(quiet)
    cfg = IndexConfig(index_type=index_type, nprobe=nprobe, train_sample=train_sample, seed=seed,
                      device=device, trained_from=str(trained_from) if trained_from else None)
    meta = build_index([str(p) for p in embeddings], output, cfg)
    import logging

    logging.getLogger("bitextmine").info("%s: %s, %d vectors, %.1f s", output, meta["factory"], meta["ntotal"],
                                         meta["seconds"])


@app.command("index-merge")
def index_merge(
    indexes: Annotated[list[Path], typer.Argument(help="IVF index directories filled from one trained index.",
                                                  show_default=False)],
    output: Annotated[Path, typer.Option("--output", "-o", help="Merged index directory.", show_default=False)],
) -> None:
    """Merge IVF indexes built with the same --trained-from into one."""
    from bitextmine.index import merge_indexes

    meta = merge_indexes([str(p) for p in indexes], output)
    typer.echo(f"{output}: {meta['ntotal']} vectors", err=True)
