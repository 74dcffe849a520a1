"""The loss of one step of ``adapt``: mined pairs ranked against the pools, anchors, replay.

Per step, a seeded batch of the round's training pairs (x_i, y_i) and, on each side, the
candidates: the batch's own sentences, each pair's nearest other sentences of the other
pool (hard negatives, found with the vectors of the round's start) and a random sample
of the pool. With S the cosines of the sources to the target candidates:

    S_ij = x_i . y_j - margin * [j == i's target]       (near-duplicates of y_i masked)
    ranking = ( CE(scale * S, target) + CE(scale * S'^T..., source) ) / 2

the second term the same from each target toward the source candidates (LaBSE's
bidirectional additive-margin softmax, over the pools instead of a batch). A side that
the teacher embeds (a student's English) has fixed vectors: then the student's x_i is also
pulled onto the teacher's y_i (``TeacherMatchLoss``, distillation). Every sentence the
trained network embeds is pulled toward its vector under the starting encoder
(``anchor_weight``), and replay pairs of languages the encoder already serves are ranked
in-batch beside the mined ones (``replay_weight``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch.nn import functional as F

from bitextmine import defaults
from bitextmine.adapt.config import AdaptConfig
from bitextmine.adapt.features import Features
from bitextmine.adapt.model import AdaptedEncoder
from bitextmine.train.losses import TeacherMatchLoss


@dataclass
class Side:
    """One side of the pairs as a step sees it: features when the trained network embeds it,
    and the starting vectors (the anchor, or the teacher's fixed vectors)."""

    start: torch.Tensor  # (n, 512) float32
    features: Features | None = None  # None: a fixed side
    name: str = ""  # pool-src, pool-tgt, replay-english, replay-foreign

    def __len__(self) -> int:
        return len(self.features) if self.features is not None else len(self.start)

    def vectors(self, model: AdaptedEncoder, rows: torch.Tensor) -> torch.Tensor:
        if self.features is None:
            return self.start[rows].to(model.device)
        return model.head(*self.features.rows(rows))

    def anchor(self, vectors: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        """Mean squared distance of ``vectors`` from their starting vectors (0 for a fixed side)."""
        if self.features is None:
            return vectors.new_zeros(())
        return TeacherMatchLoss().compute_loss_from_embeddings(vectors, self.start[rows].to(vectors.device))


@dataclass
class RoundPairs:
    """The training pairs of a round (rows of the two sides) and their hard negatives."""

    src: torch.Tensor  # (n,) int64
    tgt: torch.Tensor
    hard_tgt: torch.Tensor  # (n, h) the nearest other targets of each source
    hard_src: torch.Tensor  # (n, h) the nearest other sources of each target

    def __len__(self) -> int:
        return len(self.src)


def hard_negatives(queries: np.ndarray, database: np.ndarray, partner: np.ndarray, h: int,
                   device: str) -> torch.Tensor:
    """For each query, its ``h`` nearest database rows other than its partner (``partner[i]``)."""
    from bitextmine.mine.knn import exact_knn

    if h == 0 or len(database) < 2:
        return torch.zeros((len(queries), 0), dtype=torch.int64)
    found = exact_knn(queries, database, min(h + 1, len(database)), device=device).ids
    keep = found != partner[:, None]
    order = np.argsort(~keep, axis=1, kind="stable")[:, :h]  # the others first, in rank order
    return torch.from_numpy(np.take_along_axis(found, order, 1).astype(np.int64))


def ranking(queries: torch.Tensor, candidates: torch.Tensor, positive: torch.Tensor, masked: torch.Tensor,
            margin: float, scale: float) -> torch.Tensor:
    """Additive-margin softmax: queries (b, D) against candidates (c, D); ``positive`` (b,) the
    column of each query's partner, ``masked`` (b, c) candidates that are no negatives."""
    sims = queries @ candidates.T  # (b, c)
    sims = sims - margin * F.one_hot(positive, len(candidates)).to(sims.dtype)
    sims = sims.masked_fill(masked, float("-inf"))
    return F.cross_entropy(scale * sims, positive)


class PairObjective:
    """The loss of step ``step`` of a round: ``__call__(step) -> (loss, parts)``."""

    def __init__(self, model: AdaptedEncoder, src: Side, tgt: Side, pairs: RoundPairs, cfg: AdaptConfig,
                 seed: int, replay: tuple[Side, Side] | None = None):
        self.model, self.src, self.tgt, self.pairs, self.cfg = model, src, tgt, pairs, cfg
        self.seed, self.replay = seed, replay

    def _candidates(self, own: torch.Tensor, hard: torch.Tensor, size: int,
                    rng: np.random.Generator) -> torch.Tensor:
        sample = torch.from_numpy(rng.choice(size, min(size, self.cfg.pool_negatives), replace=False))
        return torch.unique(torch.cat([own, hard.reshape(-1), sample.to(torch.int64)]))  # sorted

    def _direction(self, queries: torch.Tensor, cands: torch.Tensor, cand_rows: torch.Tensor, partners: torch.Tensor,
                   side: Side) -> torch.Tensor:
        """Ranking of ``queries`` among ``cands`` (rows ``cand_rows`` of ``side``), partners being ``partners``."""
        positive = torch.searchsorted(cand_rows, partners)
        start = side.start[cand_rows]
        # a candidate that is nearly the partner itself (a repeated story, a reworded title) is no negative
        twin = (start[positive] @ start.T) >= defaults.DECOY_DUPLICATE_COSINE
        masked = twin & ~F.one_hot(positive, len(cand_rows)).bool()
        return ranking(queries, cands, positive, masked.to(queries.device), self.cfg.margin, self.cfg.scale)

    def __call__(self, step: int) -> tuple[torch.Tensor, dict[str, float]]:
        cfg, p = self.cfg, self.pairs
        rng = np.random.default_rng([self.seed, step])
        batch = torch.from_numpy(rng.choice(len(p), min(len(p), cfg.batch_size), replace=False))
        src_rows = self._candidates(p.src[batch], p.hard_src[batch], len(self.src), rng)
        tgt_rows = self._candidates(p.tgt[batch], p.hard_tgt[batch], len(self.tgt), rng)
        x, y = self.src.vectors(self.model, src_rows), self.tgt.vectors(self.model, tgt_rows)
        x_pairs = x[torch.searchsorted(src_rows, p.src[batch])]
        y_pairs = y[torch.searchsorted(tgt_rows, p.tgt[batch])]
        loss = (self._direction(x_pairs, y, tgt_rows, p.tgt[batch], self.tgt)
                + self._direction(y_pairs, x, src_rows, p.src[batch], self.src)) / 2
        parts = {"ranking": loss.item()}
        if self.model.distills:  # the student's side onto the teacher's vectors of its partners
            match = TeacherMatchLoss().compute_loss_from_embeddings(
                x_pairs if self.model.trains[0] else y_pairs, y_pairs if self.model.trains[0] else x_pairs)
            loss, parts["match"] = loss + match, match.item()
        anchor = self.src.anchor(x, src_rows) + self.tgt.anchor(y, tgt_rows)
        loss, parts["anchor"] = loss + cfg.anchor_weight * anchor, anchor.item()
        if self.replay is not None:
            replay = self._replay(rng)
            loss, parts["replay"] = loss + replay, replay.item()
        return loss, parts

    def _replay(self, rng: np.random.Generator) -> torch.Tensor:
        """Replay pairs ranked in-batch (both directions), anchored like the pools' sentences."""
        cfg, (a, b) = self.cfg, self.replay
        rows = torch.from_numpy(rng.choice(len(a), min(len(a), cfg.replay_batch), replace=False).astype(np.int64))
        va, vb = a.vectors(self.model, rows), b.vectors(self.model, rows)
        same = torch.arange(len(rows), device=va.device)
        none = torch.zeros(len(rows), len(rows), dtype=torch.bool, device=va.device)
        loss = (ranking(va, vb, same, none, cfg.margin, cfg.scale) + ranking(vb, va, same, none, cfg.margin,
                                                                             cfg.scale)) / 2
        if self.model.distills:
            fixed, moving = (va, vb) if a.features is None else (vb, va)
            loss = loss + TeacherMatchLoss().compute_loss_from_embeddings(moving, fixed)
        return cfg.replay_weight * loss + cfg.anchor_weight * (a.anchor(va, rows) + b.anchor(vb, rows))


__all__ = ["PairObjective", "RoundPairs", "Side", "hard_negatives", "ranking"]
