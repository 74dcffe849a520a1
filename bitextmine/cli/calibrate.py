"""``bitextmine calibrate``: precision and recall by threshold; a recommended threshold."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bitextmine import defaults

app = typer.Typer()


@app.command()
def calibrate(
    src: Annotated[list[Path], typer.Option("--src", help="Source embedding set (repeat for several).",
                                            show_default=False)],
    tgt: Annotated[list[Path], typer.Option("--tgt", help="Target embedding set (repeat for several).",
                                            show_default=False)],
    seeds: Annotated[str | None, typer.Option(
        help="Known translation pairs, src<TAB>tgt (a few hundred): planted in the pools to measure precision "
             "and recall. Without it, each side mined against itself estimates the false pairs.",
        show_default=False)] = None,
    target_precision: Annotated[float, typer.Option(help="Recommend the lowest threshold with this precision.")]
    = 0.9,
    k: Annotated[int, typer.Option("-k", "--k", help="Neighbours for the margin.", min=1)] = defaults.K,
    margin: Annotated[str, typer.Option(help="ratio, distance or absolute (= cosine).")] = defaults.MARGIN,
    retrieval: Annotated[str, typer.Option(help="max, union, intersect, fwd or bwd.")] = defaults.RETRIEVAL,
    seed: Annotated[int, typer.Option(help="Seed of the split of the seed pairs.")] = defaults.SEED,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the whole curve as JSON.",
                                                  show_default=False)] = None,
    device: Annotated[str, typer.Option(help="auto, cpu, cuda or cuda:N.")] = "auto",
) -> None:
    """Estimate precision and recall at each threshold for these pools, and recommend a
    threshold for a target precision (see the module docs for how and when it fails)."""
    import numpy as np

    from bitextmine.devices import resolve_devices
    from bitextmine.embed.corpus import EmbeddingCorpus, SelectedRows
    from bitextmine.encoders import load_encoder
    from bitextmine.errors import BitextmineError
    from bitextmine.evaluate.calibrate import calibrate_with_seeds, calibrate_without_gold
    from bitextmine.io.atomic import write_json
    from bitextmine.mine import MineConfig, check_compatible, unique_sentences

    cfg = MineConfig(k=k, score=margin, retrieval=retrieval)
    device_name = resolve_devices(device)[0]
    src_corpus, tgt_corpus = EmbeddingCorpus.load(src), EmbeddingCorpus.load(tgt)
    check_compatible(src_corpus, tgt_corpus)
    x = SelectedRows(src_corpus, unique_sentences(src_corpus).rows)
    y = SelectedRows(tgt_corpus, unique_sentences(tgt_corpus).rows)
    if seeds:
        from bitextmine.train.data import read_parallel

        pairs = read_parallel([seeds])
        if len(pairs) < 20:
            raise BitextmineError(f"only {len(pairs)} seed pairs: give a few hundred", path=seeds)
        encoder = load_encoder(src_corpus.encoder.name, device=device_name)
        if encoder.identity.space() != src_corpus.encoder.space():
            raise BitextmineError("the encoder found under the sets' encoder name is not the one that made them",
                                  path=src_corpus.sets[0].path)
        result = calibrate_with_seeds(x, y, encoder.encode(pairs.src), encoder.encode(pairs.tgt), cfg, seed,
                                      device_name)
    else:
        result = calibrate_without_gold(np.asarray(x[:]), np.asarray(y[:]), cfg, seed, device_name)
    recommended = result.recommend(target_precision)
    typer.echo(f"method: {result.method}  ({cfg.score} margin, k={k}, {retrieval} retrieval)")
    for note in result.notes():
        typer.echo(note)
    if result.warning:
        typer.echo(f"cannot tell: {result.warning}; no estimate, no threshold recommended")
    else:
        typer.echo("threshold  precision  recall   pairs")
        for i in np.linspace(0, len(result.thresholds) - 1, min(15, len(result.thresholds))).astype(int):
            r = result.recall[i]
            typer.echo(f"{result.thresholds[i]:9.4f}  {100 * result.precision[i]:8.1f}%  "
                       f"{'   -   ' if np.isnan(r) else f'{100 * r:6.1f}%'}  {int(result.pairs[i]):6d}")
        if recommended is None:
            typer.echo(f"no threshold reaches {100 * target_precision:.0f}% estimated precision")
        else:
            typer.echo(f"recommended threshold for {100 * target_precision:.0f}% precision: {recommended:.4f}")
    if json_out:
        write_json(json_out, {**result.to_dict(), "recommended_threshold": recommended,
                              "target_precision": target_precision, "config": {"k": k, "score": cfg.score,
                                                                               "retrieval": retrieval}})
