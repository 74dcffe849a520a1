"""`bitextmine adapt`: settings, the head split, the loss, rounds, stopping, resume, students, the command."""

from __future__ import annotations

import contextlib
import json
import os
import shutil

import numpy as np
import pytest
import torch

from bitextmine.adapt.config import AdaptConfig
from bitextmine.adapt.loop import adapt, best_round, keep_message, pooled_held_out_scores, stop_message, stop_reason
from bitextmine.adapt.objective import hard_negatives, ranking
from bitextmine.adapt.pools import read_pool
from bitextmine.adapt.rounds import RoundRecord
from bitextmine.errors import BitextmineError
from tests.conftest import EXAMPLES

# a run small enough for a test: a few steps on the examples' 500 x 500 sentences
TINY = dict(trainable="head", steps=4, batch_size=64, hard_negatives=2, pool_negatives=64, target_precision=0.9,
            src_lang="de", tgt_lang="en", device="cpu")


def record(number: int, kept: int, added: int = 0, dropped: int = 0, gain: float | None = 0.01,
           seconds: float = 1.0, source: str = "adaptive") -> RoundRecord:
    """A round whose held-out estimate rose by ``gain`` over the previous round's model."""
    return RoundRecord(round=number, pairs=kept, kept=kept, added=added, dropped=dropped, threshold=1.2,
                       threshold_reason="test", estimated_f1=0.99, trained_pairs=0, self_scored_share=0.0,
                       seconds=seconds, held_out_f1=None if gain is None else 0.8 + gain,
                       held_out_f1_before=None if gain is None else 0.8, threshold_source=source)


# --- settings, pools ---------------------------------------------------------------------------

@pytest.mark.parametrize("bad, message", [
    (dict(rounds=0), "--rounds must be at least 1"),
    (dict(target_precision=1.0), "--target-precision must be between 0 and 1"),
    (dict(lr=-1.0), "--lr must be >= 0"),
    (dict(held_out=1.0), "--held-out must be below 1"),
    (dict(held_out=-0.1), "--held-out must be >= 0"),
    (dict(max_minutes=float("nan")), "finite"),
    (dict(src_lang="xx-not"), "xx-not"),
])
def test_settings_are_checked_before_any_work(bad, message):
    with pytest.raises(BitextmineError, match=message):
        AdaptConfig(**bad)


def test_a_resumed_run_may_change_the_rounds_and_time_but_not_what_was_trained():
    signature = AdaptConfig().run_signature()
    assert signature == AdaptConfig(rounds=9, max_minutes=5.0).run_signature()
    assert signature != AdaptConfig(lr=1e-3).run_signature()


def test_the_training_pairs_keep_their_target_precision_where_mine_would_give_it_up():
    """mine takes the best F1 when the target costs more than its tolerance of F1; the pairs a
    round trains on keep the target (a wrong pair is learned)."""
    from bitextmine.mine.no_gold import NoGoldEstimate
    from bitextmine.mine.thresholds import choose_from_estimate

    estimate = NoGoldEstimate(np.array([1.0, 1.1, 1.2, 1.3]), np.array([0.80, 0.88, 0.92, 0.98]),
                              np.array([0.95, 0.9, 0.85, 0.5]), np.array([100, 80, 60, 40]),
                              np.array([20, 10, 5, 1]), 100.0,
                              details={"mixtures": [{"separation": 9.0}] * 2, "translations_by_side": [100, 100]})
    adapt_cfg = AdaptConfig().for_encoder("usem3")
    mine_cfg = adapt_cfg.mine_config("cpu")
    assert mine_cfg.target_precision == adapt_cfg.target_precision == 0.97
    loose = choose_from_estimate(estimate, 0.97, 1.14, "fixed")  # mine's own tolerance
    strict = choose_from_estimate(estimate, 0.97, 1.14, "fixed", mine_cfg.target_f1_tolerance)
    assert loose.threshold == 1.1 and "best F1" in loose.reason  # F1 0.89 against 0.66 at 1.3
    assert strict.threshold == 1.3 and strict.estimated_precision == 0.98


def test_a_pool_is_its_distinct_non_blank_sentences_in_order(tmp_path):
    path = tmp_path / "pool.txt"
    path.write_text("b\n\n  a \nb\nc\n", encoding="utf-8")
    pool = read_pool(str(path))
    assert pool.texts == ["b", "a", "c"] and pool.lines == 5
    path.write_text("only\n\nonly\n", encoding="utf-8")
    with pytest.raises(BitextmineError, match="1 distinct sentence"):
        read_pool(str(path))


# --- the network's head ------------------------------------------------------------------------

def test_the_forward_pass_is_the_head_of_the_sentence_features():
    from bitextmine.encoders.usem3 import USEm3Encoder, packed_tokens

    encoder = USEm3Encoder(device="cpu", precision="fp32")
    ids = encoder.tokenize(["Guten Morgen.", "Ein etwas längerer Satz über das Wetter von morgen."])
    flat, lengths = packed_tokens(ids, "cpu")
    net = encoder.network
    with torch.inference_mode():
        whole = net(flat, lengths)
        split = net.head(net.sentence_features(flat, lengths), lengths)
    assert torch.equal(whole, split)
    assert {name for name, _ in net.named_parameters()} >= set(net.HEAD_PARAMETERS)


# --- the loss and the negatives -----------------------------------------------------------------

def test_ranking_is_the_cross_entropy_of_the_margin_softmax_and_masks_twins():
    queries = torch.nn.functional.normalize(torch.tensor([[1.0, 0.0], [0.0, 1.0]]), dim=1)
    candidates = torch.nn.functional.normalize(torch.tensor([[1.0, 0.1], [0.1, 1.0], [1.0, 0.0]]), dim=1)
    positive = torch.tensor([0, 1])
    none = torch.zeros(2, 3, dtype=torch.bool)
    sims = queries @ candidates.T - 0.3 * torch.nn.functional.one_hot(positive, 3)
    expected = torch.nn.functional.cross_entropy(20 * sims, positive)
    assert torch.allclose(ranking(queries, candidates, positive, none, 0.3, 20.0), expected)
    # candidate 2 is nearly query 0's partner: masked, it no longer competes
    twin = torch.tensor([[False, False, True], [False, False, False]])
    assert ranking(queries, candidates, positive, twin, 0.3, 20.0) < expected


def test_hard_negatives_are_the_nearest_others_never_the_partner():
    rng = np.random.default_rng(0)
    database = rng.normal(size=(20, 8)).astype(np.float32)
    database /= np.linalg.norm(database, axis=1, keepdims=True)
    queries = database[[3, 7]] + 0.01
    found = hard_negatives(queries, database, np.array([3, 7]), 4, "cpu").numpy()
    assert found.shape == (2, 4)
    assert 3 not in found[0] and 7 not in found[1]
    sims = queries[0] @ database.T
    assert list(found[0]) == [i for i in np.argsort(-sims) if i != 3][:4]


# --- stopping and the best round ------------------------------------------------------------------

def test_the_loop_stops_when_the_pairs_stop_changing_or_the_held_out_estimate_stops_rising():
    cfg = AdaptConfig(rounds=5)
    assert stop_reason([record(0, 100)], cfg, started=0.0) is None
    assert stop_reason([record(0, 100), record(1, 120, added=20)], cfg, 0.0) is None
    assert stop_reason([record(0, 100), record(1, 100, added=1)], cfg, 0.0) == "pairs_stable"
    # the self-scored estimate of every round is 0.99: only the held-out one decides
    assert stop_reason([record(0, 100), record(1, 130, added=30, gain=0.0005)], cfg, 0.0) == "estimate_stable"
    assert stop_reason([record(0, 100), record(1, 130, added=30, gain=-0.02)], cfg, 0.0) == "estimate_stable"
    blind = record(1, 130, added=30, gain=0.0)
    blind.held_out_f1 = blind.held_out_f1_before = 0.0  # neither model finds translations among the held-out
    assert stop_reason([record(0, 100), blind], cfg, 0.0) == "held_out_blind"
    assert "--held-out" in stop_message("held_out_blind", [record(0, 100), blind])
    assert stop_reason([record(0, 1)], cfg, 0.0) == "too_few_pairs"
    assert stop_reason([record(0, 0, source="none")], cfg, 0.0) == "no_translations"
    unseen = record(0, 0, source="fallback")
    unseen.translations_seen = False  # the encoder's threshold where the estimate saw no translations
    assert stop_reason([unseen], cfg, 0.0) == "no_translations"
    assert stop_reason([record(0, 1, source="fallback")], cfg, 0.0) == "too_few_pairs"
    assert stop_reason([record(0, 100), record(1, 140, added=40)], AdaptConfig(rounds=1), 0.0) == "rounds"


def test_a_round_that_would_pass_the_time_limit_is_not_started():
    import time

    cfg = AdaptConfig(rounds=5, max_minutes=1.0)
    now = time.monotonic()
    records = [record(0, 100), record(1, 130, added=30, seconds=50.0)]
    assert stop_reason(records, cfg, started=now - 5) is None  # 5 s in, the next round takes ~50 s
    assert stop_reason(records, cfg, started=now - 20) == "time_budget"


def test_the_best_round_is_the_best_held_out_estimate_the_earliest_of_equals():
    rounds = [record(0, 10), record(1, 12), record(2, 12), record(3, 9)]
    assert best_round(rounds, [0.90, 0.95, 0.95, 0.93]).round == 1
    assert best_round(rounds, [0.96, 0.95, 0.95, 0.93]).round == 0  # training that did not generalise
    assert best_round(rounds[:2], [None, None]).round == 0
    # a trained round must beat the start by the keep gain: below it the estimate flatters it
    assert best_round(rounds, [0.90, 0.96, 0.96, 0.93], min_gain=0.05).round == 1
    assert best_round(rounds, [0.90, 0.94, 0.93, 0.93], min_gain=0.05).round == 0
    assert best_round(rounds, [None, 0.95, 0.95, 0.93], min_gain=0.05).round == 0
    # a negative keep gain: the best trained round is kept unless it falls that much under the start
    assert best_round(rounds, [0.881, 0.878, 0.870, 0.860], min_gain=-0.01).round == 1
    assert best_round(rounds, [0.881, 0.860, 0.865, 0.850], min_gain=-0.01).round == 0
    assert best_round(rounds, [0.881, 0.878, 0.870, 0.860], min_gain=0.0).round == 0


def test_a_round_is_judged_by_its_held_out_readings_that_found_translations():
    rounds = [record(0, 10), record(1, 12), record(2, 12), record(3, 9)]
    for r, (own, before) in zip(rounds, [(None, None), (0.813, 0.650), (0.858, 0.813), (0.749, 0.859)],
                                strict=True):
        r.held_out_f1, r.held_out_f1_before = own, before
    # the end's reading of round 1 lost the group of translations the loop's two readings found
    pooled = pooled_held_out_scores([0.655, 0.0, 0.859, 0.749], rounds)
    assert pooled == pytest.approx([0.6525, 0.813, (0.859 + 0.858 + 0.859) / 3, 0.749], abs=1e-5)
    assert best_round(rounds, pooled, -0.03).round == 2
    # a round no reading found translations with stays 0 (a start blind to them is a gain to beat), an
    # unread one None
    rounds[1].held_out_f1 = rounds[2].held_out_f1_before = 0.0
    rounds[1].held_out_f1_before = None
    assert pooled_held_out_scores([None, 0.0, 0.9, 0.8], rounds)[:2] == [None, 0.0]
    assert pooled_held_out_scores([0.0, 0.0, 0.9, 0.8], rounds)[0] == 0.0


def test_the_kept_round_says_why_it_was_kept():
    rounds = [record(0, 10), record(1, 12), record(2, 12)]

    def why(scores, min_gain=0.05):
        return keep_message(best_round(rounds, scores, min_gain), rounds, scores, min_gain)

    assert why([0.90, 0.96, 0.95]) == "the best held-out estimate of the trained rounds, 96.0, against 90.0 at round 0"
    assert why([0.881, 0.878, 0.870], -0.01) == ("the best held-out estimate of the trained rounds, 87.8, against "
                                                 "88.1 at round 0, within the 1 point a trained round may lose "
                                                 "(--min-keep-gain)")
    assert why([0.881, 0.860, 0.865], -0.01) == ("no trained round came within 1 point of round 0's held-out "
                                                 "estimate 88.1 (round 2: 86.5; --min-keep-gain -0.01)")
    # round 1 rose, but by less than the keep gain: not "did not raise the estimate"
    assert why([0.884, 0.890, 0.886]) == ("round 1 raised the held-out estimate by 0.6 points, less than "
                                          "--min-keep-gain 0.05 (5 points)")
    assert why([0.55, 0.0, 0.40]) == "no trained round raised the held-out estimate above round 0's 55.0"
    assert why([None, 0.95, 0.93]) == "the held-out pools gave no estimate to judge a trained round by"
    assert keep_message(rounds[0], rounds[:1], [None], 0.05) == "no round was trained"


# --- a whole run -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("adapt") / "run"
    return out, adapt_examples(out, AdaptConfig(rounds=2, **TINY))


def copied_run(out, tmp_path):
    """A copy of the run in ``out`` to resume, and when its round 1 was recorded."""
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    return copy, (copy / "state" / "round-001.json").stat().st_mtime_ns


def adapt_examples(out, cfg: AdaptConfig, resume: bool = False) -> dict:
    """``adapt`` on the examples' pools, every round asked for run."""
    with every_round_asked():
        return adapt(str(EXAMPLES / "de.txt"), str(EXAMPLES / "en.txt"), "usem3", out, cfg, resume=resume,
                     progress=False)


@contextlib.contextmanager
def every_round_asked():
    """Runs every round asked for: after 4 steps the held-out estimate may not rise, and the
    rounds' files are what these tests read (the stops have a test of their own)."""
    from bitextmine.adapt import loop

    original = loop.stop_reason

    def stop_reason(records, cfg, started):
        reason = original(records, cfg, started)
        return None if reason in ("pairs_stable", "estimate_stable", "held_out_blind") else reason

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(loop, "stop_reason", stop_reason)
        yield


def reopened(out):
    """The state of the run in ``out``, the model it trained and its pools' sides (features kept by the run)."""
    from bitextmine.adapt.model import AdaptedEncoder
    from bitextmine.adapt.rounds import AdaptState
    from bitextmine.adapt.sides import make_side

    state, cfg = AdaptState(out), AdaptConfig(**TINY)
    model = AdaptedEncoder("usem3", "de", "en", "cpu")
    pools = read_pool(str(EXAMPLES / "de.txt")), read_pool(str(EXAMPLES / "en.txt"))
    sides = [make_side(model, i, p.texts, f"pool-{n}", state.state, cfg, False)
             for i, (p, n) in enumerate(zip(pools, ("src", "tgt"), strict=True))]
    return state, model, sides


@pytest.mark.slow
def test_a_run_leaves_a_checkpoint_its_rounds_and_their_log(tiny_run):
    from bitextmine.adapt.rounds import AdaptState
    from bitextmine.encoders import load_encoder

    out, result = tiny_run
    log = [json.loads(line) for line in (out / "adapt_log.jsonl").read_text().splitlines()]
    assert [r["round"] for r in log] == result["rounds"] == [0, 1, 2]
    assert log[0]["trained_pairs"] == 0 and log[1]["trained_pairs"] == log[0]["kept"] > 50
    assert all(r["kept"] <= r["pairs"] for r in log)
    rows = (out / "rounds" / "round-001.tsv").read_text(encoding="utf-8").splitlines()
    assert len(rows) == log[1]["kept"] and len(rows[0].split("\t")) == 3
    encoder = load_encoder(f"ckpt:{out}")
    config = json.loads((out / "config.json").read_text())
    assert config["adapt"]["best_round"] == result["best_round"]
    # a trained round is a space of its own; round 0 is the starting encoder's
    assert (config["compatible_with"] is None) == (result["best_round"] > 0)
    assert len(result["held_out_f1"]) == 3 and log[1]["held_out_f1_before"] is not None
    # the held-out source sentences (a seeded share, drawn before round 0) are in no training pair; every round
    # is measured on them against the target sentences of no pair trained on
    from bitextmine.adapt.loop import held_out_sources

    state = AdaptState(out)
    pools = read_pool(str(EXAMPLES / "de.txt")), read_pool(str(EXAMPLES / "en.txt"))
    held = held_out_sources(len(pools[0]), AdaptConfig(**TINY))
    assert len(held) == round(AdaptConfig().held_out * len(pools[0])) > 50
    assert not any(np.isin(state.pairs(r)["src"], held).any() for r in (0, 1, 2))
    trained_tgt = np.union1d(state.pairs(0)["tgt"], state.pairs(1)["tgt"])
    assert log[2]["held_out_sentences"] == [len(held), len(pools[1]) - len(trained_tgt)]
    scores = result["held_out_f1"]
    best = max(f for f in scores if f is not None)
    kept = AdaptConfig(**TINY).min_keep_gain
    assert (result["best_round"] == 0 and (scores[0] is None or best - scores[0] < kept)) or \
        scores[result["best_round"]] == best >= scores[0] + kept
    vectors = encoder.encode(["Guten Morgen.", "Good morning."])
    assert vectors.shape == (2, 512) and np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)


@pytest.mark.slow
def test_training_pulls_the_pairs_together_and_holds_the_rest_near_the_start(tiny_run):
    from bitextmine.adapt.sides import embed_side

    state, model, sides = reopened(tiny_run[0])
    trained = state.pairs(0)
    model.load_head(state.head(1))
    x, y = (embed_side(model, side) for side in sides)

    def gap(x, y):  # each pair's cosine over the mean of its source's 4 nearest other targets
        sims = x[trained["src"]] @ y.T
        own = sims[np.arange(len(sims)), trained["tgt"]]
        sims[np.arange(len(sims)), trained["tgt"]] = -1
        return own - np.sort(sims, axis=1)[:, -4:].mean(axis=1)

    before, after = gap(sides[0].start.numpy(), sides[1].start.numpy()), gap(x, y)
    assert after.mean() > before.mean() + 0.005 and (after > before).mean() > 0.8, (before.mean(), after.mean())
    assert np.einsum("ij,ij->i", x, sides[0].start.numpy()).mean() > 0.95  # the anchor holds the pool


@pytest.mark.slow
def test_a_trained_round_mines_its_pools_keeping_as_many_pairs_as_the_start_chose(tiny_run):
    """mine's own estimate is self-scored on pools a round trained on; the starting encoder's
    threshold says how many pairs to keep (grown by the round's gain on the held-out pools),
    the trained round which ones."""
    from bitextmine.adapt.loop import pools_threshold
    from bitextmine.adapt.sides import embed_side
    from bitextmine.mine import MineConfig
    from bitextmine.mine.thresholds import mine_and_choose

    result, cfg = tiny_run[1], AdaptConfig(**TINY)
    state, model, sides = reopened(tiny_run[0])
    identities = tuple(side.identity for side in model.sides)
    records = state.rounds()
    chosen = pools_threshold(model, sides, state, records[2], cfg)
    model.load_head(state.head(0))
    start_pairs, start = mine_and_choose(*(embed_side(model, side) for side in sides), MineConfig(), identities)
    assert chosen["pairs"] == int((start_pairs.score >= start.threshold).sum()) > 50
    assert chosen["start_threshold"] == pytest.approx(start.threshold) and chosen["score"] == MineConfig().score
    model.load_head(state.head(2))
    pairs, own = mine_and_choose(*(embed_side(model, side) for side in sides), MineConfig(), identities)
    assert int((pairs.score >= chosen["threshold"]).sum()) == chosen["pairs"]
    # the held-out pools say the kept round finds more: the count grows with its gain there, at
    # most to the translations round 0 counts (or the start's count, where larger)
    start_count = chosen["pairs"]
    grown = pools_threshold(model, sides, state, records[2], cfg, held_out=[0.5, 0.55, 0.75])
    ceiling = max(start_count, round(start.estimate.translations))
    assert grown["pairs"] == min(round(1.5 * start_count), ceiling) and grown["start_pairs"] == start_count
    assert grown["held_out_growth"] == 1.5
    model.load_head(state.head(2))
    assert int((pairs.score >= grown["threshold"]).sum()) == grown["pairs"]
    fell = pools_threshold(model, sides, state, records[2], cfg, held_out=[0.5, 0.55, 0.4])
    assert fell["pairs"] == start_count  # never fewer than the start's
    # round 0 kept, or a threshold of the user's: mine's own rule stands
    assert pools_threshold(model, sides, state, records[0], cfg) is None
    assert pools_threshold(model, sides, state, records[2], cfg, MineConfig(threshold=0.2)) is None
    assert (result["pools_threshold"] is None) == (result["best_round"] == 0)


@pytest.mark.slow
def test_the_checkpoint_records_the_threshold_for_its_pools_for_mine(tmp_path):
    """What ``mine`` needs to take adapt's threshold on these pools (``mine.corpora.adapted_choice``)."""
    from bitextmine.adapt.pools import read_pool
    from bitextmine.encoders import load_encoder

    out = tmp_path / "run"
    result = adapt_examples(out, AdaptConfig(rounds=1, min_keep_gain=-0.99, **TINY))  # a trained round kept
    adapted = load_encoder(f"ckpt:{out}", device="cpu").identity.adapted_pools
    assert result["best_round"] == 1
    chosen = result["pools_threshold"]
    pools = [read_pool(str(EXAMPLES / name)) for name in ("de.txt", "en.txt")]
    assert adapted == {"threshold": chosen["threshold"], "score": chosen["score"], "k": chosen["k"],
                       "pools": [{"sentences": len(p), "sha256": p.digest()} for p in pools]}
    from bitextmine import api  # the Python API takes it as the command does, given these very pools

    lines = [(EXAMPLES / name).read_text(encoding="utf-8").splitlines() for name in ("de.txt", "en.txt")]
    _, details = api.mine(*lines, encoder=f"ckpt:{out}", src_lang="de", tgt_lang="en", details=True)
    assert details["threshold"] == chosen["threshold"] and details["threshold_source"].startswith("adapt:")
    _, details = api.mine(lines[0][:-1], lines[1], encoder=f"ckpt:{out}", src_lang="de", tgt_lang="en", details=True)
    assert not details["threshold_source"].startswith("adapt:")  # another pool: mine's own estimate
    from bitextmine.encoders.checkpoint import read_config

    config = json.loads((out / "config.json").read_text())
    config["adapt"]["pools_threshold"]["k"] = "four"  # a record edited by hand: one error naming file and key
    (out / "config.json").write_text(json.dumps(config))
    with pytest.raises(BitextmineError, match=r"config\.json.*adapt\.pools_threshold\.k"):
        read_config(out)


@pytest.mark.slow
def test_resume_continues_after_the_last_whole_round_and_refuses_other_settings(tiny_run, tmp_path):
    copy, first = copied_run(tiny_run[0], tmp_path)
    (copy / "state" / "round-002.json").unlink()  # as if killed during round 2
    with pytest.raises(BitextmineError, match="use --resume"):
        adapt(str(EXAMPLES / "de.txt"), str(EXAMPLES / "en.txt"), "usem3", copy, AdaptConfig(rounds=2, **TINY),
              progress=False)
    with pytest.raises(BitextmineError, match="different .* settings"):
        adapt(str(EXAMPLES / "de.txt"), str(EXAMPLES / "en.txt"), "usem3", copy,
              AdaptConfig(rounds=2, **{**TINY, "steps": 5}), resume=True, progress=False)
    result = adapt_examples(copy, AdaptConfig(rounds=2, **TINY), resume=True)
    assert result["rounds"] == [0, 1, 2]
    assert (copy / "state" / "round-001.json").stat().st_mtime_ns == first  # not done again
    log = (copy / "adapt_log.jsonl").read_text().splitlines()
    assert [json.loads(line)["round"] for line in log] == [0, 1, 2]


@pytest.mark.slow
def test_the_command_prints_the_threshold_for_mining_its_pools_with_a_trained_round(cli, tmp_path):
    result = cli("adapt", "--src", EXAMPLES / "de.txt", "--tgt", EXAMPLES / "en.txt", "--src-lang", "de",
                 "--tgt-lang", "en", "-o", tmp_path / "out", "--trainable", "head", "--rounds", "1", "--steps", "3",
                 "--held-out", "0.3",
                 "--min-keep-gain", "0", "--device", "cpu", "-q", "--json", tmp_path / "a.json")
    assert result.exit_code == 0, result.stderr
    summary = json.loads((tmp_path / "a.json").read_text())
    chosen = summary["pools_threshold"]
    if summary["best_round"]:
        assert f"--threshold {chosen['threshold']:.6g} (--score distance, -k 4)" in result.stderr
        assert f"keeps {chosen['pairs']} pairs" in result.stderr and f"keeps {chosen['start_pairs']}," in result.stderr
    else:
        assert chosen is None and "--threshold" not in result.stderr


def test_the_count_for_the_pools_grows_with_the_held_out_gain_up_to_the_translations_counted():
    from bitextmine.adapt.loop import grown_count, held_out_growth

    assert held_out_growth([0.6, 0.9, 0.7], 1) == pytest.approx(1.5)
    assert held_out_growth([0.0, 0.9], 1) == 1.0 and held_out_growth([0.6, None], 1) == 1.0
    assert held_out_growth(None, 1) == 1.0
    assert grown_count(68, 1.41, 88.0) == 88  # Chinese lines: 96 capped by the 88 counted
    assert grown_count(110, 1.074, 135.0) == 118  # under the count: grown
    assert grown_count(316, 1.13, 300.0) == 316  # counted fewer than the start keeps: the start's
    assert grown_count(68, 0.9, 88.0) == 68 and grown_count(68, 1.41, None) == 68


def test_the_estimate_of_pools_without_translations_is_none():
    from bitextmine.adapt.loop import estimated_f1
    from bitextmine.mine.thresholds import ThresholdChoice

    class Curve:  # an estimate's curves, as no_gold gives them
        thresholds, precision, recall = np.array([1.0, 1.1]), np.array([0.5, 0.9]), np.array([0.8, 0.4])

    assert estimated_f1(ThresholdChoice(1.1, "adaptive", "", Curve())) == pytest.approx(2 * 0.5 * 0.8 / 1.3, abs=1e-5)
    assert estimated_f1(ThresholdChoice(float("inf"), "none", "none: no translations", Curve())) is None
    # the encoder's threshold where the estimate saw no group of translations: none seen either
    assert estimated_f1(ThresholdChoice(0.12, "fallback", "no group", Curve(), translations_seen=False)) is None
    assert estimated_f1(ThresholdChoice(1.2, "user", "user")) is None


def test_held_out_pools_where_mining_finds_no_translations_estimate_0(monkeypatch):
    """So that a trained round finding translations where the start found none can be kept."""
    from bitextmine.adapt import loop
    from bitextmine.mine import thresholds
    from bitextmine.mine.thresholds import ThresholdChoice

    found = ThresholdChoice(float("inf"), "none", "none: no translations")
    monkeypatch.setattr(thresholds, "mine_and_choose", lambda *args, **kwargs: (None, found))
    vectors, rows = (np.zeros((10, 4)), np.zeros((10, 4))), (np.arange(10), np.arange(10))
    cfg = AdaptConfig().for_encoder("usem3")
    assert loop.held_out_f1(vectors, rows, cfg, None, "cpu") == 0.0
    found = ThresholdChoice(0.12, "fallback", "no group of translations", translations_seen=False)
    assert loop.held_out_f1(vectors, rows, cfg, None, "cpu") == 0.0
    assert loop.held_out_f1(vectors, (np.arange(3), np.arange(10)), cfg, None, "cpu") is None  # too few to mine
    assert loop.best_round([record(0, 6), record(1, 6)], [0.0, 0.75], 0.05).round == 1


@pytest.mark.slow
def test_pools_without_translations_stop_at_round_0_and_keep_the_encoder_as_it_was(cli, tmp_path):
    """One text on both sides: mine keeps nothing (identical sentences are no translations)."""
    from bitextmine.encoders import load_encoder

    out = tmp_path / "same"
    result = cli("adapt", "--src", EXAMPLES / "en.txt", "--tgt", EXAMPLES / "en.txt", "--src-lang", "en",
                 "--tgt-lang", "en", "-o", out, "--steps", "2", "--device", "cpu", "--json", tmp_path / "a.json")
    assert result.exit_code == 0, result.stderr
    summary = json.loads((tmp_path / "a.json").read_text())
    assert summary["rounds"] == [0] and summary["best_round"] == 0 and summary["stopped"] == "no_translations"
    assert summary["records"][0]["kept"] == 0 and summary["records"][0]["threshold"] is None
    assert "same sentence" in summary["stopped_because"] and "the encoder as it started" in result.stderr
    config = json.loads((out / "config.json").read_text())
    usem3 = load_encoder("usem3")
    assert config["compatible_with"] == usem3.identity.space()  # mines against usem3's sets, at its thresholds
    adapted = load_encoder(f"ckpt:{out}")
    assert adapted.identity.mining_thresholds == usem3.identity.mining_thresholds
    assert np.allclose(adapted.encode(["Good morning."]), usem3.encode(["Good morning."]), atol=1e-6)


# --- a student: one side the teacher's ----------------------------------------------------------

@pytest.fixture(scope="module")
def routing_student(tmp_path_factory):
    """A checkpoint that is the default encoder's network and hands English to its teacher,
    as an add-language student does: German is its own."""
    from bitextmine.encoders.checkpoint import write_model
    from bitextmine.encoders.usem3 import USEm3Encoder

    teacher = USEm3Encoder(device="cpu")
    directory = tmp_path_factory.mktemp("student")
    write_model(directory, {"architecture": "usem3", "model": {"max_tokens": 64, "new_pieces": 0},
                            "compatible_with": teacher.identity.space(), "teacher": "usem3",
                            "teacher_languages": ["en"]}, teacher.network, teacher.tokenizer_file)
    return directory


def test_a_trained_head_of_a_checkpoint_declares_neither_its_space_nor_its_thresholds(tmp_path):
    """A checkpoint that embeds both sides itself, with the thresholds it was measured at: the
    trained head moves both sides, so neither its space nor its thresholds hold for the round."""
    from bitextmine.adapt.model import AdaptedEncoder
    from bitextmine.encoders.checkpoint import write_model
    from bitextmine.encoders.usem3 import USEm3Encoder

    usem3 = USEm3Encoder(device="cpu")
    thresholds = usem3.identity.mining_thresholds.to_dict()
    write_model(tmp_path, {"architecture": "usem3", "model": {"max_tokens": 64, "new_pieces": 0},
                           "compatible_with": usem3.identity.space(), "mining_thresholds": thresholds},
                usem3.network, usem3.tokenizer_file)
    model = AdaptedEncoder(f"ckpt:{tmp_path}", "de", "en", "cpu")
    trained = model.description({"best_round": 1})
    assert trained["compatible_with"] is None and trained["mining_thresholds"] is None
    start = model.description({"best_round": 0})
    assert start["compatible_with"] == usem3.identity.space() and start["mining_thresholds"] == thresholds


@pytest.mark.slow
def test_a_student_learns_toward_the_teachers_fixed_english_and_keeps_its_space(routing_student, tmp_path):
    from bitextmine.encoders import load_encoder

    out = tmp_path / "adapted"
    adapt(str(EXAMPLES / "de.txt"), str(EXAMPLES / "en.txt"), f"ckpt:{routing_student}", out,
          AdaptConfig(rounds=1, **TINY), progress=False)
    config = json.loads((out / "config.json").read_text())
    start = json.loads((routing_student / "config.json").read_text())
    assert config["compatible_with"] == start["compatible_with"] and config["teacher_languages"] == ["en"]
    adapted = load_encoder(f"ckpt:{out}")
    assert adapted.for_language("en") is not adapted  # English still goes to the teacher, untouched
    english = ["Good morning.", "The weather is nice today."]
    assert np.array_equal(adapted.for_language("en").encode(english), load_encoder("usem3").encode(english))


def test_a_student_is_refused_where_both_languages_are_its_teachers(routing_student, tmp_path):
    with pytest.raises(BitextmineError, match="both languages to its teacher"):
        adapt(str(EXAMPLES / "en.txt"), str(EXAMPLES / "en.txt"), f"ckpt:{routing_student}", tmp_path / "x",
              AdaptConfig(**{**TINY, "src_lang": "en"}), progress=False)


# --- the command ------------------------------------------------------------------------------------

@pytest.mark.slow
def test_a_damaged_state_is_one_line_on_resume(tiny_run, tmp_path):
    copy, _ = copied_run(tiny_run[0], tmp_path)
    for name, content in (("round-001.json", "{bad"), ("round-001.json", "{}"), ("round-001.npz", "truncated")):
        (copy / "state" / name).write_text(content)
        with pytest.raises(BitextmineError, match=f"{name}: damaged adapt state"):
            adapt_examples(copy, AdaptConfig(rounds=2, **TINY), resume=True)
        shutil.copy(tiny_run[0] / "state" / name, copy / "state" / name)


def test_adapt_writes_into_an_empty_folder_or_its_own_run_only(cli, tmp_path):
    """Refused before any work: a folder of other files (a checkpoint), the checkpoint adapted
    from, a replay file that cannot be read; a bad --trainable is a usage error."""
    pools = ["--src", EXAMPLES / "de.txt", "--tgt", EXAMPLES / "en.txt", "-q"]
    other = tmp_path / "ckpt"
    other.mkdir()
    (other / "config.json").write_text("{}")
    result = cli("adapt", *pools, "-o", other)
    assert result.exit_code == 1 and "holds files but no adapt run (config.json)" in result.stderr
    result = cli("adapt", *pools, "-o", tmp_path / "new", "--replay", tmp_path / "missing.tsv")
    assert result.exit_code == 1 and "missing.tsv: no such file" in result.stderr
    assert not (tmp_path / "new").exists()
    assert cli("adapt", *pools, "-o", tmp_path / "new", "--trainable", "all").exit_code == 2


def test_the_checkpoint_adapted_from_is_never_the_output(tmp_path):
    from bitextmine.adapt.pools import check_not_the_encoder

    for out in (tmp_path / "ckpt", tmp_path / "ckpt" / "inside", tmp_path):
        with pytest.raises(BitextmineError, match="overlaps the checkpoint adapted from"):
            check_not_the_encoder(f"ckpt:{tmp_path / 'ckpt'}", out)
    check_not_the_encoder(f"ckpt:{tmp_path / 'ckpt'}", tmp_path / "ckpt2")
    check_not_the_encoder("usem3", tmp_path)


def test_checkpoint_weights_are_as_readable_as_the_other_files(tmp_path):
    import torch

    from bitextmine.encoders.checkpoint import save_tensors

    previous = os.umask(0o022)
    try:
        save_tensors({"w": torch.zeros(2)}, tmp_path / "model.safetensors")
    finally:
        os.umask(previous)
    assert (tmp_path / "model.safetensors").stat().st_mode & 0o777 == 0o644


def test_the_command_reports_bad_input_in_one_line(cli, tmp_path):
    result = cli("adapt", "--src", tmp_path / "missing.txt", "--tgt", EXAMPLES / "en.txt", "-o", tmp_path / "o")
    assert result.exit_code == 1
    assert result.stderr.strip().startswith("bitextmine: error:") and "no such file" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "o").exists()
    result = cli("adapt", "--src", EXAMPLES / "de.txt", "--tgt", EXAMPLES / "en.txt", "-o", tmp_path / "o",
                 "--target-precision", "1.5")
    assert result.exit_code == 2
    result = cli("adapt", "--src", EXAMPLES / "de.txt", "--tgt", EXAMPLES / "en.txt", "-o", tmp_path / "o",
                 "--encoder", "hf:nothing-here")
    assert result.exit_code == 1 and "default encoder's architecture" in result.stderr


# --- a stage of run ---------------------------------------------------------------------------------

@pytest.mark.slow
def test_run_adapts_between_mine_and_a_second_mine_and_filters_those_pairs(cli, tmp_path):
    pytest.importorskip("yaml")
    config = tmp_path / "p.yaml"
    config.write_text(f"""output: {tmp_path / "run"}
languages:
  de: [{EXAMPLES / "de.txt"}]
  en: [{EXAMPLES / "en.txt"}]
pairs: [[de, en]]
index: {{exact: true}}
adapt: {{enabled: true, trainable: head, rounds: 1, steps: 3, batch_size: 64, hard_negatives: 2, pool_negatives: 64,
        target_precision: 0.9, held_out: 0.3, min_keep_gain: 0.0, device: cpu}}
""")
    result = cli("run", config, "--launcher", "inline", "-q")
    assert result.exit_code == 0, result.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert [(s["stage"], s["ran"]) for s in summary["stages"]] == [("embed", 2), ("index", 0), ("mine", 1),
                                                                   ("adapt", 1), ("filter", 1)]
    adapted = tmp_path / "run" / "adapt" / "de-en"
    record = json.loads((adapted / "encoder" / "config.json").read_text())["adapt"]
    assert record["rounds"] == [0, 1] and record["settings"]["held_out"] == 0.3
    mined = {tuple(line.split("\t")[1:3]) for line in (adapted / "pairs.tsv").read_text().splitlines()}
    kept = {tuple(line.split("\t")[1:3]) for line in (tmp_path / "run" / "pairs" / "de-en.tsv").read_text()
            .splitlines()}
    assert len(kept) > 200 and kept <= mined  # the filter read the pairs mined with the adapted encoder
    sidecar = json.loads((adapted / "pairs.tsv.json").read_text())
    if record["best_round"]:  # a trained round: mined at the threshold adapt chose for these pools
        assert sidecar["parameters"]["threshold"] == pytest.approx(record["pools_threshold"]["threshold"])
        # the pipeline's embedding sets are fp16: a pair whose score lies within rounding of the threshold
        # may fall either side of it
        # (adapt counts the pairs at the threshold; mine then drops those whose lengths disagree)
        dropped = sidecar["length_agreement"]["dropped"]
        assert abs(len(mined) + dropped - record["pools_threshold"]["pairs"]) <= 2
    else:
        assert record["pools_threshold"] is None
    again = cli("run", config, "--launcher", "inline", "-q")
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert again.exit_code == 0 and all(s["ran"] == 0 for s in summary["stages"])
    # other adapt settings: the task runs again, its old run cleared, not refused as a --resume of another
    changed = cli("run", config, "--launcher", "inline", "-q", "--set", "adapt.steps=4")
    assert changed.exit_code == 0, changed.stderr
    record = json.loads((adapted / "encoder" / "config.json").read_text())["adapt"]
    assert record["settings"]["steps"] == 4


def test_the_held_out_share_grows_where_round_0_counts_few_translations():
    """Round 0's count of translations sets how many source sentences are held out: enough to
    hold ADAPT_HELD_OUT_TRANSLATIONS of them (at most ADAPT_HELD_OUT_MAX), never fewer than asked."""
    from types import SimpleNamespace

    from bitextmine import defaults
    from bitextmine.adapt.loop import held_out_share

    def choice(translations, seen=True):
        return SimpleNamespace(estimate=SimpleNamespace(translations=translations), translations_seen=seen)

    cfg = AdaptConfig()
    assert held_out_share(cfg, choice(400.0)) == cfg.held_out  # 80 held out: enough
    assert held_out_share(cfg, choice(40.0)) == pytest.approx(defaults.ADAPT_HELD_OUT_TRANSLATIONS / 40.0)
    assert held_out_share(cfg, choice(3.0)) == defaults.ADAPT_HELD_OUT_MAX
    assert held_out_share(cfg, choice(3.0, seen=False)) == cfg.held_out  # nothing to train on anyway
    assert held_out_share(AdaptConfig(held_out=0.0), choice(3.0)) == 0.0  # none asked for
    assert held_out_share(AdaptConfig(held_out=0.7), choice(3.0)) == 0.7
