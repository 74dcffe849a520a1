"""`bitextmine score-pairs`: margins for a given bitext, from monolingual pools."""

import numpy as np
import pytest

from bitextmine.encoders.usem3 import MINING_THRESHOLDS
from tests.conftest import EXAMPLES, read_lines


@pytest.mark.parametrize("pairs", [pytest.param(40, marks=pytest.mark.slow), 15])
def test_score_pairs_matches_mining_and_separates_true_from_false(cli, tmp_path, pairs):
    """Pools of the whole of examples/ and 40 true pairs (slow), or of the 15 true pairs'
    sentences and 60 others a side."""
    de, en = read_lines(EXAMPLES / "de.txt"), read_lines(EXAMPLES / "en.txt")
    gold = [tuple(int(x) - 1 for x in line.split("\t")) for line in read_lines(EXAMPLES / "gold.tsv")]
    if pairs == 40:
        pools = {"de": de, "en": en}
    else:
        used_de, used_en = {d for d, _ in gold[:pairs]}, {e for _, e in gold[:pairs]}
        pools = {"de": [de[i] for i in sorted(used_de | set(range(300, 360)))],
                 "en": [en[i] for i in sorted(used_en | set(range(300, 360)))]}
    for side, lines in pools.items():
        (tmp_path / f"{side}.txt").write_text("".join(f"{x}\n" for x in lines))
        assert cli("embed", tmp_path / f"{side}.txt", "-o", tmp_path / side, "-q").exit_code == 0
    true_pairs = [(de[d], en[e]) for d, e in gold[:pairs]]
    false_pairs = [(de[d], en[gold[(i + 1) % pairs][1]]) for i, (d, _) in enumerate(gold[:pairs])]
    bitext = tmp_path / "crawl.tsv"
    bitext.write_text("".join(f"{a}\t{b}\n" for a, b in true_pairs + false_pairs))

    result = cli("score-pairs", bitext, "--src", tmp_path / "de", "--tgt", tmp_path / "en",
                 "-o", tmp_path / "scored.tsv")
    assert result.exit_code == 0, result.stderr
    rows = [line.split("\t") for line in (tmp_path / "scored.tsv").read_text().splitlines()]
    assert [(r[1], r[2]) for r in rows] == true_pairs + false_pairs  # input order kept
    scores = np.array([float(r[0]) for r in rows])
    assert (scores[:pairs] > scores[pairs:]).mean() > 0.9
    if pairs == 40:  # pools of realistic size: the encoder's fixed threshold falls between the two
        assert np.median(scores[:pairs]) > MINING_THRESHOLDS["distance"] > np.median(scores[pairs:])

    # the same formula as mining: a pair mined from these pools gets the same score
    assert cli("mine", "--src", tmp_path / "de", "--tgt", tmp_path / "en", "-o", tmp_path / "mined.tsv", "-q",
               "--threshold", "0.0").exit_code == 0
    mined = {(r[1], r[2]): float(r[0]) for r in
             (line.split("\t") for line in (tmp_path / "mined.tsv").read_text().splitlines())}
    shared = [(i, mined[p]) for i, p in enumerate(true_pairs) if p in mined]
    assert len(shared) > 0.75 * pairs
    for i, score in shared:
        assert abs(scores[i] - score) <= 2e-6  # exactly: the pools' own vectors and distinct sentences

    # and the output feeds the filter as it is
    assert cli("filter", tmp_path / "scored.tsv", "-o", tmp_path / "kept.tsv", "--max-score", "5", "-q") \
        .exit_code == 0
