"""``bitextmine embed``: text shards -> embedding set."""

from __future__ import annotations

from typing import Annotated

import typer

from bitextmine import defaults
from bitextmine.choices import Precision, TextErrors
from bitextmine.cli.logs import setup_logging
from bitextmine.cli.options import (
    Quiet,
    check_json_output,
    command,
    device_option,
    encoder_option,
    json_option,
    language_code,
    output_option,
)
from bitextmine.io.atomic import write_json

app = typer.Typer()


@command(app, epilog="""\b
Examples:
    bitextmine embed 'corpus/de.*.txt.gz' -o emb/de
    zcat cc.de.*.gz | bitextmine embed - -o emb/de-stdin
    bitextmine embed news.de.txt -o emb/labse --encoder hf:sentence-transformers/LaBSE
    bitextmine embed news.cs.txt -o emb/cs --encoder ckpt:models/add44 --lang ces""")
def embed(
    shards: Annotated[list[str], typer.Argument(
        metavar="SHARD", show_default=False,
        help="Text shards: paths, globs (quoted) or - for stdin. .gz, .zst and .xz are decompressed.")],
    output: output_option("Embedding set directory (created or resumed).", metavar="DIR"),
    encoder: encoder_option() = defaults.ENCODER,
    device: device_option("auto (every visible GPU, one worker each, else the CPU), cpu, cuda or cuda:N.")
    = defaults.DEVICE,
    precision: Annotated[Precision, typer.Option(
        help="Matmul precision: auto (bf16 on CPUs with native bf16, fp16 on GPU), fp32, bf16, fp16.")]
    = Precision(defaults.PRECISION),
    batch_tokens: Annotated[int | None, typer.Option(
        metavar="N", min=1, show_default=False,
        help=f"Padded tokens per batch (default: {defaults.BATCH_TOKENS} on CPU, "
             f"x{defaults.GPU_BATCH_TOKENS_FACTOR} on GPU).")] = None,
    max_tokens: Annotated[int, typer.Option(
        metavar="N", min=3, help="Longer sentences are truncated and counted in the manifest.")]
    = defaults.MAX_TOKENS,
    errors: Annotated[TextErrors, typer.Option(
        help="Invalid UTF-8 or NUL bytes: strict (an error naming file and line) or replace.")]
    = TextErrors(defaults.TEXT_ERRORS),
    lang: Annotated[str | None, typer.Option(
        metavar="LANG", show_default=False, callback=language_code,
        help="The text's language (ISO 639: ces or cs). A checkpoint trained with --recipe add-language "
             "embeds the languages its teacher knows with the teacher; other encoders embed all alike.")] = None,
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="Replace a set made with another encoder, settings or inputs (or write into a "
                            "directory of other files) instead of refusing.")] = False,
    json_out: json_option("The set's shards, rows and encoder as JSON (- for standard output).") = None,
    quiet: Quiet = False,
) -> None:
    """Embed text shards into an embedding set: fp16 .npy shards plus manifest.json.

    Row i of each .npy is line i of its shard; blank lines get zero rows. Re-running
    skips finished shards and re-embeds shards whose text changed.
    """
    import logging

    from bitextmine.embed import EmbedConfig, embed_shards
    from bitextmine.io.text import expand_shards

    setup_logging(quiet)
    cfg = EmbedConfig(encoder=encoder, device=device, precision=precision.value, batch_tokens=batch_tokens,
                      max_tokens=max_tokens, errors=errors.value, overwrite=overwrite, lang=lang)
    sources = expand_shards(shards)
    check_json_output(json_out, [*sources, output])
    emb_set = embed_shards(sources, output, cfg, progress=not quiet)
    summary = emb_set.summary()
    logging.getLogger("bitextmine").info("%s: %d shard(s), %d rows, %d blank, %d truncated", output,
                                         len(summary["shards"]), summary["rows"], summary["blank_lines"],
                                         summary["truncated_lines"])
    if json_out:
        write_json(json_out, summary)
