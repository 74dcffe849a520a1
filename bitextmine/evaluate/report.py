"""A mining report: one static HTML page (images embedded) plus the PNG files.

Shows the score histogram, the number of pairs kept against the threshold, sampled
pairs from each score band, the filter counts (when a filter report is given) and the
parameters recorded in the mining sidecar JSON.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic import ConfigDict

from bitextmine import __version__
from bitextmine.errors import BitextmineError
from bitextmine.io.validate import Float, Int, Model, parse

BANDS = 5
FIGURES = ("scores.png", "kept.png")
SAMPLES_PER_BAND = 4


@dataclass
class ReportInputs:
    scores: np.ndarray  # best first, as mined
    src: list[str]
    tgt: list[str]
    params: dict | None
    filter_report: dict | None


class _Parameters(Model):
    model_config = ConfigDict(extra="allow", frozen=True)
    threshold: Float | None = None


class _Sidecar(Model):
    model_config = ConfigDict(extra="allow", frozen=True)
    parameters: _Parameters | None = None


class _FilterCounts(Model):
    model_config = ConfigDict(extra="allow", frozen=True)
    total: Int = 0
    kept: Int = 0
    rejected: dict[str, Int] = {}


def _scored_pairs(mined: str):
    """The pairs of a mined TSV; every score a finite number (a NaN cannot be placed on a histogram)."""
    from bitextmine.io.pairs import read_pairs

    pairs = read_pairs(mined)
    if any(p.score is None for p in pairs):
        raise BitextmineError("the report needs scored pairs (score<TAB>src<TAB>tgt)", path=mined)
    bad = next((p for p in pairs if not math.isfinite(p.score)), None)
    if bad is not None:
        raise BitextmineError(f"score {bad.score} is not a finite number", path=mined, line=bad.line)
    return pairs


def load_inputs(mined: str, meta: str | None = None, filter_report: str | None = None) -> ReportInputs:
    """The pairs, the mining sidecar (checked against the pairs) and the filter counts."""
    from bitextmine.io.atomic import is_regular_output
    from bitextmine.mine.output import SIDECAR_SUFFIX, check_sidecar, read_sidecar

    pairs = _scored_pairs(mined)
    meta_path = meta if meta else mined + SIDECAR_SUFFIX
    params = None
    if meta or (mined != "-" and is_regular_output(mined) and Path(meta_path).is_file()):
        params = read_sidecar(meta_path)
        parse(_Sidecar, params, meta_path, "a mining sidecar")
        if mined != "-":
            check_sidecar(mined, params, meta_path, rows=len(pairs))
    filt = None
    if filter_report:
        filt = read_sidecar(filter_report)
        parse(_FilterCounts, filt, filter_report, "a filter report")
    elif params is not None and isinstance(params.get("filter"), dict):
        filt = params["filter"]
        parse(_FilterCounts, filt, meta_path, "the sidecar's filter counts")
    return ReportInputs(np.array([p.score for p in pairs], dtype=np.float64), [p.src for p in pairs],
                        [p.tgt for p in pairs], params, filt)


def make_report(mined: str, output: str | Path, meta: str | None = None,
                filter_report: str | None = None) -> list[Path]:
    """Read the inputs and write the report (refusing an output that would replace an input)."""
    from bitextmine.io.atomic import refuse_overwriting_inputs

    pngs = [] if str(output) == "-" else [Path(output).with_name(f"{Path(output).stem}.{n}") for n in FIGURES]
    refuse_overwriting_inputs([output, *pngs], [mined, meta, filter_report])
    return write_report(load_inputs(mined, meta, filter_report), output)


def _figures(inputs: ReportInputs, threshold: float | None):
    import matplotlib

    matplotlib.use("Agg")  # files only, no display needed
    from matplotlib import pyplot as plt

    scores = inputs.scores
    hist, ax = plt.subplots(figsize=(7, 3.5), dpi=110)
    ax.hist(scores, bins=min(60, max(10, len(scores) // 20)), color="#4477aa")
    ax.set_xlabel("score")
    ax.set_ylabel("pairs")
    ax.set_title("Score distribution")
    if threshold is not None:
        ax.axvline(threshold, color="#cc3311", linestyle="--", label=f"threshold {threshold:g}")
        ax.legend()
    hist.tight_layout()

    kept, ax = plt.subplots(figsize=(7, 3.5), dpi=110)
    ordered = np.sort(scores)[::-1]
    ax.plot(ordered, np.arange(1, len(ordered) + 1), color="#228833")
    ax.set_xlabel("threshold")
    ax.set_ylabel("pairs kept (score >= threshold)")
    ax.set_title("Pairs kept against the threshold")
    if threshold is not None:
        ax.axvline(threshold, color="#cc3311", linestyle="--")
    kept.tight_layout()
    return dict(zip(FIGURES, (hist, kept), strict=True))


def _samples(inputs: ReportInputs, seed: int = 0) -> list[tuple[str, list[tuple[float, str, str]]]]:
    """A few pairs from each score band (quantiles of the scores)."""
    if not len(inputs.scores):
        return []
    rng = random.Random(seed)
    edges = np.quantile(inputs.scores, np.linspace(1, 0, BANDS + 1))
    out = []
    for hi, lo in zip(edges[:-1], edges[1:], strict=True):
        rows = [i for i in range(len(inputs.scores)) if lo <= inputs.scores[i] <= hi]
        picked = sorted(rng.sample(rows, min(SAMPLES_PER_BAND, len(rows))), key=lambda i: -inputs.scores[i])
        out.append((f"{lo:.3f} – {hi:.3f}", [(inputs.scores[i], inputs.src[i], inputs.tgt[i]) for i in picked]))
    return out


def write_report(inputs: ReportInputs, output: str | Path, title: str = "bitextmine mining report") -> list[Path]:
    """Write the HTML page and its PNG files; return the paths written.

    Everything is drawn in memory first, so a failure writes nothing. The PNGs go beside
    a regular output only; ``-`` (standard output) or a device gets the page alone (its
    images are embedded anyway).
    """
    from matplotlib import pyplot as plt

    from bitextmine.io.atomic import is_regular_output, write_bytes, write_text

    threshold = (inputs.params or {}).get("parameters", {}) or {}
    threshold = threshold.get("threshold")
    pngs = {}
    for name, fig in _figures(inputs, threshold).items():
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png")
        plt.close(fig)
        pngs[name] = buffer.getvalue()
    page = _page(inputs, {name: base64.b64encode(data).decode("ascii") for name, data in pngs.items()}, title)
    if not is_regular_output(output):
        write_text(output, page)
        return [Path(output)]
    output = Path(output)
    created = [p for p in [output.parent, *output.parent.parents] if not p.exists()]
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        written = []
        for name, data in pngs.items():
            png = output.with_name(f"{output.stem}.{name}")
            write_bytes(png, data)
            written.append(png)
        write_text(output, page)
    except BaseException:
        for directory in created:  # no empty directories left behind
            if directory.is_dir() and not any(directory.iterdir()):
                directory.rmdir()
        raise
    return [output, *written]


def _page(inputs: ReportInputs, images: dict[str, str], title: str) -> str:
    esc = html.escape
    scores = inputs.scores
    summary = [("pairs", f"{len(scores):,}")]
    if len(scores):
        summary += [("score max", f"{scores.max():.4f}"), ("median", f"{np.median(scores):.4f}"),
                    ("min", f"{scores.min():.4f}")]
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(title)}</title>",
             "<style>body{font-family:sans-serif;max-width:1000px;margin:2em auto;padding:0 1em}"
             "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;"
             "text-align:left;vertical-align:top}th{background:#f3f3f3}img{max-width:100%}"
             ".num{text-align:right;font-variant-numeric:tabular-nums}</style></head><body>",
             f"<h1>{esc(title)}</h1>",
             "<table>" + "".join(f"<tr><th>{esc(k)}</th><td class='num'>{esc(v)}</td></tr>" for k, v in summary)
             + "</table>",
             f"<h2>Scores</h2><img alt='score histogram' src='data:image/png;base64,{images['scores.png']}'>",
             f"<h2>Pairs kept against the threshold</h2><img alt='pairs kept' "
             f"src='data:image/png;base64,{images['kept.png']}'>",
             "<h2>Sampled pairs by score band</h2>"]
    for band, rows in _samples(inputs):
        parts.append(f"<h3>score {esc(band)}</h3><table><tr><th>score</th><th>source</th><th>target</th></tr>")
        parts += [f"<tr><td class='num'>{s:.4f}</td><td>{esc(a)}</td><td>{esc(b)}</td></tr>" for s, a, b in rows]
        parts.append("</table>")
    if inputs.filter_report:
        f = inputs.filter_report
        parts.append(f"<h2>Filter</h2><p>kept {f.get('kept', 0):,} of {f.get('total', 0):,} pairs</p><table>"
                     "<tr><th>rule</th><th>rejected</th></tr>")
        parts += [f"<tr><td>{esc(rule)}</td><td class='num'>{count:,}</td></tr>"
                  for rule, count in f.get("rejected", {}).items()]
        parts.append("</table>")
    if inputs.params:
        parts.append("<h2>Parameters</h2><pre>" + esc(json.dumps(inputs.params, indent=2)) + "</pre>")
    parts.append(f"<p><small>bitextmine {esc(__version__)}</small></p></body></html>")
    return "\n".join(parts)
