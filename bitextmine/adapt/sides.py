"""What a round trains against: each side of the pools, and the replay pairs that guard the
languages the encoder already serves, as features (a side the head embeds) or fixed vectors
(a side the teacher embeds).

Replay files are pairs as ``bitextmine train`` takes them, ``English<TAB>X`` (the files of
``../shared/data/train``), a seeded sample of ``replay_pairs`` from each. For a student the
English column keeps the teacher's vectors and a file whose X the teacher embeds (a routed
language) guards nothing the training can move, so it is left out.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import torch

from bitextmine.adapt.config import AdaptConfig
from bitextmine.adapt.features import cached_features, cached_vectors
from bitextmine.adapt.model import AdaptedEncoder
from bitextmine.adapt.objective import Side

log = logging.getLogger(__name__)

HEAD_BLOCK = 8192  # sentences through the head at once when a whole side is embedded


@torch.no_grad()
def embed_side(model: AdaptedEncoder, side: Side, network=None) -> np.ndarray:
    """Every sentence of ``side`` through the trained head (``network``: another's), or its fixed vectors."""
    if side.features is None:
        return side.start.numpy()
    embedded = model.vectors_of(side.name) if network is None else None
    if embedded is not None:  # a round of the whole network (``adapt.network``) embedded them itself
        return embedded
    head = (network or model.trained).head
    out = [head(*side.features.rows(torch.arange(i, min(i + HEAD_BLOCK, len(side)))))
           for i in range(0, len(side), HEAD_BLOCK)]
    return torch.cat(out).float().cpu().numpy()


def make_side(model: AdaptedEncoder, which: int, texts: list[str], name: str, state_dir: Path, cfg: AdaptConfig,
              progress: bool) -> Side:
    """Side ``which`` (0: source, 1: target) of ``texts``: features when the model trains it."""
    if not model.trains[which]:
        return Side(torch.from_numpy(cached_vectors(state_dir, name, model.sides[which], texts, progress)), name=name)
    features = cached_features(state_dir, name, model.start, model.network, texts, cfg.max_tokens, progress)
    side = Side(torch.zeros(0), features, name)
    side.start = torch.from_numpy(embed_side(model, side, model.network))
    return side


def replay_pairs(path: str, cfg: AdaptConfig, number: int) -> tuple[list[str], list[str]]:
    """A seeded sample of ``cfg.replay_pairs`` pairs of a replay file (English, X)."""
    from bitextmine.train.data import read_tsv_pairs

    data = read_tsv_pairs(path)
    rows = np.arange(len(data))
    if len(rows) > cfg.replay_pairs:
        rows = np.sort(np.random.default_rng([cfg.seed, number]).choice(len(rows), cfg.replay_pairs, replace=False))
    return [data.src[i] for i in rows], [data.tgt[i] for i in rows]


def routed_file(model: AdaptedEncoder, path: str) -> bool:
    """Whether the X of a replay file is a language the student hands to its teacher."""
    from bitextmine.languages import speaks
    from bitextmine.train.data import language_codes, language_of_file

    codes = [c for c in language_codes(language_of_file(path)) if c != "en"]
    routed = model.start.identity.teacher_languages or ()
    return bool(codes) and all(speaks(routed, c) for c in codes)


def replay_sides(model: AdaptedEncoder, cfg: AdaptConfig, state_dir: Path, progress: bool) -> tuple[Side, Side] | None:
    """The replay pairs of every ``--replay`` file as one (English, X) pair of sides, or None."""
    english, foreign = [], []
    for number, path in enumerate(cfg.replay):
        if model.distills and routed_file(model, path):
            log.info("%s: the teacher embeds its language, which adapt leaves as it is: not replayed", path)
            continue
        a, b = replay_pairs(path, cfg, number)
        english += a
        foreign += b
    if not english:
        return None
    log.info("replay: %d pairs of %d file(s)", len(english), len(cfg.replay))
    fixed_english = model.distills  # a student's English is the teacher's
    if fixed_english:
        teacher = model.sides[model.trains.index(False)]
        a = Side(torch.from_numpy(cached_vectors(state_dir, "replay-english", teacher, english, progress)))
    else:
        a = make_side(model, 0, english, "replay-english", state_dir, cfg, progress)
    return a, make_side(model, 0 if model.trains[0] else 1, foreign, "replay-foreign", state_dir, cfg, progress)


__all__ = ["embed_side", "make_side", "replay_sides"]
