"""One worker process per device over the shards (multi-GPU embedding).

Each worker loads its own copy of the encoder on its device and pulls shards from a
shared queue, so fast and slow devices stay busy to the end. Only the parent process
writes the manifest; workers write their ``.npy`` files (atomically) and report back.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path

from bitextmine.devices import ignore_interrupts
from bitextmine.embed.embedding_set import ShardEntry
from bitextmine.embed.shard import embed_shard
from bitextmine.encoders import load_encoder
from bitextmine.errors import BitextmineError

POLL_SECONDS = 2.0


def _worker(device: str, out_dir: str, cfg, todo, results, threads: int, parent: int) -> None:
    ignore_interrupts(parent)
    try:
        import torch  # torch: 2.5 s, in the worker process (ARCHITECTURE.md, start-up)

        torch.set_num_threads(threads)
        if device.startswith("cuda"):
            torch.cuda.set_device(torch.device(device))
        encoder = load_encoder(cfg.encoder, device=device, precision=cfg.precision).for_language(cfg.lang)
        while (task := todo.get()) is not None:
            source, file = task
            entry = embed_shard(encoder, source, Path(out_dir), file, cfg,
                                on_progress=lambda n: results.put(("progress", n)))
            results.put(("done", asdict(entry)))
    except BitextmineError as e:
        results.put(("error", str(e)))
    except Exception as e:  # report, so the parent does not wait forever
        results.put(("error", f"worker on {device} failed: {type(e).__name__}: {e}"))


def embed_on_devices(tasks, out_dir: Path, cfg, devices: list[str],
                     on_progress: Callable[[int], None]) -> Iterator[ShardEntry]:
    """Embed ``tasks`` with one process per device; yield entries as shards finish."""

    ctx = multiprocessing.get_context("spawn")  # CUDA cannot be used in a forked child
    todo, results = ctx.Queue(), ctx.Queue()
    for task in tasks:
        todo.put((task.source, task.file))
    for _ in devices:
        todo.put(None)
    threads = max(1, (os.cpu_count() or 1) // len(devices))
    parent = os.getpid()
    workers = [ctx.Process(target=_worker, args=(d, str(out_dir), cfg, todo, results, threads, parent), daemon=True)
               for d in devices]
    for w in workers:
        w.start()
    remaining = len(tasks)
    try:
        while remaining:
            try:
                kind, payload = results.get(timeout=POLL_SECONDS)
            except queue.Empty:
                dead = [w for w in workers if not w.is_alive() and w.exitcode != 0]
                if dead:
                    raise BitextmineError(f"an embedding worker died (exit code {dead[0].exitcode})") from None
                continue
            if kind == "progress":
                on_progress(payload)
            elif kind == "done":
                remaining -= 1
                yield ShardEntry(**payload)
            else:
                raise BitextmineError(payload)
    finally:
        for w in workers:
            if remaining:
                w.terminate()
            w.join()
