"""``bitextmine eval bucc`` and ``bitextmine eval tatoeba``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bitextmine import defaults

app = typer.Typer(help="Measure mining (BUCC P/R/F1) and retrieval (Tatoeba P@1 / xsim) quality.",
                  no_args_is_help=True)


def _print_table(rows: list[list[str]], header: list[str]) -> None:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, ["-" * w for w in widths], *rows]:
        typer.echo("  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(row, widths,
                                                                                                     strict=True))))


@app.command()
def tatoeba(
    files: Annotated[list[Path] | None, typer.Argument(
        help="Aligned files as pairs: SRC TGT [SRC TGT ...] (line i of SRC translates line i of TGT).",
        show_default=False)] = None,
    data: Annotated[Path | None, typer.Option(help="A Tatoeba directory with tatoeba.LANG-eng.{LANG,eng}.",
                                              show_default=False)] = None,
    langs: Annotated[str | None, typer.Option(help="Comma-separated languages, with --data (e.g. deu,fra,cmn).",
                                              show_default=False)] = None,
    encoder: Annotated[str, typer.Option(help="Encoder name.")] = defaults.ENCODER,
    score: Annotated[str, typer.Option(help="cosine (plain nearest neighbour), ratio or distance margin.")]
    = "cosine",
    device: Annotated[str, typer.Option(help="auto, cpu, cuda or cuda:N.")] = "auto",
    json_out: Annotated[Path | None, typer.Option("--json", help="Also write the metrics as JSON.",
                                                  show_default=False)] = None,
) -> None:
    """P@1 in both directions (and xsim error) on aligned test sets such as Tatoeba."""
    from bitextmine.devices import resolve_devices
    from bitextmine.encoders import load_encoder
    from bitextmine.errors import BitextmineError
    from bitextmine.evaluate import signature
    from bitextmine.evaluate.tatoeba import evaluate_aligned
    from bitextmine.io.atomic import write_json
    from bitextmine.io.text import read_shard

    pairs: list[tuple[str, Path, Path]] = []
    if data is not None:
        if not langs:
            raise typer.BadParameter("--data needs --langs", param_hint="--langs")
        for lang in langs.split(","):
            pairs.append((lang, data / f"tatoeba.{lang}-eng.{lang}", data / f"tatoeba.{lang}-eng.eng"))
    files = files or []
    if len(files) % 2:
        raise typer.BadParameter("give aligned files in pairs: SRC TGT", param_hint="FILES")
    pairs += [(f"{a.name}", a, b) for a, b in zip(files[::2], files[1::2], strict=True)]
    if not pairs:
        raise typer.BadParameter("give SRC TGT files, or --data and --langs")
    device_name = resolve_devices(device)[0]
    enc = load_encoder(encoder, device=device_name)
    results: dict[str, float] = {}
    rows = []
    for name, src, tgt in pairs:
        src_lines, tgt_lines = read_shard(str(src)).lines, read_shard(str(tgt)).lines
        if len(src_lines) != len(tgt_lines):
            raise BitextmineError(f"{len(src_lines)} lines, but {tgt} has {len(tgt_lines)}: files must be aligned",
                                  path=src)
        metrics = evaluate_aligned(enc.encode(src_lines), enc.encode(tgt_lines), name, score, device_name)
        results.update(metrics)
        rows.append([name, len(src_lines), f"{metrics[f'{name}_p@1_src2tgt']:.2f}",
                     f"{metrics[f'{name}_p@1_tgt2src']:.2f}", f"{metrics[f'{name}_p@1_mean']:.2f}",
                     f"{100 - metrics[f'{name}_p@1_mean']:.2f}"])
    _print_table(rows, ["set", "pairs", "P@1 src->tgt", "P@1 tgt->src", "P@1 mean", "xsim error"])
    sig = signature(encoder=enc.identity.name, score=score)
    typer.echo(f"signature: {sig}")
    if json_out:
        write_json(json_out, {"metrics": results, "primary_metric": "p@1_mean", "signature": sig})


@app.command()
def bucc(
    src: Annotated[Path, typer.Argument(help="Source sentences: id<TAB>sentence.", show_default=False)],
    tgt: Annotated[Path, typer.Argument(help="Target sentences: id<TAB>sentence.", show_default=False)],
    gold: Annotated[Path, typer.Argument(help="Gold pairs: src_id<TAB>tgt_id.", show_default=False)],
    encoder: Annotated[str, typer.Option(help="Encoder name.")] = defaults.ENCODER,
    k: Annotated[int, typer.Option("-k", "--k", help="Neighbours for the margin.", min=1)] = defaults.K,
    margin: Annotated[str, typer.Option(help="ratio, distance or absolute (= cosine).")] = defaults.MARGIN,
    retrieval: Annotated[str, typer.Option(help="max, union, intersect, fwd or bwd.")] = defaults.RETRIEVAL,
    threshold: Annotated[float | None, typer.Option(help="Threshold to report [default: the one `mine` chooses].",
                                                    show_default=False)] = None,
    device: Annotated[str, typer.Option(help="auto, cpu, cuda or cuda:N.")] = "auto",
    json_out: Annotated[Path | None, typer.Option("--json", help="Also write the metrics as JSON.",
                                                  show_default=False)] = None,
) -> None:
    """Mine a BUCC-style pair of files and score against the gold: P/R/F1 at the
    threshold and at the best threshold of a sweep."""
    from bitextmine.devices import resolve_devices
    from bitextmine.encoders import load_encoder
    from bitextmine.evaluate import signature
    from bitextmine.evaluate.bucc import evaluate_mined, read_gold, read_id_sentences
    from bitextmine.io.atomic import write_json
    from bitextmine.mine import MineConfig
    from bitextmine.mine.thresholds import mine_and_choose

    cfg = MineConfig(k=k, score=margin, retrieval=retrieval, threshold=threshold)
    device_name = resolve_devices(device)[0]
    enc = load_encoder(encoder, device=device_name)
    src_s, tgt_s, gold_pairs = read_id_sentences(src), read_id_sentences(tgt), read_gold(gold)
    src_unique, tgt_unique = list(dict.fromkeys(src_s.texts)), list(dict.fromkeys(tgt_s.texts))
    # the pairs with no threshold, and the threshold `mine` would choose for them
    pairs, choice = mine_and_choose(enc.encode(src_unique), enc.encode(tgt_unique), cfg, (enc.identity,),
                                    device=device_name)
    threshold = choice.threshold
    typer.echo(f"threshold {threshold:.4f}: {choice.reason}")
    metrics = evaluate_mined(src_s, tgt_s, src_unique, tgt_unique, pairs, gold_pairs, threshold)
    _print_table(
        [["at threshold", f"{threshold:.4f}", f"{100 * metrics['bucc_precision']:.2f}",
          f"{100 * metrics['bucc_recall']:.2f}", f"{100 * metrics['bucc_f1']:.2f}"],
         ["best threshold", f"{metrics['bucc_best_threshold']:.4f}", f"{100 * metrics['bucc_best_precision']:.2f}",
          f"{100 * metrics['bucc_best_recall']:.2f}", f"{100 * metrics['bucc_best_f1']:.2f}"]],
        ["", "threshold", "P", "R", "F1"])
    sig = signature(encoder=enc.identity.name, k=k, margin=cfg.score, retrieval=retrieval)
    typer.echo(f"signature: {sig}")
    if json_out:
        write_json(json_out, {"metrics": metrics, "primary_metric": "bucc_f1", "signature": sig})
