"""`bitextmine report`: one self-contained HTML page with its plots."""

import base64
import re

from tests.conftest import EXAMPLES


def test_report_holds_plots_samples_filter_counts_and_parameters(cli, tmp_path):
    for side in ("de", "en"):
        assert cli("embed", EXAMPLES / f"{side}.txt", "-o", tmp_path / side, "-q").exit_code == 0
    assert cli("mine", "--src", tmp_path / "de", "--tgt", tmp_path / "en", "-o", tmp_path / "p.tsv", "--filter",
               "--threshold", "1.0", "-q").exit_code == 0
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


def test_report_of_an_empty_mining_result(cli, tmp_path):
    (tmp_path / "p.tsv").write_text("")
    result = cli("report", tmp_path / "p.tsv", "-o", tmp_path / "r.html")
    assert result.exit_code == 0, result.stderr
    assert "<th>pairs</th><td class='num'>0</td>" in (tmp_path / "r.html").read_text()
