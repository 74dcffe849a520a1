"""What ``mine`` is asked to do: ``MineConfig``, checked before any work."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from bitextmine import defaults
from bitextmine.choices import RETRIEVALS, SCORE_ALIASES, SCORES
from bitextmine.errors import BitextmineError


@dataclass(frozen=True)
class MineConfig:
    k: int = defaults.K
    score: str = defaults.SCORE  # ratio | distance | cosine ("absolute" is an alias of cosine)
    retrieval: str = defaults.RETRIEVAL
    threshold: float | None = None  # None: chosen on the pools (mine/thresholds.py)
    target_precision: float = defaults.TARGET_PRECISION  # what a chosen threshold aims for
    # estimated F1 the target may cost before the threshold of best F1 is taken instead
    target_f1_tolerance: float = defaults.TARGET_F1_TOLERANCE
    # precision above the target taken where it costs little estimated F1 (0: the target's own threshold)
    target_headroom: float = defaults.TARGET_HEADROOM
    top_n: int | None = None  # keep only the best N pairs (after the length agreement)
    # kept pairs this many times off the typical length ratio are dropped (mine/lengths.py); 0: none
    length_ratio: float = defaults.MINE_LENGTH_RATIO
    nprobe: int | None = None  # None: the index's own
    exact_margins: bool = defaults.EXACT_MARGINS  # through indexes: the kept pairs' rows searched exactly
    device: str = defaults.DEVICE  # for exact search: a GPU when torch sees one
    block_rows: int | None = None  # exact search's tiles; None: by device (mine/knn.py knn_block_rows)

    def __post_init__(self):
        score = SCORE_ALIASES.get(self.score, self.score)
        if score not in SCORES:
            raise BitextmineError(f"unknown score {self.score!r}: use {', '.join(SCORES)} or absolute")
        object.__setattr__(self, "score", score)
        if self.retrieval not in RETRIEVALS:
            raise BitextmineError(f"unknown retrieval {self.retrieval!r}: use one of {', '.join(RETRIEVALS)}")
        for name in ("k", "top_n", "nprobe", "block_rows"):  # Python callers: an int, not 4.0 or "4"
            value = getattr(self, name)
            if value is not None and (not isinstance(value, numbers.Integral) or isinstance(value, bool)):
                raise BitextmineError(f"{name} must be an integer, not {value!r}")
        for name in ("threshold", "target_precision", "length_ratio"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, numbers.Real) or isinstance(value, bool)):
                raise BitextmineError(f"{name} must be a number, not {value!r}")
        if self.k < 1:
            raise BitextmineError("k must be at least 1")
        if self.top_n is not None and self.top_n < 0:
            raise BitextmineError("--top-n must be >= 0")
        if not 0 < self.target_precision < 1:
            raise BitextmineError("--target-precision must be between 0 and 1")
        if not self.target_f1_tolerance >= 0:
            raise BitextmineError(f"the target's F1 tolerance must be >= 0, not {self.target_f1_tolerance}")
        if not self.target_headroom >= 0:
            raise BitextmineError(f"the target's headroom must be >= 0, not {self.target_headroom}")
        check_length_ratio(self.length_ratio)
        if self.threshold is not None and not math.isfinite(self.threshold):
            raise BitextmineError(f"--threshold must be a finite number, not {self.threshold}")


def check_length_ratio(value: float) -> None:
    """The length agreement's ratio: 0 (off) or at least 1 (a pair's ratio off the typical one)."""
    if not (value == 0 or value >= 1):
        raise BitextmineError(f"--length-ratio must be 0 (off) or at least 1, not {value}")
