"""The loss of one batch of training rows, from the losses, the negatives and the teacher.

- translation pairs: LaBSE's ranking loss over the global batch (every process's
  pairs, LaBSE's cross-accelerator negatives) with duplicates masked and hard negatives,
  plus distillation toward a teacher's vectors of the sources; either may be off;
- NLI triples (``ParallelData.negative``): the mSimCSE contrastive loss.
"""

from __future__ import annotations

import logging
import time

import torch

from bitextmine.encoders.base import Encoder
from bitextmine.train.config import TrainConfig
from bitextmine.train.data import ParallelData
from bitextmine.train.distributed import gather, gather_with_grad
from bitextmine.train.losses import AdditiveMarginSoftmaxLoss, ContrastiveNLILoss, DistillationLoss
from bitextmine.train.negatives import Negatives
from bitextmine.train.trainables import TrainableEncoder

log = logging.getLogger(__name__)


class TranslationObjective:
    def __init__(self, model: TrainableEncoder, src_ids: list[list[int]], tgt_ids: list[list[int]],
                 negatives: Negatives, teacher_vectors: torch.Tensor | None, cfg: TrainConfig, device):
        self.model, self.src_ids, self.tgt_ids, self.device = model, src_ids, tgt_ids, device
        self.negatives, self.teacher_vectors = negatives, teacher_vectors  # teacher: (n, D) or None
        self.ranking = AdditiveMarginSoftmaxLoss(margin=cfg.margin, scale=cfg.scale) if cfg.translation_loss else None
        self.distill = DistillationLoss() if teacher_vectors is not None else None
        self.distill_weight = cfg.distill_weight

    def _embed(self, ids: list[list[int]], rows: list[int]) -> torch.Tensor:
        return self.model.embed([ids[i] for i in rows], self.device)  # (len(rows), D)

    def __call__(self, rows: list[int]) -> torch.Tensor:
        # embedded once, shared by both losses; this process's share of the batch
        src, tgt = self._embed(self.src_ids, rows), self._embed(self.tgt_ids, rows)  # (b, D)
        loss = torch.zeros((), device=self.device)
        if self.ranking is not None:
            hard_rows = self.negatives.hard_rows(rows)
            hard = gather_with_grad(self._embed(self.tgt_ids, hard_rows)).float() if hard_rows else None  # (B*k, D)
            src_keys, tgt_keys = self.negatives.keys(rows, self.device)
            loss = loss + self.ranking.compute_loss_from_embeddings(
                gather_with_grad(src).float(), gather_with_grad(tgt).float(), hard,  # (B, D), B = global batch
                gather(src_keys), gather(tgt_keys))
        if self.distill is not None:
            teacher_src = self.teacher_vectors[rows].to(self.device)  # (b, D)
            loss = loss + self.distill_weight * self.distill.compute_loss_from_embeddings(src.float(), tgt.float(),
                                                                                         teacher_src)
        return loss


class NLIObjective:
    def __init__(self, model: TrainableEncoder, anchor_ids: list[list[int]], positive_ids: list[list[int]],
                 negative_ids: list[list[int]], cfg: TrainConfig, device):
        self.ids = anchor_ids, positive_ids, negative_ids
        # each side gathered from every process: the contradictions of the global batch are negatives
        self.loss = ContrastiveNLILoss(lambda batch: gather_with_grad(model.embed(batch, device)), scale=cfg.scale)

    def __call__(self, rows: list[int]) -> torch.Tensor:
        return self.loss(*([ids[i] for i in rows] for ids in self.ids))


def prepare_objective(model: TrainableEncoder, data: ParallelData, cfg: TrainConfig, device,
                      teacher: Encoder | None = None) -> TranslationObjective | NLIObjective:
    """Tokenize the data, embed it with the teacher, mine hard negatives: the long part of the start."""
    started = time.time()
    if data.negative is not None:
        log.info("NLI triples: contrastive loss with contradictions as hard negatives (mSimCSE)")
        objective = NLIObjective(model, model.tokenize(data.src), model.tokenize(data.tgt),
                                 model.tokenize(data.negative), cfg, device)
    else:
        teacher_vectors = None
        if teacher is not None:
            log.info("embedding %d sources with the teacher %s", len(data), cfg.teacher)
            teacher_vectors = torch.from_numpy(teacher.encode(data.src))
        negatives = Negatives.for_data(data, cfg.hard_negatives, cfg.hard_negative_encoder, device, cfg.seed)
        objective = TranslationObjective(model, model.tokenize(data.src), model.tokenize(data.tgt), negatives,
                                         teacher_vectors, cfg, device)
    log.info("prepared %d training pairs in %.0f s", len(data), time.time() - started)
    return objective
