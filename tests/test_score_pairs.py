"""`bitextmine score-pairs`: margins for a given bitext, from monolingual pools."""

import numpy as np

from tests.conftest import EXAMPLES, read_lines


def test_score_pairs_matches_mining_and_separates_true_from_false(cli, tmp_path):
    for side in ("de", "en"):
        assert cli("embed", EXAMPLES / f"{side}.txt", "-o", tmp_path / side, "-q").exit_code == 0
    de, en = read_lines(EXAMPLES / "de.txt"), read_lines(EXAMPLES / "en.txt")
    gold = [tuple(int(x) - 1 for x in line.split("\t")) for line in read_lines(EXAMPLES / "gold.tsv")]
    true_pairs = [(de[d], en[e]) for d, e in gold[:40]]
    false_pairs = [(de[d], en[gold[(i + 1) % 40][1]]) for i, (d, _) in enumerate(gold[:40])]
    bitext = tmp_path / "crawl.tsv"
    bitext.write_text("".join(f"{a}\t{b}\n" for a, b in true_pairs + false_pairs))

    result = cli("score-pairs", bitext, "--src-pool", tmp_path / "de", "--tgt-pool", tmp_path / "en",
                 "-o", tmp_path / "scored.tsv")
    assert result.exit_code == 0, result.stderr
    rows = [line.split("\t") for line in (tmp_path / "scored.tsv").read_text().splitlines()]
    assert [(r[1], r[2]) for r in rows] == true_pairs + false_pairs  # input order kept
    scores = np.array([float(r[0]) for r in rows])
    assert np.median(scores[:40]) > 1.14 > np.median(scores[40:])
    assert (scores[:40] > scores[40:]).mean() > 0.9

    # the same formula as mining: a pair mined from these pools gets the same score
    assert cli("mine", "--src", tmp_path / "de", "--tgt", tmp_path / "en", "-o", tmp_path / "mined.tsv", "-q",
               "--threshold", "1.0").exit_code == 0
    mined = {(r[1], r[2]): float(r[0]) for r in
             (line.split("\t") for line in (tmp_path / "mined.tsv").read_text().splitlines())}
    shared = [(i, mined[p]) for i, p in enumerate(true_pairs) if p in mined]
    assert len(shared) > 30
    for i, score in shared:
        assert abs(scores[i] - score) < 2e-3

    # and the output feeds the filter as it is
    assert cli("filter", tmp_path / "scored.tsv", "-o", tmp_path / "kept.tsv", "--max-score", "5", "-q") \
        .exit_code == 0
