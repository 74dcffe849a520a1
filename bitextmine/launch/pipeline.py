"""The pipeline as stages of independent tasks, each followed by a merge.

    prepare one task per language           -> out/prepare/LANG/ (sentence shards + provenance), when
                                               the languages' files are documents (prepare.enabled)
    embed   one task per (language, shard)  -> out/embed/LANG/SHARD/ (a one-shard embedding set)
    index   one task per (language, part)   -> out/index/LANG/part-NNN/ (parts of <= index.max_rows rows)
    mine    one task per language pair      -> out/mine/SRC-TGT.tsv (+ .json)
    adapt   one task per language pair      -> out/adapt/SRC-TGT/ (the adapted encoder, its rounds, the pools
                                               embedded with it, pairs.tsv mined again), when adapt.enabled
    filter  one task per language pair      -> out/pairs/SRC-TGT.tsv (+ .filter.json, .rejects.tsv), from
                                               the adapted pairs when adapt.enabled

A task is a plain function of plain arguments, so a launcher can run it in this process,
in a local worker or as a Slurm array job. When a task ends, a marker records its cache
key (stage, code version, parameters, input checksums) and the SHA-256 of every file it
wrote. A task is skipped when its marker has the same key and its files still have
those checksums; a damaged or missing file makes it run again.
Mining a language split over several indexes searches each part and merges the
neighbour lists (best k of the union) before scoring, so the pairs are those of one
index over the whole language.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from bitextmine import __version__, defaults
from bitextmine.errors import BitextmineError
from bitextmine.io.atomic import atomic_path, save_json
from bitextmine.io.lock import output_locks
from bitextmine.io.pairs import read_pairs
from bitextmine.io.paths import confined
from bitextmine.io.sidecars import SIDECAR_SUFFIX, check_sidecar, read_sidecar
from bitextmine.io.text import file_sha256
from bitextmine.languages import base_code, find_language_key
from bitextmine.launch.config import PipelineConfig, PrepareStage

# The stages' own modules are imported by the functions that run them: a task process imports
# the stage it runs, not every stage (all of them: 0.35 s more a task, and numpy for the run
# driver; ARCHITECTURE.md, start-up).

log = logging.getLogger(__name__)

MARKER = ".task.json"
# bump when a stage's output changes
STAGE_VERSION = {"prepare": 1, "embed": 1, "index": 1, "mine": 1, "adapt": 1, "filter": 1}
DIRECTORY_STAGES = ("prepare", "embed", "index", "adapt")  # whose output is a directory (the marker inside it)


@dataclass
class Task:
    stage: str
    name: str
    output: Path  # a directory (embed, index) or a file (mine, filter)
    function: str  # name of a function in this module
    kwargs: dict
    key: str = ""
    inputs: list[str] = field(default_factory=list)  # what the key covers, for the record

    @property
    def marker(self) -> Path:
        """Inside an output directory; beside an output file."""
        if self.stage in DIRECTORY_STAGES:
            return self.output / MARKER
        return self.output.parent / f".{self.output.name}{MARKER}"

    def is_done(self) -> bool:
        """The marker has this task's key, and every file it lists still has its checksum."""

        try:
            marker = json.loads(self.marker.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        if not isinstance(marker, dict) or marker.get("key") != self.key:
            return False
        outputs = marker.get("outputs")
        if not isinstance(outputs, dict) or not outputs:
            return False  # a marker from before outputs were recorded: run again, to be sure
        for name, digest in outputs.items():
            try:
                path = confined(self.marker.parent, name, "outputs", self.marker)
                intact = path.is_file() and file_sha256(path) == digest
            except BitextmineError:
                intact = False
            if not intact:
                log.warning("%s %s: %s is missing or damaged; running the task again", self.stage, self.name, name)
                return False
        return True

    def mark_done(self, written: list[str], seconds: float) -> None:
        """Record the key and the checksum of every file the task wrote."""

        base = self.marker.parent
        files = []
        for path in map(Path, written):
            if path.is_dir():
                files += sorted(p for p in path.rglob("*") if p.is_file() and p.name != MARKER
                                and not p.name.startswith(".") and not p.name.endswith(".tmp"))
            elif path.is_file():
                files.append(path)
        outputs = {str(p.relative_to(base)): file_sha256(p) for p in files}
        save_json(self.marker, {"key": self.key, "stage": self.stage, "name": self.name, "inputs": self.inputs,
                                 "outputs": outputs, "seconds": round(seconds, 3),
                                 "bitextmine_version": __version__})


def cache_key(stage: str, params: dict, inputs: list[str]) -> str:
    """Stage + code version + parameters + input digests; transient settings stay out."""
    blob = json.dumps({"stage": stage, "stage_version": STAGE_VERSION[stage], "bitextmine": __version__,
                       "params": params, "inputs": inputs}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def _digest(path: str) -> str:
    return file_sha256(path)


def _shard_dir(cfg: PipelineConfig, lang: str, shard: str, taken: set[str]) -> Path:
    from bitextmine.embed import shard_file_name  # its stage only (see the imports)

    name = shard_file_name(shard, taken).removesuffix(".npy")
    taken.add(name + ".npy")
    return cfg.output / "embed" / lang / name


def prepared_dir(cfg: PipelineConfig, lang: str) -> Path:
    return cfg.output / "prepare" / lang


def text_shards(cfg: PipelineConfig, lang: str) -> tuple[str, ...]:
    """The sentence shards of a language: its files, or what prepare made of its documents."""
    if not cfg.prepare.enabled:
        return cfg.languages[lang]
    from bitextmine.prepare import prepared_shards  # its stage only (see the imports)

    try:
        return tuple(str(path) for path in prepared_shards(prepared_dir(cfg, lang)))
    except BitextmineError as e:
        raise BitextmineError(f"languages.{lang} are documents, not prepared yet ({e.message}): run the prepare "
                              "stage first", path=cfg.source) from None


def embed_dirs(cfg: PipelineConfig, lang: str) -> list[Path]:
    taken: set[str] = set()
    return [_shard_dir(cfg, lang, s, taken) for s in text_shards(cfg, lang)]


def with_prepared_shards(cfg: PipelineConfig) -> PipelineConfig:
    """The pipeline as if its languages were the prepared shards (for ``plan``, which counts lines)."""

    if not cfg.prepare.enabled:
        return cfg
    return dataclasses.replace(cfg, languages={lang: text_shards(cfg, lang) for lang in cfg.languages},
                               prepare=PrepareStage())


# --- task lists --------------------------------------------------------------------------------

def prepare_tasks(cfg: PipelineConfig) -> list[Task]:
    """One task per language: its documents in order, deduplicated across all of them."""
    if not cfg.prepare.enabled:
        return []
    settings = cfg.prepare.settings()
    tasks = []
    for lang, inputs in cfg.languages.items():
        out = prepared_dir(cfg, lang)
        digests = [_digest(path) for path in inputs]
        tasks.append(Task("prepare", lang, out, "run_prepare",
                          {"inputs": list(inputs), "output": str(out), "lang": lang,
                           "workers": cfg.resources_for("prepare").cpus, **settings},
                          cache_key("prepare", {"lang": lang, **settings}, digests), digests))
    return tasks


def embed_tasks(cfg: PipelineConfig) -> list[Task]:
    tasks = []
    settings = cfg.embed.model_dump()
    params = {"encoder": cfg.encoder, **settings}
    for lang in cfg.languages:
        for shard, out in zip(text_shards(cfg, lang), embed_dirs(cfg, lang), strict=True):
            inputs = [_digest(shard)]
            tasks.append(Task("embed", f"{lang}/{out.name}", out, "run_embed",
                              {"shard": shard, "output": str(out), "encoder": cfg.encoder, "lang": lang, **settings},
                              cache_key("embed", params, inputs), inputs))
    return tasks


def index_parts(cfg: PipelineConfig, lang: str) -> list[list[Path]]:
    """Consecutive shards grouped into parts of at most ``index.max_rows`` rows (the last one
    with the part before where it is too small to train an IVF type given)."""
    from bitextmine.embed.embedding_set import EmbeddingSet  # its stage only (see the imports)

    parts: list[list[Path]] = [[]]
    rows = [0]
    for directory in embed_dirs(cfg, lang):
        n = EmbeddingSet.load(directory).total_rows
        if parts[-1] and rows[-1] + n > cfg.index.max_rows:
            parts.append([])
            rows.append(0)
        parts[-1].append(directory)
        rows[-1] += n
    if len(parts) > 1 and rows[-1] < _training_rows(cfg, parts[0][0]):
        tail = parts.pop()  # too small to train the type given: indexed with the part before
        parts[-1] += tail
    return parts


def _training_rows(cfg: PipelineConfig, directory: Path) -> int:
    """The vectors a part needs to train ``index.type`` (``auto`` fits any size: none)."""
    from bitextmine.embed.embedding_set import EmbeddingSet  # its stage only (see the imports)
    from bitextmine.index.faiss_index import ivf_lists, new_index  # its stage only (see the imports)

    if cfg.index.type == "auto":
        return 0
    lists = ivf_lists(new_index(EmbeddingSet.load(directory).dim, cfg.index.type)) or 0
    return defaults.FAISS_MIN_POINTS_PER_CENTROID * lists


def _set_digests(dirs: list[Path]) -> list[str]:
    from bitextmine.embed.corpus import set_fingerprint  # its stage only (see the imports)
    from bitextmine.embed.embedding_set import EmbeddingSet  # its stage only (see the imports)

    return [set_fingerprint(EmbeddingSet.load(d)) for d in dirs]


def index_tasks(cfg: PipelineConfig) -> list[Task]:
    if cfg.index.exact:
        return []
    tasks = []
    settings = cfg.index.model_dump(exclude={"exact", "max_rows"})
    params = cfg.index.model_dump(exclude={"exact"})
    for lang in sorted({x for pair in cfg.pairs for x in pair}):
        for i, part in enumerate(index_parts(cfg, lang)):
            out = cfg.output / "index" / lang / f"part-{i:03d}"
            inputs = _set_digests(part)
            tasks.append(Task("index", f"{lang}/part-{i:03d}", out, "run_index",
                              {"embeddings": [str(p) for p in part], "output": str(out), **settings},
                              cache_key("index", params, inputs), inputs))
    return tasks


def index_dirs(cfg: PipelineConfig, lang: str) -> list[Path]:
    return [] if cfg.index.exact else [cfg.output / "index" / lang / f"part-{i:03d}"
                                       for i in range(len(index_parts(cfg, lang)))]


def mine_tasks(cfg: PipelineConfig) -> list[Task]:
    tasks = []
    settings = cfg.mine.model_dump()
    for src, tgt in cfg.pairs:
        out = cfg.output / "mine" / f"{src}-{tgt}.tsv"
        inputs = _set_digests(embed_dirs(cfg, src)) + _set_digests(embed_dirs(cfg, tgt))
        params = {**settings, "exact": cfg.index.exact, "index": cfg.index.model_dump()}
        tasks.append(Task("mine", f"{src}-{tgt}", out, "run_mine",
                          {"src": [str(p) for p in embed_dirs(cfg, src)], "tgt": [str(p) for p in embed_dirs(cfg, tgt)],
                           "src_index": [str(p) for p in index_dirs(cfg, src)],
                           "tgt_index": [str(p) for p in index_dirs(cfg, tgt)],
                           "output": str(out), "with_docs": cfg.prepare.enabled, **settings},
                          cache_key("mine", {**params, "with_docs": cfg.prepare.enabled}, inputs), inputs))
    return tasks


def adapted_pairs(cfg: PipelineConfig, src: str, tgt: str) -> Path:
    """Where the adapt stage writes a pair's pairs mined again."""
    return cfg.output / "adapt" / f"{src}-{tgt}" / "pairs.tsv"


def adapt_tasks(cfg: PipelineConfig) -> list[Task]:
    """One task per language pair: adapt the encoder to the pair's pools, embed them with it, mine again."""
    if not cfg.adapt.enabled:
        return []
    tasks = []
    settings = cfg.adapt.settings()
    for src, tgt in cfg.pairs:
        out = cfg.output / "adapt" / f"{src}-{tgt}"
        shards = {lang: list(text_shards(cfg, lang)) for lang in (src, tgt)}
        inputs = [_digest(path) for lang in (src, tgt) for path in shards[lang]]
        inputs += [_digest(path) for path in cfg.adapt.replay]
        langs = {lang: lang if find_language_key(base_code(lang)) else None for lang in (src, tgt)}
        params = {"encoder": cfg.encoder, "adapt": settings, "mine": cfg.mine.model_dump(),
                  "embed": cfg.embed.model_dump(), "langs": langs}
        tasks.append(Task("adapt", f"{src}-{tgt}", out, "run_adapt",
                          {"src": shards[src], "tgt": shards[tgt], "output": str(out), "encoder": cfg.encoder,
                           "src_lang": langs[src], "tgt_lang": langs[tgt], "settings": settings,
                           "mine": cfg.mine.model_dump(), "embed": cfg.embed.model_dump()},
                          cache_key("adapt", params, inputs), inputs))
    return tasks


def filter_tasks(cfg: PipelineConfig) -> list[Task]:
    tasks = []
    settings = cfg.filter.model_dump()
    for src, tgt in cfg.pairs:
        mined = adapted_pairs(cfg, src, tgt) if cfg.adapt.enabled else cfg.output / "mine" / f"{src}-{tgt}.tsv"
        out = cfg.output / "pairs" / f"{src}-{tgt}.tsv"
        inputs = [_digest(str(mined))] if mined.exists() else ["pending"]
        tasks.append(Task("filter", f"{src}-{tgt}", out, "run_filter",
                          {"mined": str(mined), "output": str(out), "src_lang": src, "tgt_lang": tgt, **settings},
                          cache_key("filter", settings, inputs), inputs))
    return tasks


STAGE_TASKS = {"prepare": prepare_tasks, "embed": embed_tasks, "index": index_tasks, "mine": mine_tasks,
               "adapt": adapt_tasks, "filter": filter_tasks}


def _stage_needs(cfg: PipelineConfig, stage: str) -> tuple[str, ...]:
    """The stages whose outputs ``stage`` reads, of those this pipeline has."""
    sentences = ("prepare",) if cfg.prepare.enabled else ()
    return {"prepare": (), "embed": sentences, "index": ("embed",), "mine": ("embed", "index"),
            "adapt": sentences, "filter": ("adapt",) if cfg.adapt.enabled else ("mine",)}[stage]


def check_needs(cfg: PipelineConfig, stage: str, stages: tuple[str, ...]) -> None:
    """A stage run alone (``--stage``) needs the stages it reads to have finished: say which
    has not, rather than fail inside a task on a missing file."""
    for needed in _stage_needs(cfg, stage):
        if needed in stages:
            continue
        try:
            unfinished = sum(not t.is_done() for t in STAGE_TASKS[needed](cfg))
        except BitextmineError:  # its own inputs are missing: it has not run either
            unfinished = -1
        if unfinished:
            raise BitextmineError(f"--stage {stage} reads the {needed} stage's output, which is not finished"
                                  + (f" ({unfinished} task(s) to run)" if unfinished > 0 else "")
                                  + f": add --stage {needed}, or run without --stage", path=cfg.source)


# --- the task functions (run anywhere: here, a local worker, a Slurm node) ---------------
# Each returns the paths it wrote, which the marker records with their checksums.

def run_prepare(inputs: list[str], output: str, lang: str, workers: int, **settings) -> list[str]:
    """Prepare a language's documents; a run killed midway resumes from its finished shards."""
    from bitextmine.prepare import PrepareConfig, prepare_inputs  # its stage only (see the imports)

    # the directory is this task's own: what other settings left there is replaced
    prepare_inputs(inputs, output, PrepareConfig(lang=lang, workers=workers, **settings), overwrite=True)
    return [output]


def run_embed(shard: str, output: str, encoder: str, max_tokens: int, batch_tokens: int | None, precision: str,
              errors: str, device: str, lang: str | None = None) -> list[str]:
    from bitextmine.embed import EmbedConfig, embed_shards  # its stage only (see the imports)
    from bitextmine.embed.embedding_set import MANIFEST_NAME, EmbeddingSet  # its stage only (see the imports)

    manifest = Path(output) / MANIFEST_NAME
    if manifest.is_file():  # the directory is this task's own: a damaged manifest is redone, not fatal
        try:
            EmbeddingSet.load(output)
        except BitextmineError as e:
            log.warning("%s; embedding the shard again", e)
            manifest.unlink()
    embed_shards([shard], output, EmbedConfig(encoder=encoder, device=device, max_tokens=max_tokens,
                                              batch_tokens=batch_tokens, precision=precision, errors=errors,
                                              overwrite=True, lang=lang), progress=False)
    return [output]


def run_index(embeddings: list[str], output: str, type: str, nprobe: int, train_sample: int | None, seed: int,
              device: str) -> list[str]:
    from bitextmine.index import IndexConfig, build_index  # its stage only (see the imports)

    build_index(embeddings, output, IndexConfig(index_type=type, nprobe=nprobe, train_sample=train_sample,
                                                seed=seed, device=device))
    return [output]


def run_mine(src: list[str], tgt: list[str], src_index: list[str], tgt_index: list[str], output: str, k: int,
             score: str, retrieval: str, threshold: float | None, top_n: int | None, nprobe: int | None,
             device: str, exact_margins: bool = defaults.EXACT_MARGINS, with_docs: bool = False,
             length_ratio: float = defaults.MINE_LENGTH_RATIO) -> list[str]:
    from bitextmine.mine import MineConfig  # its stage only (see the imports)
    from bitextmine.mine.output import PairsOutput, mine_to_files  # its stage only (see the imports)

    Path(output).parent.mkdir(parents=True, exist_ok=True)
    target = PairsOutput(output=output, with_ids=True, with_docs=with_docs)
    mine_to_files(src, tgt, MineConfig(k=k, score=score, retrieval=retrieval, threshold=threshold, top_n=top_n,
                                       nprobe=nprobe, device=device, exact_margins=exact_margins,
                                       length_ratio=length_ratio),
                  target, src_index=src_index or None, tgt_index=tgt_index or None)
    return target.files()


def run_adapt(src: list[str], tgt: list[str], output: str, encoder: str, src_lang: str | None,
              tgt_lang: str | None, settings: dict, mine: dict, embed: dict) -> list[str]:
    """Adapt the encoder to a pair's pools (resuming a killed run), embed both with it, mine again.

    Mining again is exact search: the adapted pools are searched once, by this task. Where a
    trained round is kept and the pipeline sets no threshold, it mines at the one ``adapt``
    chose for these pools (``adapt.loop.pools_threshold``): mine's own would be self-scored.
    """
    from bitextmine.adapt import AdaptConfig, adapt
    from bitextmine.embed import EmbedConfig, embed_shards
    from bitextmine.mine import MineConfig
    from bitextmine.mine.output import PairsOutput, mine_to_files

    out = Path(output)
    mine_cfg = MineConfig(**mine)
    result = adapt(src, tgt, encoder, out / "encoder", AdaptConfig(**settings, src_lang=src_lang, tgt_lang=tgt_lang),
                   resume=True, progress=False, mine=mine_cfg, restart_on_change=True)
    if result["pools_threshold"]:  # a trained round: mine's own estimate would be self-scored on these pools
        mine_cfg = dataclasses.replace(mine_cfg, threshold=result["pools_threshold"]["threshold"])
    adapted = f"ckpt:{out / 'encoder'}"
    for side, shards, lang in (("src", src, src_lang), ("tgt", tgt, tgt_lang)):
        embed_shards(shards, out / "embed" / side, EmbedConfig(encoder=adapted, lang=lang, overwrite=True,
                                                               **embed), progress=False)
    target = PairsOutput(output=str(out / "pairs.tsv"), with_ids=True)
    mine_to_files([out / "embed" / "src"], [out / "embed" / "tgt"], mine_cfg, target)
    return [output]


def run_filter(mined: str, output: str, src_lang: str, tgt_lang: str, enabled: bool, lang_id: bool,
               rejects: bool, **rules) -> list[str]:
    """Filter one pair's mined pairs (checked against their sidecar first)."""

    from bitextmine.filter import FilterConfig  # its stage only (see the imports)
    from bitextmine.filter.run import filter_pairs_to_files  # its stage only (see the imports)

    check_sidecar(mined, read_sidecar(mined + SIDECAR_SUFFIX), mined + SIDECAR_SUFFIX)
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    report, rejects_file = output + ".filter.json", output.removesuffix(".tsv") + ".rejects.tsv"
    rejected = rejects_file if rejects and enabled else None
    written = [p for p in (output, report if enabled else None, rejected) if p]
    with output_locks([output, report, rejects_file]):
        for stale in {report, rejects_file} - set(written):  # a run before with other settings wrote it
            Path(stale).unlink(missing_ok=True)
        if not enabled:
            with atomic_path(output) as tmp:
                shutil.copyfile(mined, tmp)
            return [output]
        cfg = FilterConfig(**rules, src_lang=src_lang if lang_id else None, tgt_lang=tgt_lang if lang_id else None)
        filter_pairs_to_files(read_pairs(mined), cfg, output, Path(report), rejected)
    return written


TASK_FUNCTIONS = {"run_prepare": run_prepare, "run_embed": run_embed, "run_index": run_index, "run_mine": run_mine,
                  "run_adapt": run_adapt, "run_filter": run_filter}


def execute(task: Task) -> str:
    """Run one task and mark it done (the launcher's unit of work)."""

    if task.function not in TASK_FUNCTIONS:
        raise BitextmineError(f"unknown task function {task.function}")
    started = time.time()
    written = TASK_FUNCTIONS[task.function](**task.kwargs)
    task.marker.parent.mkdir(parents=True, exist_ok=True)
    task.mark_done(written, time.time() - started)
    return str(task.output)
