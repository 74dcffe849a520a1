"""Mine's text of a side: time and memory of finding its distinct sentences.

    python -m benchmarks.mine_text [--lines 4000000] [--shards 16] [--cache /tmp/bm-text]

`mine` searches each distinct sentence once, so it first reads every shard's text and finds
the identical lines (``bitextmine.mine.unique_sentences``); at the end it reads back the
text of the mined pairs. What it keeps of the text in between is, at 100M rows a side, a
large part of its memory. Here: one side of N lines in S shards (real sentences from
../shared/data/train with a counter, so that most are distinct, and a tenth repeated),
embedding sets of 8-d vectors (only the text matters here), and ``unique_sentences`` in a
fresh process: its wall time, then (run again with allocations traced) its peak memory and
what it keeps for the rest of mine, both per row.
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

SHARED = Path(os.environ.get("BITEXTMINE_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
TSV = SHARED / "train" / "tatoeba_manythings_deu-eng" / "train.eng-deu.tsv"


def build(cache: Path, lines: int, shards: int) -> list[Path]:
    from bitextmine.embed.embedding_set import EmbeddingSet, ShardEntry
    from bitextmine.encoders.base import EncoderIdentity
    from bitextmine.io.text import file_sha256

    sentences = [row.split("\t")[0] for row in TSV.read_text(encoding="utf-8").splitlines()]
    rng = np.random.default_rng(0)
    per_shard = lines // shards
    sets = []
    for s in range(shards):
        directory = cache / f"set{s}"
        sets.append(directory)
        if (directory / "manifest.json").exists():
            continue
        directory.mkdir(parents=True, exist_ok=True)
        numbers = np.arange(s * per_shard, (s + 1) * per_shard)
        repeated = rng.random(per_shard) < 0.1  # a tenth of the lines repeat an earlier line's text
        numbers[repeated] = rng.integers(0, max(int(numbers[0]), 1), int(repeated.sum()))
        source = directory / "shard.txt"
        with source.open("w", encoding="utf-8") as f:
            for i in numbers.tolist():
                f.write(f"{sentences[i % len(sentences)]} {i}\n")
        np.save(directory / "shard.npy", np.ones((per_shard, 8), dtype=np.float16) / np.sqrt(8))
        identity = EncoderIdentity("synthetic", "1", 8, "s" * 64)
        entry = ShardEntry(str(source), source.stat().st_size, file_sha256(source), per_shard, 0, 0, "shard.npy",
                           file_sha256(directory / "shard.npy"))
        EmbeddingSet(directory, identity, "float16", 256, "fp32", [entry]).save()
    return sets


def one_run(sets: list[str]) -> dict:
    import tracemalloc

    from bitextmine.embed.corpus import EmbeddingCorpus
    from bitextmine.mine import unique_sentences

    corpus = EmbeddingCorpus.load(sets, verify=False)
    start = time.perf_counter()
    side = unique_sentences(corpus)
    seconds = time.perf_counter() - start
    distinct = len(side) if hasattr(side, "__len__") else len(side.texts)
    del side
    # again, with Python's and numpy's allocations traced (slower, so not timed)
    tracemalloc.start()
    side = unique_sentences(corpus)
    kept, peak = tracemalloc.get_traced_memory()  # while ``side`` is alive: what mine keeps
    tracemalloc.stop()
    del side
    rows = corpus.total_rows
    return {"rows": rows, "distinct": distinct, "seconds": round(seconds, 1),
            "peak_bytes_per_row": round(peak / rows), "kept_bytes_per_row": round(kept / rows)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=4_000_000)
    parser.add_argument("--shards", type=int, default=16)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/bitextmine-bench-text"))
    parser.add_argument("--one", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_run(args.one)))
        return
    sets = build(args.cache, args.lines, args.shards)
    out = subprocess.run([sys.executable, "-m", "benchmarks.mine_text", "--one", *map(str, sets)], check=True,
                         capture_output=True, text=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    print(f"| {r['rows']:,} in {args.shards} shards | {r['distinct']:,} | {r['seconds']:.1f} | "
          f"{r['peak_bytes_per_row']} | {r['kept_bytes_per_row']} | load {os.getloadavg()[0]:.1f} |")


if __name__ == "__main__":
    main()
