"""GPU figures: embedding and exact mining on a CUDA GPU against the CPU of the same machine.

    python -m benchmarks.gpu_check [--data ../shared/data/tatoeba] [--n 500000]

embed  usem3 sentences/s on the GPU (auto precision: fp16 matmuls) and on every CPU core
       (auto precision), on the same Tatoeba sentences; the minimum cosine between the
       two; the tokenizer's share; and ``bitextmine embed`` end to end on a text file.
mine   ``mine_vectors`` (exact kNN both ways, ratio margin, max retrieval) on N x N
       synthetic vectors on the GPU, for two block sizes; the CPU on N/10 for scale.
       Rates are in vector pairs compared per second, so the sizes can differ.
knn    ``exact_knn_both_ways`` alone on N x N (fp16 tiles of 8,192 rows and the default,
       sized to free memory; each tile's top-k by torch and by group maxima, the default;
       k + 4 candidates re-checked in fp32), and the share of rows whose neighbours equal
       an fp32 search's on a sample.

The checks of the scale issue (exact kNN on 500k x 500k, embed end to end on 5M lines):

    python -m benchmarks.gpu_check --only knn --n 500000
    python -m benchmarks.gpu_check --only embed --cli-lines 5000000
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.embed_throughput import timed
from benchmarks.mine_speed import synthetic_pair

DEFAULT_DATA = Path(os.environ.get("BITEXTMINE_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
LANGS = ["ara", "ces", "cmn", "deu", "fra", "ita", "jpn", "kor", "nld", "pol", "por", "rus", "spa", "tha", "tur"]


def sync(fn, device: str):
    import torch

    def run():
        out = fn()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        return out

    return run


def device_name(device: str) -> str:
    import torch

    return torch.cuda.get_device_name(torch.device(device)) if device.startswith("cuda") else "no GPU (dry run)"


def embed(tatoeba: Path, cli_lines: int, device: str) -> None:
    import torch

    from bitextmine import defaults
    from bitextmine.encoders import load_encoder

    texts = []
    for lang in LANGS:
        for side in (lang, "eng"):
            path = tatoeba / f"tatoeba.{lang}-eng.{side}"
            if path.exists():
                texts += path.read_text(encoding="utf-8").split("\n")[:-1]
    gpu = load_encoder("usem3", device=device, precision="auto")
    cpu = load_encoder("usem3", device="cpu", precision="auto")
    torch.set_num_threads(os.cpu_count() or 1)
    gpu_tokens = defaults.BATCH_TOKENS * defaults.GPU_BATCH_TOKENS_FACTOR
    gpu.encode(texts[:2000], batch_tokens=gpu_tokens)  # warm-up
    gpu_time, gpu_vectors = timed(sync(lambda: gpu.encode(texts, batch_tokens=gpu_tokens), device), 3)
    sample = texts[:: max(1, len(texts) // 6000)]
    cpu.encode(sample[:200])
    cpu_time, cpu_vectors = timed(lambda: cpu.encode(sample), repeats=1)
    tokenize_time, _ = timed(lambda: gpu.tokenize(texts), 3)
    index = {t: i for i, t in enumerate(texts)}
    rows = [index[t] for t in sample]
    cosine = float((gpu_vectors[rows] * cpu_vectors).sum(axis=1).min())
    print(f"\n### embed: usem3, {len(texts):,} Tatoeba sentences ({len(sample):,} on the CPU), "
          f"{device_name(device)}, {os.cpu_count()} CPU cores, torch {torch.__version__}\n")
    print("| where | sentences/s | ratio |")
    print("|---|---:|---:|")
    print(f"| CPU, {os.cpu_count()} threads, auto precision | {len(sample) / cpu_time:,.0f} | 1.00x |")
    print(f"| GPU, fp16 matmuls, {gpu_tokens} tokens per batch | {len(texts) / gpu_time:,.0f} | "
          f"{(len(texts) / gpu_time) / (len(sample) / cpu_time):.1f}x |")
    print(f"\nminimum cosine GPU vs CPU: {cosine:.5f}; tokenizer alone (one CPU thread): "
          f"{len(texts) / tokenize_time:,.0f} sentences/s, {100 * tokenize_time / gpu_time:.0f}% of the GPU time")

    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus.txt"
        # numbered copies: distinct lines, as a real corpus has
        lines = [f"{t} ({r})" for r in range(cli_lines // len(texts) + 1) for t in texts][:cli_lines]
        corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "bitextmine", "embed", str(corpus), "-o", str(Path(tmp) / "set"),
                        "--device", device, "-q"], check=True)
        wall = time.perf_counter() - start
    print(f"\n`bitextmine embed --device {device}` on {len(lines):,} lines, end to end (process start, model load, "
          f"tokenizing, writing fp16 shards): {wall:.1f} s, {len(lines) / wall:,.0f} lines/s")


def mine(n: int, device: str) -> None:
    import torch

    from bitextmine.mine import MineConfig, mine_vectors

    print(f"\n### mine: exact kNN both ways (k=4) + ratio margin + max retrieval, synthetic 512-d fp16, "
          f"{device_name(device)}\n")
    print("| where | N x N | block rows | seconds | vector pairs/s | pairs mined |")
    print("|---|---:|---:|---:|---:|---:|")
    x, y = synthetic_pair(n)
    for block in (8192, 32768):
        cfg = MineConfig(block_rows=block)
        mine_vectors(x[:20000], y[:20000], cfg, 1.06, device=device)  # warm-up
        seconds, pairs = timed(sync(lambda cfg=cfg: mine_vectors(x, y, cfg, 1.06, device=device), device), repeats=1)
        print(f"| GPU | {n:,} | {block} | {seconds:.1f} | {n * n / seconds:.3g} | {len(pairs):,} |")
    small = n // 10
    xs, ys = synthetic_pair(small, seed=1)
    torch.set_num_threads(os.cpu_count() or 1)
    seconds, pairs = timed(lambda: mine_vectors(xs, ys, MineConfig(), 1.06, device="cpu"), repeats=1)
    print(f"| CPU, {os.cpu_count()} threads | {small:,} | 8192 | {seconds:.1f} | {small * small / seconds:.3g} | "
          f"{len(pairs):,} |")


def knn(n: int, device: str) -> None:
    import numpy as np
    import torch

    from bitextmine import defaults
    from bitextmine.mine.knn import _low_precision_knn, exact_knn, exact_knn_both_ways, knn_block_rows

    x, y = synthetic_pair(n)
    print(f"\n### exact kNN both ways (k=4), {n:,} x {n:,} synthetic 512-d fp16, {device_name(device)}\n")
    print("| tile rows | tile top-k | seconds | vector pairs/s | rows with the fp32 search's neighbours |")
    print("|---:|---|---:|---:|---:|")
    sample = np.random.default_rng(0).choice(n, 2000, replace=False)
    reference = exact_knn(np.asarray(x[sample], dtype=np.float32), y, 4, device="cpu")
    exact_knn_both_ways(x[:20000], y[:20000], 4, device=device)  # warm-up
    # what exact_knn_both_ways runs on a GPU, with each tile's top-k both ways (a dry run on
    # the CPU runs the same code, slowly: fp16 products)
    for block, group in [(8192, defaults.GPU_TOPK_GROUP), (None, 1), (None, defaults.GPU_TOPK_GROUP)]:
        def search(b=block, g=group):
            return _low_precision_knn(x, y, 4, device, torch.float16, b, True, group=g)

        seconds, (fwd, _) = timed(sync(search, device), repeats=1)
        same = float((fwd.ids[sample] == reference.ids).all(axis=1).mean())
        label = f"{knn_block_rows(device):,} (default)" if block is None else f"{block:,}"
        how = "torch top-k" if group == 1 else f"maxima of {group} columns (default)"
        print(f"| {label} | {how} | {seconds:.1f} | {n * n / seconds:.3g} | {same:.4f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA / "tatoeba")
    parser.add_argument("--n", type=int, default=500_000, help="mine: vectors per side on the GPU")
    parser.add_argument("--cli-lines", type=int, default=300_000, help="embed: lines for the end-to-end run")
    parser.add_argument("--only", choices=["embed", "mine", "knn"], default=None)
    parser.add_argument("--device", default="cuda:0", help="cpu: a dry run of the script itself")
    args = parser.parse_args()

    import torch

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        sys.exit("gpu_check: torch sees no CUDA GPU")
    if args.only in (None, "embed"):
        embed(args.data, args.cli_lines, args.device)
    if args.only in (None, "mine"):
        mine(args.n, args.device)
    if args.only in (None, "knn"):
        knn(args.n, args.device)


if __name__ == "__main__":
    main()
