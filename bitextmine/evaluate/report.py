"""A mining report: one static HTML page (images embedded) plus the PNG files.

Shows the histogram of the scores, the number of pairs kept against the threshold, the
estimated precision and recall against the threshold (when there is an estimate),
sampled pairs from each score band, the filter counts (when a filter report is given)
and the parameters recorded in the mining sidecar JSON. The threshold in use is marked
on every plot.

The sidecar of `mine` keeps a histogram of every pair the retrieval selected *before*
the threshold, and mine's own precision estimate when it chose the threshold: with them
the plots cover every threshold, not only the kept pairs. Without them (a TSV alone) the
plots show the pairs in the file. A `calibrate --json` file given with ``calibration``
replaces mine's estimate.
"""

from __future__ import annotations

import base64
import html
import json
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bitextmine import __version__
from bitextmine.errors import BitextmineError
from bitextmine.io.atomic import atomic_path

BANDS = 5
SAMPLES_PER_BAND = 4
SCORE_NAMES = {"ratio": "ratio margin", "distance": "distance margin", "cosine": "cosine", "absolute": "cosine"}


@dataclass
class ReportInputs:
    scores: np.ndarray  # best first, as mined
    src: list[str]
    tgt: list[str]
    params: dict | None
    filter_report: dict | None


def load_inputs(mined: str, meta: str | None = None, filter_report: str | None = None) -> ReportInputs:
    from bitextmine.filter import read_pairs
    from bitextmine.io.text import read_lines

    pairs = read_pairs(read_lines(mined), mined)
    if any(p.score is None for p in pairs):
        raise BitextmineError("the report needs scored pairs (score<TAB>src<TAB>tgt)", path=mined)
    meta_path = Path(meta) if meta else Path(mined + ".json")
    params = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.is_file() else None
    filt = json.loads(Path(filter_report).read_text(encoding="utf-8")) if filter_report else None
    if filt is None and params is not None and "filter" in params:
        filt = params["filter"]
    return ReportInputs(np.array([p.score for p in pairs], dtype=np.float64), [p.src for p in pairs],
                        [p.tgt for p in pairs], params, filt)


@dataclass
class Distribution:
    """The scores to plot: a histogram over every threshold, and what it counts."""

    counts: np.ndarray
    edges: np.ndarray
    label: str  # what the histogram counts, for the page


def score_distribution(inputs: ReportInputs) -> Distribution:
    """The sidecar's histogram of all pairs before the threshold, else the mined scores'."""
    record = (inputs.params or {}).get("score_histogram") or {}
    counts, edges = record.get("counts"), record.get("edges")
    if counts and edges and len(edges) == len(counts) + 1:
        return Distribution(np.asarray(counts, dtype=np.int64), np.asarray(edges, dtype=np.float64),
                            f"all {int(sum(counts)):,} pairs the retrieval selected before the threshold")
    if not len(inputs.scores):
        return Distribution(np.zeros(0, dtype=np.int64), np.zeros(0), "no pairs")
    counts, edges = np.histogram(inputs.scores, bins=min(60, max(10, len(inputs.scores) // 20)))
    return Distribution(counts, edges, f"the {len(inputs.scores):,} pairs in the file (the sidecar has no "
                                       "histogram of the pairs below the threshold)")


def score_name(params: dict | None) -> str:
    score = ((params or {}).get("parameters") or {}).get("score")
    return SCORE_NAMES.get(score, "score")


def precision_curve(params: dict | None, calibration: dict | None) -> dict | None:
    """Estimated precision (and recall) by threshold: from ``calibrate --json``, else mine's."""
    curve = calibration if calibration is not None else (params or {}).get("threshold_estimate")
    if not curve or not curve.get("thresholds"):
        return None
    return curve


def _mark(ax, threshold: float | None, label: bool = False) -> None:
    if threshold is not None:
        ax.axvline(threshold, color="#cc3311", linestyle="--",
                   label=f"threshold in use {threshold:g}" if label else None)


def _figures(inputs: ReportInputs, threshold: float | None, dist: Distribution, curve: dict | None):
    import matplotlib

    matplotlib.use("Agg")  # files only, no display needed
    from matplotlib import pyplot as plt

    xlabel = score_name(inputs.params)
    figures = {}
    hist, ax = plt.subplots(figsize=(7, 3.5), dpi=110)
    if len(dist.counts):
        ax.stairs(dist.counts, dist.edges, fill=True, color="#4477aa")
        ax.set_yscale("symlog", linthresh=10)  # the tail of translations next to the bulk of the others
    ax.set_xlabel(xlabel)
    ax.set_ylabel("pairs")
    ax.set_title("Scores of all pairs before the threshold" if "before" in dist.label else "Scores")
    _mark(ax, threshold, label=True)
    if threshold is not None:
        ax.legend()
    hist.tight_layout()
    figures["scores.png"] = hist

    kept, ax = plt.subplots(figsize=(7, 3.5), dpi=110)
    if len(dist.counts):
        at_least = np.cumsum(dist.counts[::-1])[::-1]  # pairs with score >= each bin's lower edge
        ax.step(dist.edges[:-1], at_least, where="post", color="#228833")
        ax.set_yscale("log")
    ax.set_xlabel(f"threshold ({xlabel})")
    ax.set_ylabel("pairs kept (score >= threshold)")
    ax.set_title("Pairs kept against the threshold")
    _mark(ax, threshold)
    kept.tight_layout()
    figures["kept.png"] = kept

    if curve is not None:
        est, ax = plt.subplots(figsize=(7, 3.5), dpi=110)
        t = np.asarray(curve["thresholds"], dtype=np.float64)
        for key, colour in (("precision", "#aa3377"), ("recall", "#66ccee")):
            values = np.asarray([np.nan if v is None else v for v in curve.get(key, [])], dtype=np.float64)
            if len(values) == len(t):
                ax.plot(t, values, color=colour, label=f"estimated {key}")
        ax.set_ylim(0, 1.02)
        ax.set_xlabel(f"threshold ({xlabel})")
        ax.set_ylabel("share")
        ax.set_title(f"Estimated precision and recall ({curve.get('method', 'estimate')})")
        _mark(ax, threshold)
        ax.legend(loc="lower left")
        est.tight_layout()
        figures["estimate.png"] = est
    return figures


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


def load_calibration(path: str | Path | None) -> dict | None:
    """A ``bitextmine calibrate --json`` file (its curve is plotted), or None."""
    if path is None:
        return None
    try:
        curve = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BitextmineError(f"cannot read the calibration JSON: {e}", path=path) from e
    if not isinstance(curve, dict) or not isinstance(curve.get("thresholds"), list):
        raise BitextmineError("not a `bitextmine calibrate --json` file (no thresholds)", path=path)
    return curve


def _write_images(figures: dict, output: Path) -> tuple[dict[str, str], list[Path]]:
    from matplotlib import pyplot as plt

    images, written = {}, []
    for name, fig in figures.items():
        png = output.with_name(f"{output.stem}.{name}")
        with atomic_path(png) as tmp:
            fig.savefig(tmp, format="png")
        plt.close(fig)
        images[name] = base64.b64encode(png.read_bytes()).decode("ascii")
        written.append(png)
    return images, written


def _threshold_text(params: dict | None, curve: dict | None) -> str:
    parameters = (params or {}).get("parameters") or {}
    threshold = parameters.get("threshold")
    if threshold is None:
        return "No threshold recorded (no sidecar JSON)."
    text = f"Threshold in use: {threshold:g} ({parameters.get('threshold_source', 'not recorded how it was chosen')})."
    if curve is not None and curve.get("warning"):
        text += f" The estimate cannot be trusted: {curve['warning']}."
    return text


def write_report(inputs: ReportInputs, output: str | Path, title: str = "bitextmine mining report",
                 calibration: dict | None = None) -> list[Path]:
    """Write the HTML page and its PNG files; return the paths written.

    ``calibration``: a loaded ``calibrate --json`` whose curve is plotted instead of mine's estimate.
    """
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    threshold = ((inputs.params or {}).get("parameters") or {}).get("threshold")
    dist = score_distribution(inputs)
    curve = precision_curve(inputs.params, calibration)
    images, written = _write_images(_figures(inputs, threshold, dist, curve), output)

    esc = html.escape
    scores = inputs.scores
    summary = [("pairs", f"{len(scores):,}")]
    if len(scores):
        summary += [("score max", f"{scores.max():.4f}"), ("median", f"{np.median(scores):.4f}"),
                    ("min", f"{scores.min():.4f}")]
    image = "<img alt='{}' src='data:image/png;base64,{}'>".format
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(title)}</title>",
             "<style>body{font-family:sans-serif;max-width:1000px;margin:2em auto;padding:0 1em}"
             "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;"
             "text-align:left;vertical-align:top}th{background:#f3f3f3}img{max-width:100%}"
             ".num{text-align:right;font-variant-numeric:tabular-nums}</style></head><body>",
             f"<h1>{esc(title)}</h1>",
             "<table>" + "".join(f"<tr><th>{esc(k)}</th><td class='num'>{esc(v)}</td></tr>" for k, v in summary)
             + "</table>",
             f"<p>{esc(_threshold_text(inputs.params, curve))}</p>",
             f"<h2>Scores</h2><p>Histogram of {esc(dist.label)}.</p>{image('score histogram', images['scores.png'])}",
             f"<h2>Pairs kept against the threshold</h2>{image('pairs kept', images['kept.png'])}"]
    if "estimate.png" in images:
        parts.append(f"<h2>Estimated precision and recall</h2>{image('estimated precision', images['estimate.png'])}")
    parts.append("<h2>Sampled pairs by score band</h2>")
    for band, rows in _samples(inputs):
        parts.append(f"<h3>score {esc(band)}</h3><table><tr><th>score</th><th>source</th><th>target</th></tr>")
        parts += [f"<tr><td class='num'>{s:.4f}</td><td>{esc(a)}</td><td>{esc(b)}</td></tr>" for s, a, b in rows]
        parts.append("</table>")
    parts += _filter_and_parameters(inputs)
    parts.append(f"<p><small>bitextmine {esc(__version__)}</small></p></body></html>")
    with atomic_path(output) as tmp:
        tmp.write_text("\n".join(parts), encoding="utf-8")
    return [output, *written]


def _filter_and_parameters(inputs: ReportInputs) -> list[str]:
    esc = html.escape
    parts = []
    if inputs.filter_report:
        f = inputs.filter_report
        parts.append(f"<h2>Filter</h2><p>kept {f.get('kept', 0):,} of {f.get('total', 0):,} pairs</p><table>"
                     "<tr><th>rule</th><th>rejected</th></tr>")
        parts += [f"<tr><td>{esc(rule)}</td><td class='num'>{count:,}</td></tr>"
                  for rule, count in f.get("rejected", {}).items()]
        parts.append("</table>")
    if inputs.params:
        plotted = ("score_histogram", "threshold_estimate")  # shown above, too long to print
        shown = {k: v for k, v in inputs.params.items() if k not in plotted}
        parts.append("<h2>Parameters</h2><pre>" + esc(json.dumps(shown, indent=2)) + "</pre>")
    return parts
