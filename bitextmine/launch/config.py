"""``pipeline.yaml``: what to mine, read into pydantic models and checked before anything runs.

    output: out/run                 # everything goes below here
    encoder: usem3
    languages:                      # shard paths or globs per language (documents, with prepare)
      de: [corpus/de.*.txt.gz]
      en: corpus/en.txt
    pairs: [[de, en]]
    prepare:  {enabled: false, format: auto, field: text, min_lang_prob: 0.02}   # documents -> shards
    embed:    {max_tokens: 256, batch_tokens: null, precision: auto, errors: strict}
    index:    {type: auto, nprobe: 32, max_rows: 10000000}    # larger languages: several indexes
    mine:     {k: 4, score: distance, retrieval: max, threshold: null, top_n: null, length_ratio: 1.5,
              exact_margins: true}
    adapt:    {enabled: false, trainable: auto, rounds: 3, max_minutes: null, replay: []}  # train on them, mine again
    filter:   {enabled: true, lang_id: true, skip: [], dedup: both, max_score: null, rejects: false}
    resources:                      # per stage: what a task asks of Slurm (or the local machine)
      embed: {cpus: 4, gpus: 1, mem_gb: 16, timeout_min: 240}
    launcher: {retries: 2, workers: 2, slurm: {partition: null, max_array: 256}}

Each stage section takes the options of its command (``embed --errors replace`` is
``embed: {errors: replace}``). Unknown keys, wrong types, missing files and language
keys that are not plain names are errors ``FILE: key.path: message``.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import AfterValidator, AliasChoices, Field, field_validator, model_validator

from bitextmine import defaults
from bitextmine.choices import (
    DEDUP_MODES,
    INDEX_DEVICES,
    INPUT_ERROR_MODES,
    INPUT_FORMATS,
    PRECISIONS,
    PREPARE_RULES,
    RETRIEVALS,
    RULES,
    SCORE_ALIASES,
    SCORES,
    STAGES,
    TEXT_DOCUMENTS,
    TEXT_ERROR_MODES,
)
from bitextmine.devices import check_device_spec
from bitextmine.errors import BitextmineError
from bitextmine.filter import FilterConfig
from bitextmine.io.paths import check_name
from bitextmine.io.validate import Bool, Float, Int, Model, Str, parse
from bitextmine.languages import base_code, find_language_key, language_key

Positive = Annotated[Int, Field(ge=1)]
NonNegative = Annotated[Int, Field(ge=0)]


def _device_spec(value: str) -> str:
    try:
        return check_device_spec(value)
    except BitextmineError as e:
        raise ValueError(e.message) from None


Device = Annotated[Str, AfterValidator(_device_spec)]  # auto, cpu, cuda or cuda:N


def _length_ratio(value: float) -> float:
    if not (value == 0 or value >= 1):
        raise ValueError("0 (off) or at least 1")
    return value


LengthRatio = Annotated[Float, AfterValidator(_length_ratio)]  # mine's length agreement


class PrepareStage(Model):
    """``bitextmine prepare``'s settings; with ``enabled``, the languages' files are documents."""

    enabled: Bool = False
    format: Literal[INPUT_FORMATS] = defaults.PREPARE_FORMAT
    docs: Literal[TEXT_DOCUMENTS] = defaults.PREPARE_TEXT_DOCUMENTS
    field: Str = defaults.PREPARE_TEXT_FIELD
    id_field: Str = defaults.PREPARE_ID_FIELD
    url_field: Str = defaults.PREPARE_URL_FIELD
    errors: Literal[INPUT_ERROR_MODES] = defaults.PREPARE_ERRORS
    min_chars: NonNegative = defaults.PREPARE_MIN_CHARS
    max_chars: Positive = defaults.PREPARE_MAX_CHARS
    min_letters: Annotated[Float, Field(ge=0.0, le=1.0)] = defaults.PREPARE_MIN_LETTER_SHARE
    min_lang_prob: Annotated[Float, Field(ge=0.0, le=1.0)] = defaults.PREPARE_MIN_LANG_PROB
    skip: tuple[Literal[PREPARE_RULES], ...] = ()
    shard_lines: Positive = defaults.PREPARE_SHARD_LINES

    def settings(self) -> dict:
        """The settings as ``PrepareConfig`` takes them (less the language and the workers)."""
        settings = self.model_dump(exclude={"enabled", "docs"})
        return {**settings, "text_documents": self.docs, "skip": tuple(self.skip)}


class EmbedStage(Model):
    max_tokens: Annotated[Int, Field(ge=3)] = defaults.MAX_TOKENS
    batch_tokens: Positive | None = None
    precision: Literal[PRECISIONS] = defaults.PRECISION
    errors: Literal[TEXT_ERROR_MODES] = defaults.TEXT_ERRORS
    device: Device = defaults.DEVICE


class IndexStage(Model):
    type: Str = defaults.INDEX_TYPE
    nprobe: Positive = defaults.NPROBE
    train_sample: Positive | None = None
    seed: NonNegative = defaults.SEED
    device: Literal[INDEX_DEVICES] = defaults.DEVICE
    max_rows: Positive = defaults.INDEX_MAX_ROWS  # rows per index: a larger language is split into several
    exact: Bool = False  # skip FAISS, search the vectors exactly (fine for small corpora)


class MineStage(Model):
    k: Positive = defaults.K
    # `score`, as `mine --score`; `margin` is its old name, still read
    score: Literal[(*SCORES, *SCORE_ALIASES)] = Field(defaults.SCORE, validation_alias=AliasChoices("score", "margin"))
    retrieval: Literal[RETRIEVALS] = defaults.RETRIEVAL
    threshold: Float | None = None
    top_n: NonNegative | None = None
    length_ratio: LengthRatio = defaults.MINE_LENGTH_RATIO  # 0: no pair dropped for its lengths
    nprobe: Positive | None = None
    exact_margins: Bool = defaults.EXACT_MARGINS  # through indexes: the kept pairs' rows searched exactly
    device: Device = defaults.DEVICE

    @model_validator(mode="before")
    @classmethod
    def _one_name_for_the_score(cls, value):
        if isinstance(value, dict) and "score" in value and "margin" in value:
            raise ValueError("score and margin are one setting (margin is its old name): give one")
        return value


class AdaptStage(Model):
    """``bitextmine adapt``'s settings; with ``enabled``, each pair's encoder is adapted to its
    pools and the pools are embedded and mined again with it (the filter reads those pairs)."""

    enabled: Bool = False
    rounds: Positive = defaults.ADAPT_ROUNDS
    max_minutes: Annotated[Float, Field(ge=0.0)] | None = None
    target_precision: Annotated[Float, Field(gt=0.0, lt=1.0)] | None = None  # None: the default of what trains
    trainable: Literal["auto", "head", "network"] = "auto"
    # None: the default of what trains (adapt.config.TRAINABLE_DEFAULTS)
    steps: Positive | None = None
    batch_size: Annotated[Int, Field(ge=2)] | None = None
    hard_negatives: NonNegative | None = None
    pool_negatives: NonNegative = defaults.ADAPT_POOL_NEGATIVES
    pool_hard_negatives: Bool = defaults.ADAPT_POOL_HARD_NEGATIVES
    lr: Annotated[Float, Field(ge=0.0)] | None = None
    anchor_weight: Annotated[Float, Field(ge=0.0)] | None = None
    replay: tuple[Str, ...] = ()  # English<TAB>X pair files, relative to the pipeline file
    bundled_replay: Bool = defaults.ADAPT_BUNDLED_REPLAY  # usem3 without replay: the pairs bundled for the language
    replay_pairs: Annotated[Int, Field(ge=2)] | None = None  # None: the default of what trains
    held_out: Annotated[Float, Field(ge=0.0, lt=1.0)] = defaults.ADAPT_HELD_OUT
    min_keep_gain: Annotated[Float, Field(gt=-1.0, lt=1.0)] | None = None
    device: Device = defaults.DEVICE

    def settings(self) -> dict:
        """The settings as ``AdaptConfig`` takes them (less the languages)."""
        return {**self.model_dump(exclude={"enabled"}), "replay": tuple(self.replay)}


class FilterStage(Model):
    enabled: Bool = True
    lang_id: Bool = True  # check both sides against the pair's language codes
    skip: tuple[Literal[RULES], ...] = ()
    dedup: Literal[DEDUP_MODES] = defaults.FILTER_DEDUP
    max_score: Float | None = None
    min_chars: NonNegative = defaults.FILTER_MIN_CHARS
    max_chars: NonNegative = defaults.FILTER_MAX_CHARS
    min_tokens: NonNegative = defaults.FILTER_MIN_TOKENS
    max_side_tokens: NonNegative = defaults.FILTER_MAX_TOKENS
    max_ratio: Float = defaults.FILTER_MAX_LENGTH_RATIO
    min_letters: Float = defaults.FILTER_MIN_LETTER_SHARE
    near_copy: Float = defaults.FILTER_NEAR_COPY_JACCARD
    boilerplate: Positive = defaults.FILTER_BOILERPLATE_COUNT
    rejects: Bool = False  # also write pairs/SRC-TGT.rejects.tsv

    def rules(self) -> dict:
        """The settings of the rules, as ``FilterConfig`` takes them."""
        return self.model_dump(exclude={"enabled", "lang_id", "rejects"})

    @model_validator(mode="after")
    def _checked_as_the_filter_checks(self):
        try:
            FilterConfig(**self.rules())
        except BitextmineError as e:
            raise ValueError(e.message) from None
        return self


class Resources(Model):
    """What one task of a stage asks for (Slurm) or uses (locally)."""

    cpus: Positive = defaults.TASK_CPUS
    gpus: NonNegative = defaults.TASK_GPUS
    mem_gb: Annotated[Float, Field(gt=0)] = defaults.TASK_MEM_GB
    timeout_min: Positive = defaults.TASK_TIMEOUT_MIN


class SlurmSettings(Model):
    partition: Str | None = None
    account: Str | None = None
    qos: Str | None = None
    max_array: Positive = defaults.SLURM_MAX_ARRAY  # tasks in one job array
    constraint: Str | None = None


class LauncherSettings(Model):
    retries: NonNegative = defaults.LAUNCHER_RETRIES  # a crashed task is resubmitted at most this many times
    workers: NonNegative = defaults.LAUNCHER_WORKERS  # local CPU workers; 0: one per visible GPU, else 1
    slurm: SlurmSettings = SlurmSettings()


class PipelineFile(Model):
    """The file as written: paths not yet expanded."""

    output: Str
    encoder: Str = defaults.ENCODER
    languages: Annotated[dict[Str, list[Str]], Field(min_length=1)]
    pairs: Annotated[list[tuple[Str, Str]], Field(min_length=1)]
    prepare: PrepareStage = PrepareStage()
    embed: EmbedStage = EmbedStage()
    index: IndexStage = IndexStage()
    mine: MineStage = MineStage()
    adapt: AdaptStage = AdaptStage()
    filter: FilterStage = FilterStage()
    resources: dict[Literal[STAGES], Resources] = {}
    launcher: LauncherSettings = LauncherSettings()

    @field_validator("languages", mode="before")
    @classmethod
    def _one_shard_is_a_list_of_one(cls, value):
        if isinstance(value, dict):
            return {lang: [shards] if isinstance(shards, str) else shards for lang, shards in value.items()}
        return value


@dataclass(frozen=True)
class PipelineConfig:
    output: Path
    languages: dict[str, tuple[str, ...]]  # language -> shard paths (globs expanded)
    pairs: tuple[tuple[str, str], ...]
    encoder: str = defaults.ENCODER
    prepare: PrepareStage = field(default_factory=PrepareStage)
    embed: EmbedStage = field(default_factory=EmbedStage)
    index: IndexStage = field(default_factory=IndexStage)
    mine: MineStage = field(default_factory=MineStage)
    adapt: AdaptStage = field(default_factory=AdaptStage)
    filter: FilterStage = field(default_factory=FilterStage)
    resources: dict[str, Resources] = field(default_factory=dict)
    launcher: LauncherSettings = field(default_factory=LauncherSettings)
    source: Path | None = None
    settings: tuple[str, ...] = ()  # the --set KEY=VALUE over the file's own

    def resources_for(self, stage: str) -> Resources:
        return self.resources.get(stage, Resources())


# --- reading ------------------------------------------------------------------------------

def _expand(patterns: list[str], lang: str, base: Path, path: Path) -> tuple[str, ...]:
    if not patterns:
        raise BitextmineError(f"languages.{lang}: needs at least one shard", path=path)
    shards = []
    for pattern in patterns:
        full = pattern if os.path.isabs(pattern) else str(base / pattern)
        if glob.has_magic(full):
            matches = sorted(p for p in glob.glob(full) if os.path.isfile(p))
            if not matches:
                raise BitextmineError(f"languages.{lang}: no file matches {pattern}", path=path)
            shards += matches
        elif not os.path.isfile(full):
            raise BitextmineError(f"languages.{lang}: no such file {pattern}", path=path)
        else:
            shards.append(full)
    seen: dict[str, str] = {}
    for shard in shards:  # embedded once each: a shard given twice would be mined twice over
        real = os.path.realpath(shard)
        if real in seen:
            raise BitextmineError(f"languages.{lang}: {shard} given twice (also as {seen[real]})", path=path)
        seen[real] = shard
    return tuple(shards)


def _check_encoder_and_index(encoder: str, index: IndexStage, path: Path) -> None:
    """The encoder's kind and an index type FAISS can build, before anything runs (not after
    hours of embedding); the type is built for the default encoder's width, the one known
    without loading an encoder."""
    from bitextmine.encoders import check_encoder_spec
    from bitextmine.encoders.base import USEM3_DIM
    from bitextmine.index.faiss_index import new_index

    try:
        check_encoder_spec(encoder)
    except BitextmineError as e:
        raise BitextmineError(f"encoder: {e.message}", path=path) from None
    if encoder == "usem3" and index.type != "auto" and not index.exact:
        try:
            new_index(USEM3_DIM, index.type)
        except BitextmineError as e:
            raise BitextmineError(f"index.type: {e.message}", path=path) from None


def _replay_file(given: str, base: Path, path: Path) -> str:
    full = given if os.path.isabs(given) else str(base / given)
    if not os.path.isfile(full):
        raise BitextmineError(f"adapt.replay: no such file {given}", path=path)
    return full


def _unique_key_loader():
    """PyYAML's safe loader, refusing a key given twice in one mapping (PyYAML keeps the last,
    so `mine:` written twice would silently drop the first section)."""

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):
            seen = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=deep)
                try:
                    repeated = key in seen
                except TypeError:  # an unhashable key: the base class says so
                    break
                if repeated:
                    raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
                seen.add(key)
            return super().construct_mapping(node, deep)

    return UniqueKeyLoader


def _read_yaml(path: Path):
    if path.is_dir():
        raise BitextmineError("is a directory; give the pipeline file (see examples/pipeline-*.yaml)", path=path)
    if not path.is_file():
        raise BitextmineError("no such file", path=path)
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=_unique_key_loader())  # a safe loader
    except UnicodeDecodeError as e:
        raise BitextmineError(f"not UTF-8 text: {e}", path=path) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise BitextmineError(f"invalid YAML: {getattr(e, 'problem', e)}", path=path,
                              line=mark.line + 1 if mark else None) from None


def apply_settings(data, settings: Sequence[str]):
    """``KEY.PATH=VALUE`` settings (``--set``) over the file's; VALUE is read as YAML (``0``, ``null``, ``[a, b]``)."""

    for setting in settings:
        key, equals, text = setting.partition("=")
        names = key.strip().split(".")
        if not equals or not all(names):
            raise BitextmineError(f"--set {setting}: expected KEY=VALUE, e.g. resources.embed.gpus=0")
        try:
            value = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise BitextmineError(f"--set {setting}: the value is not valid YAML ({getattr(e, 'problem', e)})") \
                from None
        node = data
        for depth, name in enumerate(names[:-1]):
            if node.get(name) is None:
                node[name] = {}
            node = node[name]
            if not isinstance(node, dict):
                raise BitextmineError(f"--set {setting}: {'.'.join(names[:depth + 1])} is not a mapping")
        node[names[-1]] = value
    return data


def _check_language(lang: str, path: Path) -> None:
    """A language key that the filter's language ID will read as an ISO 639 code."""

    try:
        language_key(lang, f"languages.{lang}")
    except BitextmineError as e:
        raise BitextmineError(f"{e.message}; or set filter.lang_id: false", path=path) from None


def load_config(path: str | Path, settings: Sequence[str] = ()) -> PipelineConfig:
    """Read and check a pipeline file, with ``settings`` (``KEY.PATH=VALUE``) over its own.

    Relative paths are relative to the file.
    """
    path = Path(path)
    data = _read_yaml(path)
    if settings and isinstance(data, dict):
        data = apply_settings(data, settings)
    try:
        raw = parse(PipelineFile, data, path, "a pipeline file")
    except BitextmineError as e:  # a value given by --set is named as such, not blamed on the file
        given = next((s for s in settings if e.message.startswith(s.partition("=")[0].strip() + ":")), None)
        if given is None:
            raise
        raise BitextmineError(f"--set {given}: {e.message.partition(':')[2].strip()}") from None
    base = path.parent
    for lang in raw.languages:  # they name directories and files below output/
        check_name(lang, f"languages.{lang}: the language key", path)
    languages = {lang: _expand(p, lang, base, path) for lang, p in raw.languages.items()}
    if not raw.output.strip():
        raise BitextmineError("output: is empty: name the directory the run writes", path=path)
    for i, pair in enumerate(raw.pairs):
        if pair[0] == pair[1]:
            raise BitextmineError(f"pairs.{i}: {pair[0]} with itself: a pair is two languages", path=path)
        if pair in raw.pairs[:i]:
            raise BitextmineError(f"pairs.{i}: [{pair[0]}, {pair[1]}] again (pairs.{raw.pairs.index(pair)})",
                                  path=path)
        for lang in pair:
            if lang not in languages:
                raise BitextmineError(f"pairs.{i}: language {lang!r} is not under languages", path=path)
            if raw.filter.enabled and raw.filter.lang_id:
                _check_language(lang, path)
    if raw.prepare.enabled:  # prepare keeps the sentences of each language key: they must be ISO 639 codes
        for lang in languages:
            if find_language_key(base_code(lang)) is None:
                raise BitextmineError(f"languages.{lang}: prepare needs the key to be an ISO 639 code (de, deu)",
                                      path=path)
    encoder = raw.encoder
    if encoder.startswith("ckpt:") and not os.path.isabs(encoder[5:]):
        encoder = "ckpt:" + str(base / encoder[5:])
    output = (Path(raw.output) if os.path.isabs(raw.output) else base / raw.output).resolve()
    replay = tuple(_replay_file(p, base, path) for p in raw.adapt.replay)
    adapt = raw.adapt.model_copy(update={"replay": replay})
    _check_encoder_and_index(encoder, raw.index, path)
    if adapt.enabled:  # before anything runs, not when the adapt task starts after the mining
        from bitextmine.adapt.model import check_adaptable

        try:
            check_adaptable(encoder)
        except BitextmineError as e:
            raise BitextmineError(f"adapt.enabled: {e.message}", path=path) from None
    return PipelineConfig(output=output, languages=languages, pairs=tuple(raw.pairs), encoder=encoder,
                          prepare=raw.prepare, embed=raw.embed, index=raw.index, mine=raw.mine, adapt=adapt,
                          filter=raw.filter,
                          resources=dict(raw.resources), launcher=raw.launcher, source=path,
                          settings=tuple(settings))
