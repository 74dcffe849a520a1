"""The closed choices of the command line, as enums the parser checks before any work.

This module imports nothing heavy, so ``bitextmine --help`` can list the choices. The
library takes their ``.value`` (plain strings) and checks them again in its configs, for
callers that do not come through the command line.
"""

from __future__ import annotations

from enum import Enum


class Choice(str, Enum):
    """A closed choice; ``str(member)`` is its value, as typed on the command line."""

    def __str__(self) -> str:
        return self.value


class Score(Choice):
    """How a candidate pair is scored (``absolute`` is LASER's name for cosine)."""

    ratio = "ratio"
    distance = "distance"
    cosine = "cosine"
    absolute = "absolute"


class Retrieval(Choice):
    max = "max"
    union = "union"
    intersect = "intersect"
    fwd = "fwd"
    bwd = "bwd"


class Dedup(Choice):
    pair = "pair"
    src = "src"
    tgt = "tgt"
    both = "both"


class FilterRule(Choice):
    score_cap = "score_cap"
    length = "length"
    tokens = "tokens"
    ratio = "ratio"
    letters = "letters"
    copy = "copy"
    numbers = "numbers"
    urls = "urls"
    boilerplate = "boilerplate"
    lid = "lid"
    dedup = "dedup"


class Precision(Choice):
    auto = "auto"
    fp32 = "fp32"
    bf16 = "bf16"
    fp16 = "fp16"


class TextErrors(Choice):
    strict = "strict"
    replace = "replace"


class IndexDevice(Choice):
    auto = "auto"
    cpu = "cpu"


class Launcher(Choice):
    local = "local"
    slurm = "slurm"
    inline = "inline"


class Stage(Choice):
    embed = "embed"
    index = "index"
    mine = "mine"
    filter = "filter"


class Preset(Choice):
    cpu = "cpu"
    use_xling = "use-xling"


class Pooling(Choice):
    mean = "mean"
    cls = "cls"


class Amp(Choice):
    auto = "auto"
    off = "off"


class Recipe(Choice):
    """Named sets of training settings (``bitextmine.train.recipes``)."""

    add_language = "add-language"


class StudentSides(Choice):
    both = "both"
    target = "target"


class LrSchedule(Choice):
    steps = "steps"
    time = "time"


def values(choice: type[Choice]) -> tuple[str, ...]:
    return tuple(member.value for member in choice)
