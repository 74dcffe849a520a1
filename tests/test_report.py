"""`bitextmine report`: one self-contained HTML page with its plots."""

import base64
import re

from tests.conftest import EXAMPLES


def test_report_holds_plots_samples_filter_counts_and_parameters(cli, tmp_path):
    for side in ("de", "en"):
        assert cli("embed", EXAMPLES / f"{side}.txt", "-o", tmp_path / side, "-q").exit_code == 0
    assert cli("mine", "--src", tmp_path / "de", "--tgt", tmp_path / "en", "-o", tmp_path / "p.tsv", "--filter",
               "--score", "ratio", "--threshold", "1.0", "-q").exit_code == 0
    result = cli("report", tmp_path / "p.tsv", "-o", tmp_path / "r" / "report.html")
    assert result.exit_code == 0, result.stderr
    page = (tmp_path / "r" / "report.html").read_text()
    images = re.findall(r"src='data:image/png;base64,([^']+)'", page)
    assert len(images) == 2
    for name, data in zip(("scores", "kept"), images, strict=True):
        png = (tmp_path / "r" / f"report.{name}.png").read_bytes()
        assert png.startswith(b"\x89PNG") and base64.b64decode(data) == png  # embedded = written
    assert "http" not in page.split("<h2>Parameters")[0]  # nothing fetched from a server
    # samples from every score band, with text from the mined file
    assert page.count("<h3>score ") == 5
    import html

    mined_sources = {line.split("\t")[1] for line in (tmp_path / "p.tsv").read_text().splitlines()}
    sampled = re.findall(r"<tr><td class='num'>[\d.]+</td><td>(.*?)</td>", page)
    assert len(sampled) == 5 * 4 and all(html.unescape(text) in mined_sources for text in sampled)
    # filter counts and parameters from the sidecar
    assert "<h2>Filter</h2>" in page and "dedup" in page
    assert '"retrieval": "max"' in html.unescape(page) and '"threshold": 1.0' in html.unescape(page)
    # --json: the page's figures
    import json

    assert cli("report", tmp_path / "p.tsv", "-o", tmp_path / "r" / "again.html", "--json",
               tmp_path / "r.json").exit_code == 0
    counts = json.loads((tmp_path / "r.json").read_text())
    scores = [float(line.split("\t")[0]) for line in (tmp_path / "p.tsv").read_text().splitlines()]
    assert counts["pairs"] == len(scores) and counts["score"]["min"] == min(scores) >= 1.0
    assert counts["threshold"] == 1.0 and counts["filter"]["kept"] == len(scores) <= counts["filter"]["total"]


def test_report_of_an_empty_mining_result(cli, tmp_path):
    (tmp_path / "p.tsv").write_text("")
    result = cli("report", tmp_path / "p.tsv", "-o", tmp_path / "r.html")
    assert result.exit_code == 0, result.stderr
    assert "<th>pairs</th><td class='num'>0</td>" in (tmp_path / "r.html").read_text()


def test_report_of_a_chosen_threshold_plots_every_score_and_the_estimate(cli, tmp_path):
    import json

    import numpy as np

    from tests.conftest import make_embedding_set
    from tests.test_mine import synthetic_pools

    x, y = synthetic_pools(1500, 150)
    make_embedding_set(tmp_path / "x", x)
    make_embedding_set(tmp_path / "y", y)
    assert cli("mine", "--src", tmp_path / "x", "--tgt", tmp_path / "y", "-o", tmp_path / "p.tsv", "-q",
               "--device", "cpu").exit_code == 0
    meta = json.loads((tmp_path / "p.tsv.json").read_text())
    everything = sum(meta["score_histogram"]["counts"])
    kept = len((tmp_path / "p.tsv").read_text().splitlines())
    assert everything > 2 * kept  # the histogram holds the pairs below the threshold too
    result = cli("report", tmp_path / "p.tsv", "-o", tmp_path / "r.html")
    assert result.exit_code == 0, result.stderr
    page = (tmp_path / "r.html").read_text()
    assert f"Histogram of all {everything:,} pairs the retrieval selected before the threshold" in page
    assert f"Threshold in use: {meta['parameters']['threshold']:g} (adaptive: estimated precision" in page
    assert "Recommended by the estimate" not in page  # the one in use, rounded in the sidecar
    assert len(re.findall(r"src='data:image/png;base64,", page)) == 3  # scores, kept, estimate
    assert "<h2>Estimated precision and recall</h2>" in page
    assert "score_histogram" not in page.split("<h2>Parameters")[1]  # plotted, not dumped

    # a calibrate --json curve replaces mine's estimate; a broken one is one error line
    curve = {"method": "seeds", "thresholds": [1.0, 1.1, 1.2], "precision": [0.5, 0.8, 0.95],
             "recall": [0.9, 0.8, 0.6]}
    (tmp_path / "cal.json").write_text(json.dumps(curve))
    assert cli("report", tmp_path / "p.tsv", "-o", tmp_path / "c.html", "--calibration",
               tmp_path / "cal.json").exit_code == 0
    assert (tmp_path / "c.estimate.png").read_bytes().startswith(b"\x89PNG")
    for text, message in (("[1, 2]", "a JSON object is expected"), ('{"method": "seeds"}',
                                                                      "not a `bitextmine calibrate --json` file")):
        (tmp_path / "bad.json").write_text(text)
        bad = cli("report", tmp_path / "p.tsv", "-o", tmp_path / "b.html", "--calibration", tmp_path / "bad.json")
        assert bad.exit_code == 1 and message in bad.stderr and not (tmp_path / "b.html").exists()
    assert np.isfinite(meta["parameters"]["threshold"])


def test_the_threshold_text_says_a_fallback_once_and_a_recommendation_where_it_differs():
    from bitextmine.evaluate.report import _threshold_text

    why = "the gaps set the translations apart weakly"
    fallback = {"parameters": {"threshold": 0.0424724538, "threshold_source": f"adaptive (best F1): {why}"},
                "threshold_warning": why}
    text = _threshold_text(fallback, {"recommended_threshold": 0.04247, "estimated_precision": 0.47})
    assert text.count(why) == 1 and "Recommended" not in text
    given = {"parameters": {"threshold": 0.1, "threshold_source": "given (--threshold)"}}
    text = _threshold_text(given, {"recommended_threshold": 0.04247, "estimated_precision": 0.9})
    assert text == ("Threshold in use: 0.1 (given (--threshold)). Recommended by the estimate: 0.04247 "
                    "(estimated precision 0.90).")


def test_the_axis_is_named_by_the_margin():
    from bitextmine.evaluate.report import score_name

    assert score_name({"parameters": {"score": "ratio"}}) == "ratio margin"
    assert score_name({"parameters": {"score": "cosine"}}) == "cosine"
    assert score_name({"parameters": {"score": "distance"}}) == "distance margin"
    assert score_name(None) == "score"


def test_report_escapes_the_text_of_mined_pairs(cli, tmp_path):
    """Mined text is data: markup in a sentence shows as text, it never runs."""
    (tmp_path / "p.tsv").write_text("1.3\t<script>alert(1)</script>\tA & B <b>bold</b>\n")
    result = cli("report", tmp_path / "p.tsv", "-o", tmp_path / "r.html")
    assert result.exit_code == 0, result.stderr
    page = (tmp_path / "r.html").read_text()
    assert "<script>" not in page and "<b>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "A &amp; B &lt;b&gt;bold&lt;/b&gt;" in page


def test_a_sidecar_with_figures_of_the_wrong_kind_is_one_line(cli, tmp_path):
    import json

    from tests.conftest import make_embedding_set
    from tests.test_mine import synthetic_pools

    x, y = synthetic_pools(600, 60)
    make_embedding_set(tmp_path / "x", x)
    make_embedding_set(tmp_path / "y", y)
    assert cli("mine", "--src", tmp_path / "x", "--tgt", tmp_path / "y", "-o", tmp_path / "p.tsv", "-q").exit_code == 0
    sidecar = tmp_path / "p.tsv.json"
    good = json.loads(sidecar.read_text())
    edits = {"score_histogram: must be a mapping": lambda d: d.update(score_histogram="x"),
             "score_histogram.edges.0: must be a finite number": lambda d: d["score_histogram"]["edges"].__setitem__(
                 0, float("nan")),
             "score_histogram.counts.0": lambda d: d["score_histogram"]["counts"].__setitem__(0, 10**30),
             "threshold_estimate.precision.0: must be a number": lambda d: d["threshold_estimate"]["precision"]
             .__setitem__(0, "a")}
    for message, edit in edits.items():
        broken = json.loads(json.dumps(good))
        edit(broken)
        sidecar.write_text(json.dumps(broken))
        result = cli("report", tmp_path / "p.tsv", "-o", tmp_path / "r.html", "-q")
        assert result.exit_code == 1 and not (tmp_path / "r.html").exists()
        assert result.stderr.strip().startswith(f"bitextmine: error: {sidecar}: {message}"), result.stderr
        assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1


def test_report_refuses_files_of_another_kind_and_a_json_over_its_own_pngs(cli, tmp_path):
    import json

    from tests.conftest import make_embedding_set
    from tests.test_mine import synthetic_pools

    x, y = synthetic_pools(600, 60)
    make_embedding_set(tmp_path / "x", x)
    make_embedding_set(tmp_path / "y", y)
    assert cli("mine", "--src", tmp_path / "x", "--tgt", tmp_path / "y", "-o", tmp_path / "p.tsv", "-q").exit_code == 0
    (tmp_path / "other.json").write_text(json.dumps({"method": "seeds", "thresholds": [0.1]}))
    for option, kind in (("--meta", "not a mining sidecar"), ("--filter-report", "not a filter report")):
        result = cli("report", tmp_path / "p.tsv", "-o", tmp_path / "r.html", option, tmp_path / "other.json", "-q")
        assert result.exit_code == 1 and not (tmp_path / "r.html").exists()
        assert result.stderr.startswith(f"bitextmine: error: {tmp_path / 'other.json'}: {kind}"), result.stderr
    # the mining sidecar given as the filter report: it holds no filter counts
    result = cli("report", tmp_path / "p.tsv", "-o", tmp_path / "r.html", "--filter-report", tmp_path / "p.tsv.json")
    assert result.exit_code == 1 and "not a filter report" in result.stderr
    for png in ("r.scores.png", "r.kept.png", "r.estimate.png"):
        result = cli("report", tmp_path / "p.tsv", "-o", tmp_path / "r.html", "--json", tmp_path / png, "-q")
        assert result.exit_code == 1 and "given for two outputs" in result.stderr and not (tmp_path / png).exists()
