"""The closed choices of the toolkit: the one list of each, for the parser and the library.

The command line declares its options with these enums, so a bad value is a usage error
before any work. The library's configs take plain strings and check them against the
tuples at the end of this module (``SCORES``, ``RULES``, ...), made from the same enums,
so that callers that do not come through the command line are checked alike. This
module imports nothing heavy, so ``bitextmine --help`` can list the choices.
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
    """The filter's rules, in the order they run. Dedup comes last: only a pair that passed
    every other rule claims its sentences, so a wrong pair cannot take a sentence from the
    right pair that follows it."""

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
    """Where FAISS trains and fills an index: faiss-gpu when it can (auto), or the CPU."""

    auto = "auto"
    cpu = "cpu"


class Launcher(Choice):
    local = "local"
    slurm = "slurm"
    inline = "inline"


class Stage(Choice):
    """The stages of ``bitextmine run``, in the order they run."""

    prepare = "prepare"
    embed = "embed"
    index = "index"
    mine = "mine"
    adapt = "adapt"  # off unless the pipeline enables it: adapt the encoder to a pair's pools, mine again
    filter = "filter"


class InputFormat(Choice):
    """What `prepare` reads: chosen by the file name (auto), or as given."""

    auto = "auto"
    text = "text"
    jsonl = "jsonl"
    parquet = "parquet"
    warc = "warc"


class TextDocuments(Choice):
    """Where a plain-text document ends: at each line, or at a blank line (a paragraph)."""

    line = "line"
    paragraph = "paragraph"


class InputErrors(Choice):
    """Bad input to `prepare`: an error naming file and line (strict), or counted and left out (skip)."""

    strict = "strict"
    skip = "skip"


class PrepareRule(Choice):
    """The rules of `prepare`, in the order they run (dedup last, over the whole run)."""

    length = "length"
    letters = "letters"
    boilerplate = "boilerplate"
    lid = "lid"
    dedup = "dedup"


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


# --- the same choices as plain strings, for the library's configs ---------------------------

SCORE_ALIASES = {"absolute": "cosine"}  # LASER's name for a plain cosine "margin"
SCORES = tuple(v for v in values(Score) if v not in SCORE_ALIASES)  # what a config holds
RETRIEVALS = values(Retrieval)
DEDUP_MODES = values(Dedup)
RULES = values(FilterRule)
PRECISIONS = values(Precision)
TEXT_ERROR_MODES = values(TextErrors)
INDEX_DEVICES = values(IndexDevice)
LAUNCHERS = values(Launcher)
INPUT_FORMATS = values(InputFormat)
TEXT_DOCUMENTS = values(TextDocuments)
INPUT_ERROR_MODES = values(InputErrors)
PREPARE_RULES = values(PrepareRule)
STAGES = values(Stage)
POOLINGS = values(Pooling)
PRESETS = values(Preset)
AMPS = values(Amp)
STUDENT_SIDES = values(StudentSides)
LR_SCHEDULES = values(LrSchedule)
