"""The pipeline as stages of independent tasks, each followed by a merge.

    embed   one task per (language, shard)  -> out/embed/LANG/SHARD/ (a one-shard embedding set)
    index   one task per (language, part)   -> out/index/LANG/part-NNN/ (parts of <= index.max_rows rows)
    mine    one task per language pair      -> out/mine/SRC-TGT.tsv (+ .json)
    filter  one task per language pair      -> out/pairs/SRC-TGT.tsv (+ .filter.json)

A task is a plain function of plain arguments, so a launcher can run it in this process,
in a local worker or as a Slurm array job. A task whose output directory holds a marker
with the same cache key (stage, code version, parameters, input checksums) is skipped.
Mining a language split over several indexes searches each part and merges the
neighbour lists (best k of the union) before scoring, so the pairs are those of one
index over the whole language.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bitextmine import __version__
from bitextmine.errors import BitextmineError
from bitextmine.io.atomic import write_json
from bitextmine.launch.config import PipelineConfig

MARKER = ".task.json"
STAGE_VERSION = {"embed": 1, "index": 1, "mine": 1, "filter": 1}  # bump when a stage's output changes


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
        if self.stage in ("embed", "index"):
            return self.output / MARKER
        return self.output.parent / f".{self.output.name}{MARKER}"

    def is_done(self) -> bool:
        try:
            return json.loads(self.marker.read_text())["key"] == self.key and self.output.exists()
        except (FileNotFoundError, json.JSONDecodeError, KeyError):
            return False


def cache_key(stage: str, params: dict, inputs: list[str]) -> str:
    """Stage + code version + parameters + input digests; transient settings stay out."""
    blob = json.dumps({"stage": stage, "stage_version": STAGE_VERSION[stage], "bitextmine": __version__,
                       "params": params, "inputs": inputs}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def _digest(path: str) -> str:
    from bitextmine.io.text import file_sha256

    return file_sha256(path)


def _shard_dir(cfg: PipelineConfig, lang: str, shard: str, taken: set[str]) -> Path:
    from bitextmine.embed import shard_file_name

    name = shard_file_name(shard, taken).removesuffix(".npy")
    taken.add(name + ".npy")
    return cfg.output / "embed" / lang / name


def embed_dirs(cfg: PipelineConfig, lang: str) -> list[Path]:
    taken: set[str] = set()
    return [_shard_dir(cfg, lang, s, taken) for s in cfg.languages[lang]]


# --- task lists --------------------------------------------------------------------------------

def embed_tasks(cfg: PipelineConfig) -> list[Task]:
    tasks = []
    params = {"encoder": cfg.encoder, **asdict(cfg.embed)}
    for lang in cfg.languages:
        for shard, out in zip(cfg.languages[lang], embed_dirs(cfg, lang), strict=True):
            inputs = [_digest(shard)]
            tasks.append(Task("embed", f"{lang}/{out.name}", out, "run_embed",
                              {"shard": shard, "output": str(out), "encoder": cfg.encoder, **asdict(cfg.embed)},
                              cache_key("embed", params, inputs), inputs))
    return tasks


def index_parts(cfg: PipelineConfig, lang: str) -> list[list[Path]]:
    """Consecutive shards grouped into parts of at most ``index.max_rows`` rows."""
    from bitextmine.embed.embedding_set import EmbeddingSet

    parts: list[list[Path]] = [[]]
    rows = 0
    for directory in embed_dirs(cfg, lang):
        n = EmbeddingSet.load(directory).total_rows
        if parts[-1] and rows + n > cfg.index.max_rows:
            parts.append([])
            rows = 0
        parts[-1].append(directory)
        rows += n
    return parts


def _set_digests(dirs: list[Path]) -> list[str]:
    from bitextmine.embed.corpus import set_fingerprint
    from bitextmine.embed.embedding_set import EmbeddingSet

    return [set_fingerprint(EmbeddingSet.load(d)) for d in dirs]


def index_tasks(cfg: PipelineConfig) -> list[Task]:
    if cfg.index.exact:
        return []
    tasks = []
    params = {k: v for k, v in asdict(cfg.index).items() if k != "exact"}
    for lang in sorted({x for pair in cfg.pairs for x in pair}):
        for i, part in enumerate(index_parts(cfg, lang)):
            out = cfg.output / "index" / lang / f"part-{i:03d}"
            inputs = _set_digests(part)
            tasks.append(Task("index", f"{lang}/part-{i:03d}", out, "run_index",
                              {"embeddings": [str(p) for p in part], "output": str(out), "type": cfg.index.type,
                               "nprobe": cfg.index.nprobe}, cache_key("index", params, inputs), inputs))
    return tasks


def index_dirs(cfg: PipelineConfig, lang: str) -> list[Path]:
    return [] if cfg.index.exact else [cfg.output / "index" / lang / f"part-{i:03d}"
                                       for i in range(len(index_parts(cfg, lang)))]


def mine_tasks(cfg: PipelineConfig) -> list[Task]:
    tasks = []
    for src, tgt in cfg.pairs:
        out = cfg.output / "mine" / f"{src}-{tgt}.tsv"
        inputs = _set_digests(embed_dirs(cfg, src)) + _set_digests(embed_dirs(cfg, tgt))
        params = {**asdict(cfg.mine), "exact": cfg.index.exact, "index": asdict(cfg.index)}
        tasks.append(Task("mine", f"{src}-{tgt}", out, "run_mine",
                          {"src": [str(p) for p in embed_dirs(cfg, src)], "tgt": [str(p) for p in embed_dirs(cfg, tgt)],
                           "src_index": [str(p) for p in index_dirs(cfg, src)],
                           "tgt_index": [str(p) for p in index_dirs(cfg, tgt)],
                           "output": str(out), **asdict(cfg.mine)}, cache_key("mine", params, inputs), inputs))
    return tasks


def filter_tasks(cfg: PipelineConfig) -> list[Task]:
    tasks = []
    for src, tgt in cfg.pairs:
        mined = cfg.output / "mine" / f"{src}-{tgt}.tsv"
        out = cfg.output / "pairs" / f"{src}-{tgt}.tsv"
        inputs = [_digest(str(mined))] if mined.exists() else ["pending"]
        settings = asdict(cfg.filter)
        tasks.append(Task("filter", f"{src}-{tgt}", out, "run_filter",
                          {"mined": str(mined), "output": str(out), "src_lang": src, "tgt_lang": tgt, **settings},
                          cache_key("filter", settings, inputs), inputs))
    return tasks


STAGE_TASKS = {"embed": embed_tasks, "index": index_tasks, "mine": mine_tasks, "filter": filter_tasks}


# --- the task functions (run anywhere: here, a local worker, a Slurm node) ---------------

def run_embed(shard: str, output: str, encoder: str, max_tokens: int, batch_tokens: int | None,
              precision: str) -> str:
    from bitextmine.embed import EmbedConfig, embed_shards

    embed_shards([shard], output, EmbedConfig(encoder=encoder, max_tokens=max_tokens, batch_tokens=batch_tokens,
                                              precision=precision, overwrite=True), progress=False)
    return output


def run_index(embeddings: list[str], output: str, type: str, nprobe: int) -> str:
    from bitextmine.index import IndexConfig, build_index

    build_index(embeddings, output, IndexConfig(index_type=type, nprobe=nprobe))
    return output


def run_mine(src: list[str], tgt: list[str], src_index: list[str], tgt_index: list[str], output: str, k: int,
             margin: str, retrieval: str, threshold: float | None, top_n: int | None) -> str:
    from bitextmine.embed.corpus import EmbeddingCorpus
    from bitextmine.mine import MineConfig, mine_corpora, write_pairs

    mined = mine_corpora(EmbeddingCorpus.load(src), EmbeddingCorpus.load(tgt),
                         MineConfig(k=k, score=margin, retrieval=retrieval, threshold=threshold, top_n=top_n),
                         src_index=src_index or None, tgt_index=tgt_index or None)
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    write_pairs(mined, output, with_ids=True)
    write_json(output + ".json", {**mined.stats, "output": output})
    return output


def run_filter(mined: str, output: str, src_lang: str, tgt_lang: str, enabled: bool, lang_id: bool,
               skip: tuple[str, ...], dedup: str, max_score: float | None, min_chars: int, max_chars: int,
               max_ratio: float) -> str:
    from bitextmine.filter import FilterConfig
    from bitextmine.filter.run import filter_pairs_to_files
    from bitextmine.io.pairs import read_pairs

    Path(output).parent.mkdir(parents=True, exist_ok=True)
    if not enabled:
        shutil.copyfile(mined, output)
        return output
    cfg = FilterConfig(disabled=tuple(skip), dedup=dedup, max_score=max_score, min_chars=min_chars,
                       max_chars=max_chars, max_ratio=max_ratio, src_lang=src_lang if lang_id else None,
                       tgt_lang=tgt_lang if lang_id else None)
    filter_pairs_to_files(read_pairs(mined), cfg, output, Path(output + ".filter.json"), None)
    return output


def execute(task: Task) -> str:
    """Run one task and mark it done (the launcher's unit of work)."""
    import time

    functions = {"run_embed": run_embed, "run_index": run_index, "run_mine": run_mine, "run_filter": run_filter}
    if task.function not in functions:
        raise BitextmineError(f"unknown task function {task.function}")
    started = time.time()
    result = functions[task.function](**task.kwargs)
    task.marker.parent.mkdir(parents=True, exist_ok=True)
    write_json(task.marker, {"key": task.key, "stage": task.stage, "name": task.name, "inputs": task.inputs,
                             "seconds": round(time.time() - started, 3), "bitextmine_version": __version__})
    return result
