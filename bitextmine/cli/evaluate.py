"""``bitextmine eval bucc`` and ``bitextmine eval tatoeba``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bitextmine import defaults
from bitextmine.choices import Retrieval, Score
from bitextmine.cli.logs import setup_logging
from bitextmine.cli.options import (
    Group,
    MarginAlias,
    Quiet,
    check_json_output,
    command,
    device_option,
    encoder_option,
    finite,
    json_option,
    json_to_stdout,
    k_option,
    language_code,
    length_ratio_value,
    print_table,
    retrieval_option,
    score_of,
    score_option,
    usage_error,
)
from bitextmine.io.atomic import write_json

app = typer.Typer(name="eval", cls=Group, no_args_is_help=True,
                  help="Measure mining (BUCC P/R/F1) and retrieval (Tatoeba P@1 / xsim) quality.")
Encoder = encoder_option()


def _report(report: dict, json_out: str | None, header: list[str], rows: list[list]) -> None:
    """The table (to stderr when the JSON takes stdout), the signature on stderr (standard
    output holds the table alone: piped, pure TSV; the JSON has the signature too), then the JSON."""
    print_table(header, rows, err=json_to_stdout(json_out))
    typer.echo(f"signature: {report['signature']}", err=True)
    if json_out:
        write_json(json_out, report)


def _language_codes(value: str | None) -> str | None:
    """``--langs``: comma-separated ISO 639 codes, each checked before any work."""
    for code in (value or "").split(","):
        if code.strip():
            language_code(code.strip())
    return value


@command(app, epilog="""\b
Examples:
    bitextmine eval tatoeba --data ../shared/data/tatoeba --langs deu,fra,cmn
    bitextmine eval tatoeba --data ../shared/data/tatoeba --langs de,fr,zh
    bitextmine eval tatoeba test.de test.en --score ratio --json tatoeba.json""")
def tatoeba(
    files: Annotated[list[Path] | None, typer.Argument(
        metavar="SRC TGT", show_default=False,
        help="Aligned files as pairs: SRC TGT [SRC TGT ...] (line i of SRC translates line i of TGT).")] = None,
    data: Annotated[Path | None, typer.Option(metavar="DIR", show_default=False,
                                              help="A Tatoeba directory with tatoeba.LANG-eng.{LANG,eng}.")] = None,
    langs: Annotated[str | None, typer.Option(
        metavar="LANG,...", show_default=False, callback=_language_codes,
        help="Comma-separated languages, ISO 639-1 or 639-3, with --data (e.g. deu,fra,cmn or de,fr,zh).")]
    = None,
    encoder: Encoder = defaults.ENCODER,
    score: score_option() = Score.cosine,
    margin: MarginAlias = None,
    device: device_option() = defaults.DEVICE,
    json_out: json_option() = None,
    quiet: Quiet = False,
) -> None:
    """P@1 in both directions (and xsim error) on aligned test sets such as Tatoeba.

    --score cosine is plain nearest neighbour; a margin re-ranks each sentence's k
    nearest candidates. The JSON gives every rate as a share (0-1); the table, in %.
    """
    from bitextmine.evaluate.tatoeba import evaluate_aligned_files, tatoeba_sets
    from bitextmine.mine import MineConfig

    files = files or []
    if data is not None and not langs:
        raise usage_error("--data needs --langs", "--langs")
    if len(files) % 2:
        raise usage_error("give aligned files in pairs: SRC TGT", "SRC TGT")
    sets = tatoeba_sets(data, [lang.strip() for lang in langs.split(",")]) if data is not None else []
    sets += [(a.name, a, b) for a, b in zip(files[::2], files[1::2], strict=True)]
    if not sets:
        raise usage_error("give SRC TGT files, or --data and --langs")
    check_json_output(json_out, [data, *(path for _, a, b in sets for path in (a, b))])
    setup_logging(quiet)
    cfg = MineConfig(score=score_of(score, margin), device=device)
    report = evaluate_aligned_files(sets, encoder, cfg, progress=not quiet)
    metrics = report["metrics"]
    rows = [[name, metrics[f"{name}_pairs"]] + [f"{100 * metrics[f'{name}_{m}']:.2f}" for m in
                                               ("p@1_src2tgt", "p@1_tgt2src", "p@1_mean")]
            + [f"{100 * (1 - metrics[f'{name}_p@1_mean']):.2f}"] for name, _, _ in sets]
    _report(report, json_out, ["set", "pairs", "P@1 src->tgt %", "P@1 tgt->src %", "P@1 mean %", "xsim error %"], rows)


@command(app, epilog="""\b
Example:
    bitextmine eval bucc de-en.training.de de-en.training.en de-en.training.gold --json bucc.json""")
def bucc(
    src: Annotated[Path, typer.Argument(metavar="SRC", show_default=False,
                                        help="Source sentences: id<TAB>sentence.")],
    tgt: Annotated[Path, typer.Argument(metavar="TGT", show_default=False,
                                        help="Target sentences: id<TAB>sentence.")],
    gold: Annotated[Path, typer.Argument(metavar="GOLD", show_default=False, help="Gold pairs: src_id<TAB>tgt_id.")],
    encoder: Encoder = defaults.ENCODER,
    k: k_option() = defaults.K,
    score: score_option() = Score(defaults.SCORE),
    margin: MarginAlias = None,
    retrieval: retrieval_option() = Retrieval(defaults.RETRIEVAL),
    threshold: Annotated[float | None, typer.Option(
        metavar="X", callback=finite, show_default=False,
        help="Threshold to report (default: the one `mine` chooses).")] = None,
    length_ratio: Annotated[float, typer.Option(
        metavar="X", callback=length_ratio_value,
        help="At the threshold, drop the pairs whose lengths disagree, as `mine --length-ratio` does "
             "(0: none).")] = defaults.MINE_LENGTH_RATIO,
    device: device_option() = defaults.DEVICE,
    json_out: json_option() = None,
    quiet: Quiet = False,
) -> None:
    """Mine BUCC-style files and score them against the gold pairs: P/R/F1.

    Reported at the threshold (the pairs `mine` writes there), and at the best threshold of a
    sweep over all scores (the threshold alone). The JSON gives every rate as a share (0-1);
    the table, in %.
    """
    from bitextmine.evaluate.bucc import evaluate_bucc_files
    from bitextmine.mine import MineConfig

    check_json_output(json_out, [src, tgt, gold])
    setup_logging(quiet)
    cfg = MineConfig(k=k, score=score_of(score, margin), retrieval=retrieval.value, threshold=threshold,
                     length_ratio=length_ratio, device=device)
    report = evaluate_bucc_files(src, tgt, gold, encoder, cfg, progress=not quiet)
    m = report["metrics"]
    rows = [[label, f"{m[f'{prefix}threshold']:.4f}"] + [f"{100 * m[f'{prefix}{key}']:.2f}"
                                                          for key in ("precision", "recall", "f1")]
            for label, prefix in (("at threshold", "bucc_"), ("best threshold", "bucc_best_"))]
    _report(report, json_out, ["", "threshold", "P %", "R %", "F1 %"], rows)
