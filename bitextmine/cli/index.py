"""``bitextmine index`` and ``bitextmine index-merge``: FAISS indexes over embedding sets."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bitextmine import defaults
from bitextmine.choices import IndexDevice
from bitextmine.cli.logs import setup_logging
from bitextmine.cli.options import (
    Quiet,
    check_json_output,
    command,
    given_flags,
    json_option,
    output_option,
    usage_error,
)
from bitextmine.io.atomic import write_json

app = typer.Typer()


@command(app, epilog="""\b
Examples:
    bitextmine index emb/de -o idx/de
    bitextmine index emb/de --type IVF4096,PQ64x4fs -o idx/de
    bitextmine index emb/de-part2 --trained-from idx/de-part1 -o idx/de-part2""")
def index(
    embeddings: Annotated[list[Path], typer.Argument(
        metavar="SET", show_default=False, help="Embedding set directories, indexed as one database.")],
    output: output_option("Index directory to write.", metavar="DIR"),
    index_type: Annotated[str, typer.Option(
        "--type", metavar="FACTORY",
        help="auto (by database size: Flat up to 10k rows, then IVFn,PQmx4fs, one code per 8 dimensions) or a "
             "FAISS factory string such as IVF4096,PQ64x4fs.")] = defaults.INDEX_TYPE,
    nprobe: Annotated[int, typer.Option(metavar="N", min=1, help="IVF lists searched per query (recorded, used "
                                                                 "by mine).")] = defaults.NPROBE,
    train_sample: Annotated[int | None, typer.Option(
        metavar="N", min=1, show_default=False,
        help=f"Training vectors (default: {defaults.TRAIN_SAMPLES_PER_LIST} per IVF list).")] = None,
    seed: Annotated[int, typer.Option(metavar="N", min=0, help="Seed of the training sample.")] = defaults.SEED,
    trained_from: Annotated[Path | None, typer.Option(
        metavar="DIR", show_default=False,
        help="Reuse the training of this index (fill only), so that the results can be merged.")] = None,
    device: Annotated[IndexDevice, typer.Option(
        help="auto (faiss-gpu when installed and a GPU is visible) or cpu.")] = IndexDevice(defaults.DEVICE),
    json_out: json_option("The index's metadata (index.json) as JSON (- for standard output).") = None,
    quiet: Quiet = False,
    context: typer.Context = None,
) -> None:
    """Build a FAISS index (inner product) over embedding sets; blank lines are left out."""
    import logging

    from bitextmine.index import IndexConfig, build_index

    if trained_from is not None and given_flags(context, ("index_type", "train_sample", "seed")):
        raise usage_error("--trained-from takes the type, training sample and seed of the trained index: give "
                          "--type, --train-sample and --seed to train one", "--trained-from")
    setup_logging(quiet)
    cfg = IndexConfig(index_type=index_type, nprobe=nprobe, train_sample=train_sample, seed=seed,
                      device=device.value, trained_from=str(trained_from) if trained_from else None)
    check_json_output(json_out, [*embeddings, trained_from, output])
    meta = build_index([str(p) for p in embeddings], output, cfg, quiet=quiet)
    logging.getLogger("bitextmine").info("%s: %s, %d vectors, %.1f s", output, meta["factory"], meta["ntotal"],
                                         meta["seconds"])
    if json_out:
        write_json(json_out, meta)


@command(app, "index-merge", epilog="""\b
Example:
    bitextmine index-merge idx/de-part1 idx/de-part2 -o idx/de""")
def index_merge(
    indexes: Annotated[list[Path], typer.Argument(
        metavar="INDEX", show_default=False, help="IVF index directories filled from one trained index.")],
    output: output_option("Merged index directory.", metavar="DIR"),
    json_out: json_option("The merged index's metadata as JSON (- for standard output).") = None,
    quiet: Quiet = False,
) -> None:
    """Merge IVF indexes built with the same --trained-from into one."""
    import logging

    from bitextmine.index import merge_indexes

    setup_logging(quiet)
    check_json_output(json_out, [*indexes, output])
    meta = merge_indexes([str(p) for p in indexes], output)
    logging.getLogger("bitextmine").info("%s: %d vectors", output, meta["ntotal"])
    if json_out:
        write_json(json_out, meta)
