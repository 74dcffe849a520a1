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
from bitextmine.io.atomic import is_regular_output, refuse_overwriting_inputs, write_bytes, write_error, write_text
from bitextmine.io.pairs import read_pairs
from bitextmine.io.sidecars import SIDECAR_SUFFIX, check_sidecar, read_sidecar
from bitextmine.io.validate import Count, Float, Int, Model, parse

BANDS = 5
FIGURES = ("scores.png", "kept.png")
ESTIMATE_FIGURE = "estimate.png"  # when there is a precision estimate
SAMPLES_PER_BAND = 4
SCORE_NAMES = {"ratio": "ratio margin", "distance": "distance margin", "cosine": "cosine", "absolute": "cosine"}


@dataclass
class ReportInputs:
    scores: np.ndarray  # best first, as mined
    src: list[str]
    tgt: list[str]
    params: dict | None
    filter_report: dict | None
    src_docs: list[str] | None = None  # each pair's documents (``mine --docs``), when the file has them
    tgt_docs: list[str] | None = None


class _Parameters(Model):
    model_config = ConfigDict(extra="allow", frozen=True)
    threshold: Float | None = None


class _LengthAgreement(Model):
    model_config = ConfigDict(extra="allow", frozen=True)
    ratio: Float = 0.0
    band: Float | None = None
    typical_ratio: Float | None = None
    dropped: Int = 0
    estimated_precision_written: Float | None = None


class _Histogram(Model):
    model_config = ConfigDict(extra="allow", frozen=True)
    counts: list[Count] = []
    edges: list[Float] = []


class _Curve(Model):
    """An estimate along the thresholds: mine's ``threshold_estimate``, or calibrate's ``--json``."""
    model_config = ConfigDict(extra="allow", frozen=True)
    thresholds: list[Float]
    precision: list[Float | None] | None = None
    recall: list[Float | None] | None = None
    precision_low: list[Float | None] | None = None
    precision_high: list[Float | None] | None = None
    recommended_threshold: Float | None = None
    estimated_precision: Float | None = None
    recommended_precision: Float | None = None


class _Sidecar(Model):
    model_config = ConfigDict(extra="allow", frozen=True)
    parameters: _Parameters  # what `mine` and `score-pairs` always write: another JSON file is refused
    length_agreement: _LengthAgreement | None = None
    score_histogram: _Histogram | None = None
    threshold_estimate: _Curve | None = None


class _FilterCounts(Model):
    model_config = ConfigDict(extra="allow", frozen=True)
    total: Int  # what every filter report holds: another JSON file is refused
    kept: Int
    rejected: dict[str, Int] = {}


def _scored_pairs(mined: str):
    """The pairs of a mined TSV; every score a finite number (a NaN cannot be placed on a histogram)."""

    pairs = read_pairs(mined)
    if any(p.score is None for p in pairs):
        raise BitextmineError("the report needs scored pairs (score<TAB>src<TAB>tgt)", path=mined)
    bad = next((p for p in pairs if not math.isfinite(p.score)), None)
    if bad is not None:
        raise BitextmineError(f"score {bad.score} is not a finite number", path=mined, line=bad.line)
    return pairs


def sidecar_read(mined: str, meta: str | None = None) -> str | None:
    """The mining sidecar the report reads: ``meta`` where given, else ``PAIRS.json`` where
    the pairs are a regular file that has one."""
    if meta:
        return meta
    default = mined + SIDECAR_SUFFIX
    return default if mined != "-" and is_regular_output(mined) and Path(default).is_file() else None


def _check_kind(data, keys: tuple[str, ...], path: str, kind: str) -> None:
    """A file of another kind (a calibration given as the sidecar, say) is refused by name."""
    missing = [key for key in keys if not isinstance(data, dict) or key not in data]
    if missing:
        raise BitextmineError(f"not {kind}: it has no {', '.join(repr(k) for k in missing)}", path=path)


def load_inputs(mined: str, meta: str | None = None, filter_report: str | None = None) -> ReportInputs:
    """The pairs, the mining sidecar (checked against the pairs) and the filter counts."""

    pairs = _scored_pairs(mined)
    meta_path = sidecar_read(mined, meta)
    params = None
    if meta_path is not None:
        params = read_sidecar(meta_path)
        _check_kind(params, ("parameters",), meta_path, "a mining sidecar (the JSON `mine` or `score-pairs` writes)")
        parse(_Sidecar, params, meta_path, "a mining sidecar")
        if mined != "-":
            check_sidecar(mined, params, meta_path, rows=len(pairs), advice="give the sidecar written with the "
                          "pairs (mine's --json) as --meta, or mine again")
    filt = None
    if filter_report:
        filt = read_sidecar(filter_report)
        _check_kind(filt, ("total", "kept"), filter_report, "a filter report (the JSON `filter` writes)")
        parse(_FilterCounts, filt, filter_report, "a filter report")
    elif params is not None and isinstance(params.get("filter"), dict):
        filt = params["filter"]
        parse(_FilterCounts, filt, meta_path, "the sidecar's filter counts")
    src_docs, tgt_docs = _documents(pairs, params)
    return ReportInputs(np.array([p.score for p in pairs], dtype=np.float64), [p.src for p in pairs],
                        [p.tgt for p in pairs], params, filt, src_docs, tgt_docs)


def _documents(pairs, params: dict | None) -> tuple[list[str] | None, list[str] | None]:
    """The documents of both sides: the columns the sidecar names src_doc and tgt_doc, or, with
    no sidecar, the third and fourth extra column (after the ids) when every pair has them."""
    columns = (params or {}).get("columns")
    if isinstance(columns, list) and "src_doc" in columns and "tgt_doc" in columns:
        at = (columns.index("src_doc") - 3, columns.index("tgt_doc") - 3)
    elif params is None and pairs and all(len(p.extra) >= 4 for p in pairs):
        at = (2, 3)
    else:
        return None, None
    if at[0] < 0 or at[1] < 0:
        return None, None
    return ([p.extra[at[0]] if len(p.extra) > at[0] else "" for p in pairs],
            [p.extra[at[1]] if len(p.extra) > at[1] else "" for p in pairs])


def report_files(output: str | Path) -> list:
    """The files a report to ``output`` may write: the page and, beside it, its PNGs."""
    if str(output) == "-":
        return [output]
    return [output, *(Path(output).with_name(f"{Path(output).stem}.{n}") for n in (*FIGURES, ESTIMATE_FIGURE))]


def make_report(mined: str, output: str | Path, meta: str | None = None, filter_report: str | None = None,
                calibration: str | None = None) -> tuple[list[Path], dict]:
    """Read the inputs and write the report (refusing an output that would replace an input);
    return the paths written and the page's figures (``report_counts``).

    ``calibration``: a ``calibrate --json`` file whose curve is plotted instead of mine's estimate.
    """
    refuse_overwriting_inputs(report_files(output), [mined, sidecar_read(mined, meta), filter_report, calibration])
    inputs, curve = load_inputs(mined, meta, filter_report), load_calibration(calibration)
    return write_report(inputs, output, calibration=curve), report_counts(inputs, curve)


def report_counts(inputs: ReportInputs, calibration: dict | None = None) -> dict:
    """The figures the page shows, for ``--json``: the pairs and their scores, the threshold in
    use and the recommended one, what the length agreement dropped, the filter's counts."""
    scores = inputs.scores
    parameters = (inputs.params or {}).get("parameters") or {}
    curve = precision_curve(inputs.params, calibration) or {}
    lengths = (inputs.params or {}).get("length_agreement") or {}
    counts = {
        "pairs": len(scores),
        "score": {"max": float(scores.max()), "median": float(np.median(scores)), "min": float(scores.min())}
        if len(scores) else None,
        "threshold": parameters.get("threshold"), "threshold_source": parameters.get("threshold_source"),
        "recommended_threshold": curve.get("recommended_threshold"),
        "estimated_precision": _recommended_precision(curve),
        "dropped_for_lengths": lengths.get("dropped"),
        "estimated_precision_written": lengths.get("estimated_precision_written"),
        "filter": {k: inputs.filter_report.get(k) for k in ("total", "kept", "rejected")}
        if inputs.filter_report else None,
    }
    if inputs.src_docs is not None:
        counts["source_documents"] = len(set(inputs.src_docs) - {""})
        counts["target_documents"] = len(set(inputs.tgt_docs) - {""})
    return counts


def load_calibration(path: str | Path | None) -> dict | None:
    """A ``bitextmine calibrate --json`` file (its curve is plotted), or None."""

    if path is None:
        return None
    curve = read_sidecar(path)
    if not isinstance(curve.get("thresholds"), list):
        raise BitextmineError("not a `bitextmine calibrate --json` file (no thresholds)", path=path)
    parse(_Curve, curve, path, "a calibration curve")
    return curve


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
    if not isinstance(curve, dict) or not curve.get("thresholds"):
        return None
    return curve


def _mark(ax, threshold: float | None, label: bool = False) -> None:
    if threshold is not None:
        ax.axvline(threshold, color="#cc3311", linestyle="--",
                   label=f"threshold in use {threshold:g}" if label else None)


def _figures(inputs: ReportInputs, threshold: float | None, dist: Distribution, curve: dict | None) -> dict:
    import matplotlib  # matplotlib: 1.1 s, for the report's figures only

    matplotlib.use("Agg")  # files only, no display needed
    from matplotlib import pyplot as plt  # matplotlib: 1.1 s, for the report's figures only

    xlabel = score_name(inputs.params)
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
    figures = dict(zip(FIGURES, (hist, kept), strict=True))
    if curve is not None:
        figures[ESTIMATE_FIGURE] = _estimate_figure(curve, threshold, xlabel)
    return figures


def _estimate_figure(curve: dict, threshold: float | None, xlabel: str):
    from matplotlib import pyplot as plt  # matplotlib: 1.1 s, for the report's figures only

    est, ax = plt.subplots(figsize=(7, 3.5), dpi=110)
    t = np.asarray(curve["thresholds"], dtype=np.float64)
    def column(key):
        values = np.asarray([np.nan if v is None else v for v in curve.get(key) or []], dtype=np.float64)
        return values if len(values) == len(t) else None

    for key, colour in (("precision", "#aa3377"), ("recall", "#66ccee")):
        if (values := column(key)) is not None:
            ax.plot(t, values, color=colour, label=f"estimated {key}")
    low, high = column("precision_low"), column("precision_high")
    if low is not None and high is not None:
        ax.fill_between(t, low, high, color="#aa3377", alpha=0.2, linewidth=0, label="precision, 80 % interval")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel(f"threshold ({xlabel})")
    ax.set_ylabel("share")
    ax.set_title(f"Estimated precision and recall ({curve.get('method', 'estimate')})")
    _mark(ax, threshold, label=True)
    recommended = curve.get("recommended_threshold")
    if isinstance(recommended, (int, float)) and not _same_threshold(recommended, threshold):
        ax.axvline(recommended, color="#228833", linestyle=":", label=f"recommended {recommended:g}")
    ax.legend(loc="lower left")
    est.tight_layout()
    return est


def _samples(inputs: ReportInputs, seed: int = 0) -> list[tuple[str, list[tuple[float, str, str, str, str]]]]:
    """A few pairs from each score band (quantiles of the scores), with their documents ("" without)."""
    if not len(inputs.scores):
        return []
    rng = random.Random(seed)
    edges = np.quantile(inputs.scores, np.linspace(1, 0, BANDS + 1))
    out = []
    for hi, lo in zip(edges[:-1], edges[1:], strict=True):
        rows = [i for i in range(len(inputs.scores)) if lo <= inputs.scores[i] <= hi]
        picked = sorted(rng.sample(rows, min(SAMPLES_PER_BAND, len(rows))), key=lambda i: -inputs.scores[i])
        out.append((f"{lo:.3f} – {hi:.3f}", [(inputs.scores[i], inputs.src[i], inputs.tgt[i],
                                              inputs.src_docs[i] if inputs.src_docs else "",
                                              inputs.tgt_docs[i] if inputs.tgt_docs else "") for i in picked]))
    return out


def write_report(inputs: ReportInputs, output: str | Path, title: str = "bitextmine mining report",
                 calibration: dict | None = None) -> list[Path]:
    """Write the HTML page and its PNG files; return the paths written.

    Everything is drawn in memory first, so a failure writes nothing. The PNGs go beside
    a regular output only; ``-`` (standard output) or a device gets the page alone (its
    images are embedded anyway). ``calibration``: a loaded ``calibrate --json`` whose
    curve is plotted instead of mine's estimate.
    """
    from matplotlib import pyplot as plt  # matplotlib: 1.1 s, for the report's figures only

    threshold = (inputs.params or {}).get("parameters", {}) or {}
    threshold = threshold.get("threshold")
    dist = score_distribution(inputs)
    curve = precision_curve(inputs.params, calibration)
    pngs = {}
    for name, fig in _figures(inputs, threshold, dist, curve).items():
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png")
        plt.close(fig)
        pngs[name] = buffer.getvalue()
    images = {name: base64.b64encode(data).decode("ascii") for name, data in pngs.items()}
    page = _page(inputs, images, title, dist, _threshold_text(inputs.params, curve))
    if not is_regular_output(output):
        write_text(output, page)
        return [Path(output)]
    output = Path(output)
    created = [p for p in [output.parent, *output.parent.parents] if not p.exists()]
    try:
        try:
            output.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise write_error(e, output.parent) from None
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


def _threshold_text(params: dict | None, curve: dict | None) -> str:
    parameters = (params or {}).get("parameters") or {}
    if "threshold" not in parameters:
        return "No threshold recorded (no sidecar JSON)."
    threshold, how = parameters["threshold"], parameters.get("threshold_source", "not recorded how it was chosen")
    text = (f"Threshold in use: {threshold:g} ({how})." if threshold is not None
            else f"No pair kept ({how}).")
    if curve is not None:
        recommended, precision = curve.get("recommended_threshold"), _recommended_precision(curve)
        if isinstance(recommended, (int, float)) and not _same_threshold(recommended, threshold):
            text += f" Recommended by the estimate: {recommended:g}"
            text += f" (estimated precision {precision:.2f})." if isinstance(precision, (int, float)) else "."
        if curve.get("warning"):
            text += f" The estimate cannot be trusted: {curve['warning']}."
    warning = (params or {}).get("threshold_warning")
    if warning and warning not in how:  # a fallback's source already says why
        text += f" Warning: {warning}."
    return text


def _recommended_precision(curve: dict) -> float | None:
    """Its estimated precision: ``estimated_precision`` in mine's sidecar, ``recommended_precision`` in calibrate's."""
    return curve.get("estimated_precision", curve.get("recommended_precision"))


def _same_threshold(recommended: float, threshold: float | None) -> bool:
    """Equal but for the sidecar's rounding (5 decimals) or float32 scores summed in another order."""
    return threshold is not None and math.isclose(recommended, threshold, rel_tol=1e-6, abs_tol=1e-5)


def _page(inputs: ReportInputs, images: dict[str, str], title: str, dist: Distribution, threshold_text: str) -> str:
    """The HTML page, from templates/report.html; every value is escaped by the template engine."""
    import jinja2  # jinja2: for the report's page only

    scores = inputs.scores
    summary = [("pairs", f"{len(scores):,}")]
    if len(scores):
        summary += [("score max", f"{scores.max():.4f}"), ("median", f"{np.median(scores):.4f}"),
                    ("min", f"{scores.min():.4f}")]
    lengths = (inputs.params or {}).get("length_agreement")  # checked by _Sidecar
    if lengths and lengths.get("dropped") and lengths.get("typical_ratio") is not None:
        band = lengths.get("band") or lengths.get("ratio") or 0
        summary.append(("dropped for their lengths", f"{lengths['dropped']:,} (more than {band:.2f}x off the "
                                                     f"typical ratio {lengths['typical_ratio']:.2f})"))
        written = lengths.get("estimated_precision_written")
        if isinstance(written, (int, float)):
            summary.append(("estimated precision of the pairs written", f"{written:.2f} (the dropped pairs counted "
                                                                        "as false)"))
    if inputs.src_docs is not None:
        summary += [("source documents", f"{len(set(inputs.src_docs) - {''}):,}"),
                    ("target documents", f"{len(set(inputs.tgt_docs) - {''}):,}")]
    parameters = None
    if inputs.params:
        plotted = ("score_histogram", "threshold_estimate")  # shown above, too long to print
        parameters = json.dumps({k: v for k, v in inputs.params.items() if k not in plotted}, indent=2)
    environment = jinja2.Environment(loader=jinja2.PackageLoader("bitextmine.evaluate"), autoescape=True,
                                     undefined=jinja2.StrictUndefined)
    return environment.get_template("report.html").render(
        title=title, summary=summary, threshold_text=threshold_text, distribution_label=dist.label,
        images=images, estimate_image=images.get(ESTIMATE_FIGURE), samples=_samples(inputs),
        documents=inputs.src_docs is not None,
        filter_report=inputs.filter_report, parameters=parameters, version=__version__)
