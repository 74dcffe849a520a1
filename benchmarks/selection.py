"""Mine's one-to-one selection (``--retrieval max``): time and peak memory against a pair-by-pair walk.

    python -m benchmarks.selection [--sizes 1000000 4000000] [--reference-up-to 4000000]

After the search, ``mine`` scores every candidate pair (k a row, both directions) and
keeps a greedy one-to-one matching of them, with no threshold (the histogram and the
threshold's estimate need every pair the retrieval selects). That selection holds every
candidate in memory, so at 10M-100M rows a side it sets mine's memory. Measured here:

- ``rounds``: what ``bitextmine.mine.scoring.retrieve`` does (one sort of 64-bit keys
  for the distinct pairs, one for the order by score, then rounds of pairs that are the
  best remaining of both their rows);
- ``pair by pair``: the walk as defined, over the same distinct pairs in the same order
  (lexsort, Python sets), as mine did it before (its distinct pairs were found with a
  lexsort too, which this reference no longer does: the old code was slower than this).

Each run is a fresh process (peak RSS from the kernel, less the neighbour lists it starts
with). The neighbour lists are synthetic, k = 4: ``random`` draws neighbours anywhere;
``local`` draws them among nearby rows, so that many pairs compete for the same rows (long
chains of pairs each blocking the next, the hard case for rounds). A third of the rows have
a clear best partner (the translations).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np

K = 4


def neighbour_lists(n: int, kind: str, seed: int):
    from bitextmine.mine.knn import Neighbours

    rng = np.random.default_rng(seed)
    sims = np.sort(rng.uniform(0.2, 0.9, (n, K)).astype(np.float32), axis=1)[:, ::-1].copy()
    if kind == "random":
        ids = rng.integers(0, n, (n, K))
    else:  # among the 64 rows around the query's own number
        ids = (np.arange(n)[:, None] + rng.integers(-32, 32, (n, K))) % n
    translated = rng.random(n) < 1 / 3
    ids[translated, 0] = np.flatnonzero(translated)
    sims[translated, 0] = 0.95
    return Neighbours(sims, ids)


def walk_pair_by_pair(fwd_pairs, bwd_pairs):
    from bitextmine.mine.scoring import _concat, _unique_pairs

    pairs = _unique_pairs(_concat(fwd_pairs, bwd_pairs))
    pairs = pairs.take(np.lexsort((pairs.tgt, pairs.src, -pairs.score)))
    used_src: set[int] = set()
    used_tgt: set[int] = set()
    keep = np.zeros(len(pairs), dtype=bool)
    for i, (s, t) in enumerate(zip(pairs.src.tolist(), pairs.tgt.tolist(), strict=True)):
        if s not in used_src and t not in used_tgt:
            used_src.add(s)
            used_tgt.add(t)
            keep[i] = True
    return pairs.take(keep)


def one_run(n: int, kind: str, method: str) -> dict:
    from bitextmine.mine.scoring import candidates, retrieve

    fwd, bwd = neighbour_lists(n, kind, 1), neighbour_lists(n, kind, 2)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    fwd_pairs, bwd_pairs = candidates(fwd, bwd, "ratio")
    if method == "rounds":
        kept = retrieve(fwd_pairs, bwd_pairs, "max", -np.inf)
    else:
        kept = walk_pair_by_pair(fwd_pairs, bwd_pairs)
    seconds = time.perf_counter() - started
    extra = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) * 1024
    digest = int(kept.src.sum() * 7 + kept.tgt.sum()), round(float(kept.score.astype(np.float64).sum()), 3)
    return {"n": n, "kind": kind, "method": method, "seconds": round(seconds, 2), "candidates": 2 * n * K,
            "kept": len(kept), "peak_gb": round(extra / 1024**3, 2), "bytes_per_candidate": round(extra / (2 * n * K)),
            "digest": digest}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 4_000_000])
    parser.add_argument("--reference-up-to", type=int, default=4_000_000, help="the pair-by-pair walk up to this N")
    parser.add_argument("--kinds", nargs="+", default=["random", "local"])
    parser.add_argument("--one", nargs=3, metavar=("N", "KIND", "METHOD"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_run(int(args.one[0]), args.one[1], args.one[2])))
        return
    print("| N a side | lists | candidates | method | seconds | peak above the lists | bytes a candidate | kept |")
    print("|---:|---|---:|---|---:|---:|---:|---:|")
    for n in args.sizes:
        for kind in args.kinds:
            runs = {}
            for method in ("rounds", "pair by pair"):
                if method != "rounds" and n > args.reference_up_to:
                    continue
                out = subprocess.run([sys.executable, "-m", "benchmarks.selection", "--one", str(n), kind, method],
                                     check=True, capture_output=True, text=True).stdout
                r = runs[method] = json.loads(out.strip().splitlines()[-1])
                print(f"| {n:,} | {kind} | {r['candidates']:,} | {method} | {r['seconds']:.1f} | {r['peak_gb']:.2f} GB "
                      f"| {r['bytes_per_candidate']} | {r['kept']:,} |", flush=True)
            if len(runs) == 2 and runs["rounds"]["digest"] != runs["pair by pair"]["digest"]:
                raise SystemExit(f"the two selections differ at N={n} ({kind})")


if __name__ == "__main__":
    main()
