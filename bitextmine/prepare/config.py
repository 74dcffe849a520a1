"""The settings of `prepare`, checked as the command line checks them."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from bitextmine import defaults
from bitextmine.choices import INPUT_ERROR_MODES, INPUT_FORMATS, PREPARE_RULES, TEXT_DOCUMENTS
from bitextmine.errors import BitextmineError
from bitextmine.languages import language_key
from bitextmine.prepare.documents import ReadOptions
from bitextmine.prepare.rules import SentenceRules

# the range of each number setting, (least, most) with None for no bound; the command line's limits too
RANGES = {"min_chars": (0, None), "max_chars": (1, None), "min_letters": (0.0, 1.0), "min_lang_prob": (0.0, 1.0),
          "shard_lines": (1, None), "workers": (1, None)}


@dataclass(frozen=True)
class PrepareConfig:
    """Each field is the command-line option of that name (``--min-lang-prob``)."""

    lang: str  # ISO 639 code of the language kept
    format: str = defaults.PREPARE_FORMAT
    text_documents: str = defaults.PREPARE_TEXT_DOCUMENTS
    field: str = defaults.PREPARE_TEXT_FIELD  # JSONL field or Parquet column
    id_field: str | None = defaults.PREPARE_ID_FIELD
    url_field: str | None = defaults.PREPARE_URL_FIELD
    errors: str = defaults.PREPARE_ERRORS
    min_chars: int = defaults.PREPARE_MIN_CHARS
    max_chars: int = defaults.PREPARE_MAX_CHARS
    min_letters: float = defaults.PREPARE_MIN_LETTER_SHARE
    min_lang_prob: float = defaults.PREPARE_MIN_LANG_PROB
    skip: tuple[str, ...] = ()  # rules switched off
    shard_lines: int = defaults.PREPARE_SHARD_LINES
    workers: int | None = None  # None: one per CPU this process may use

    def __post_init__(self):
        object.__setattr__(self, "skip", tuple(self.skip))
        language_key(self.lang, "--lang")  # an unknown code is an error before any work
        for name, allowed in (("format", INPUT_FORMATS), ("text_documents", TEXT_DOCUMENTS),
                              ("errors", INPUT_ERROR_MODES)):
            if getattr(self, name) not in allowed:
                raise BitextmineError(f"--{name.replace('_', '-')}: {getattr(self, name)!r} is not one of "
                                      f"{', '.join(allowed)}")
        unknown = set(self.skip) - set(PREPARE_RULES)
        if unknown:
            raise BitextmineError(f"unknown rule(s) {', '.join(sorted(unknown))}: rules are {', '.join(PREPARE_RULES)}")
        for name, (least, most) in RANGES.items():
            value, option = getattr(self, name), f"--{name.replace('_', '-')}"
            if value is None:
                continue
            if not math.isfinite(value) or (least is not None and value < least) or (most is not None and value > most):
                raise BitextmineError(f"{option} must be in [{least}, {most if most is not None else 'inf'}], "
                                      f"not {value}")
        if self.min_chars > self.max_chars:
            raise BitextmineError(f"--min-chars {self.min_chars} is above --max-chars {self.max_chars}")
        if not self.field:
            raise BitextmineError("--field must name a field")

    def read_options(self) -> ReadOptions:
        return ReadOptions(format=self.format, text_documents=self.text_documents, field=self.field,
                           id_field=self.id_field or None, url_field=self.url_field or None, errors=self.errors)

    def sentence_rules(self) -> SentenceRules:
        return SentenceRules(min_chars=self.min_chars, max_chars=self.max_chars, min_letters=self.min_letters,
                             skip=self.skip)

    def active(self, rule: str) -> bool:
        return rule not in self.skip

    def to_dict(self) -> dict:
        """What decides the output (the workers do not), as the manifest records it."""
        settings = asdict(self)
        settings.pop("workers")
        settings["skip"] = list(self.skip)
        return settings
