"""The loss of one batch of training rows, from the losses, the negatives and the teacher.

- translation pairs: LaBSE's ranking loss over the global batch (every process's
  pairs, LaBSE's cross-accelerator negatives) with duplicates masked and hard negatives,
  plus distillation toward a teacher's vectors of the sources; either may be off;
- NLI triples (``ParallelData.negative``): the mSimCSE contrastive loss;
- ``student_sides="target"`` (teach languages the teacher does not know): the student
  embeds only the target side and learns the teacher's cached vectors of the source
  side (``TargetSideObjective``), with guards that hold English and the teacher's own
  languages in place; it draws its own batches (``sampling``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from bitextmine.encoders.base import Encoder
from bitextmine.errors import BitextmineError
from bitextmine.languages import speaks
from bitextmine.train.config import TrainConfig
from bitextmine.train.data import ParallelData, language_codes
from bitextmine.train.distributed import gather, gather_with_grad, world
from bitextmine.train.losses import AdditiveMarginSoftmaxLoss, ContrastiveNLILoss, DistillationLoss, TeacherMatchLoss
from bitextmine.train.negatives import Negatives, text_keys
from bitextmine.train.sampling import TargetBatch, TargetBatches
from bitextmine.train.teacher_cache import TeacherCache
from bitextmine.train.trainables import TrainableEncoder

log = logging.getLogger(__name__)


class TranslationObjective:
    """``extra_ids``: the token ids of the hard negatives' candidates that are no pair's target
    (``Negatives.hard`` rows past the pairs)."""

    def __init__(self, model: TrainableEncoder, src_ids: list[list[int]], tgt_ids: list[list[int]],
                 negatives: Negatives, teacher_vectors: torch.Tensor | None, cfg: TrainConfig, device,
                 extra_ids: list[list[int]] | None = None):
        self.model, self.src_ids, self.tgt_ids, self.device = model, src_ids, tgt_ids, device
        self.candidate_ids = tgt_ids + extra_ids if extra_ids else tgt_ids
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
            hard = gather_with_grad(self._embed(self.candidate_ids, hard_rows)).float() if hard_rows else None
            # hard: (B*k, D); the pairs' sides below: (B, D), B = the global batch
            src_keys, tgt_keys = self.negatives.keys(rows, self.device)
            loss = loss + self.ranking.compute_loss_from_embeddings(
                gather_with_grad(src).float(), gather_with_grad(tgt).float(), hard,
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


class TargetSideObjective:
    """The student embeds the new languages' sentences (the target side) only.

    Per batch (``TargetBatch``): the student's vector of each X is pulled onto the
    teacher's vector of its English side (``TeacherMatchLoss``, weight ``distill_weight``)
    and ranked against the batch's teacher vectors plus a bank of the teacher's vectors of
    earlier batches' English and of the ``negative_sentences`` (``AdditiveMarginSoftmaxLoss``,
    both directions; pairs that share a text masked); English sentences and sentences of the
    teacher's languages are held on the teacher's own vectors (``guard_weight``). The teacher embeds each text
    once (``TeacherCache``); one student pass embeds all of the batch. With several
    processes each embeds its share; negatives stay per process.
    """

    def __init__(self, model: TrainableEncoder, targets: TeacherTargets, cfg: TrainConfig, device):
        self.model, self.t, self.device = model, targets, device
        self.match = TeacherMatchLoss()
        self.ranking = AdditiveMarginSoftmaxLoss(margin=cfg.margin, scale=cfg.scale) if cfg.translation_loss else None
        self.distill_weight, self.guard_weight = cfg.distill_weight, cfg.guard_weight
        self.sampler = TargetBatches([len(rows) for rows in targets.languages.values()], cfg.language_alpha,
                                     cfg.batch_size, targets.english_texts, len(targets.known_ids),
                                     cfg.guard_english, cfg.guard_known,
                                     cfg.negative_bank if cfg.translation_loss else 0, cfg.seed)

    def batches(self, start_batch: int, rank: int = 0, world_size: int = 1) -> Iterator[TargetBatch]:
        return self.sampler.iterate(start_batch, rank, world_size)

    def __call__(self, batch: TargetBatch) -> torch.Tensor:
        t, rows = self.t, lambda a: torch.as_tensor(a, dtype=torch.long)  # noqa: E731
        english = t.pair_english[rows(batch.pairs)]  # (n,) cache rows of the pairs' English sides
        guards = torch.cat([rows(batch.english), t.english_texts + rows(batch.known)])  # (e + k,)
        # earlier batches' English (their vectors computed then) and the negative sentences
        bank = torch.cat([t.pair_english[rows(batch.bank)], t.negatives])
        teacher = t.cache.get(torch.cat([english, guards, bank])).to(self.device)  # one teacher pass, if any
        n, e, g = len(english), len(batch.english), len(guards)
        ids = ([t.x_ids[i] for i in batch.pairs] + [t.english_ids[i] for i in batch.english]
               + [t.known_ids[i] for i in batch.known])
        student = self.model.embed(ids, self.device).float()  # (n + e + k, D): one student pass
        loss = self.distill_weight * self.match.compute_loss_from_embeddings(student[:n], teacher[:n])
        if self.ranking is not None and n:
            loss = loss + self.ranking.compute_loss_from_embeddings(
                student[:n], teacher[:n], teacher[n + g :], t.x_keys[rows(batch.pairs)].to(self.device),
                english.to(self.device), bank.to(self.device))
        guard = (self.match.compute_loss_from_embeddings(student[n : n + e], teacher[n : n + e])
                 + self.match.compute_loss_from_embeddings(student[n + e : n + g], teacher[n + e : n + g]))
        return loss + self.guard_weight * guard


class TeacherTargets:
    """What ``TargetSideObjective`` trains on, prepared once: token ids, the cache of the
    teacher's vectors (English texts first, then the known-language guard sentences) and
    the pairs of each new language (consecutive rows)."""

    def __init__(self, model: TrainableEncoder, data: ParallelData, known: set[str], cfg: TrainConfig,
                 teacher: Encoder, cache_dir: Path | None):
        groups: dict[str, list[int]] = {}
        for i, lang in enumerate(data.language or ["data"] * len(data)):
            groups.setdefault(lang, []).append(i)
        self.languages = {lang: rows for lang, rows in groups.items() if lang not in known}
        if not self.languages:
            raise BitextmineError("every training file is in a language the teacher knows: give pairs of the "
                                  "new language (English<TAB>X)")
        rows = [i for lang_rows in self.languages.values() for i in lang_rows]
        negatives = negative_sentences(cfg.negative_sentences)
        english = sorted({data.src[i] for i in rows} | set(negatives))
        self.english_texts = len(english)
        index = {text: k for k, text in enumerate(english)}
        self.pair_english = torch.tensor([index[data.src[i]] for i in rows], dtype=torch.long)  # (n,)
        self.negatives = torch.tensor(sorted({index[text] for text in negatives}), dtype=torch.long)
        x_texts = [data.tgt[i] for i in rows]
        self.x_keys = text_keys(x_texts)
        known_texts = guard_sentences(data, groups, known, cfg) if cfg.guard_known > 0 else []
        # the teacher's vectors: the English texts, then the known-language guard sentences
        self.cache = TeacherCache(teacher, english + known_texts, None if cache_dir is None else cache_dir / "teacher",
                                  cfg.max_tokens)
        self.x_ids = model.tokenize(x_texts)
        self.english_ids = model.tokenize(english) if cfg.guard_english > 0 else []
        self.known_ids = model.tokenize(known_texts)


def negative_sentences(path: str | None) -> list[str]:
    """The non-blank lines of ``--negative-sentences`` (none without it)."""
    if path is None:
        return []
    from bitextmine.io.text import read_lines

    sentences = [line for line in read_lines(path) if line.strip()]
    if not sentences:
        raise BitextmineError("no sentences to rank against (--negative-sentences)", path=path)
    log.info("%s: %d sentences to rank against", path, len(sentences))
    return sentences


def guard_sentences(data: ParallelData, groups: dict[str, list[int]], known: set[str], cfg: TrainConfig) -> list[str]:
    """A seeded sample of ``cfg.guard_sentences`` distinct target sentences of the known languages."""
    texts = sorted({data.tgt[i] for lang in known for i in groups.get(lang, [])})
    if len(texts) > cfg.guard_sentences:
        chosen = np.random.default_rng(cfg.seed).choice(len(texts), cfg.guard_sentences, replace=False)
        texts = [texts[i] for i in sorted(chosen)]
    return texts


def known_languages(data: ParallelData, teacher: Encoder) -> set[str]:
    """The training files whose names name a language the teacher knows (``train.eng-deu``)."""

    teacher_languages = teacher.identity.languages or ()
    return {lang for lang in set(data.language or ())
            if any(speaks(teacher_languages, code) for code in language_codes(lang) if code != "en")}


def prepare_target_objective(model: TrainableEncoder, data: ParallelData, cfg: TrainConfig, device,
                             teacher: Encoder, cache_dir: Path | None) -> TargetSideObjective:
    """The target-side objective (``TrainConfig`` checked that a teacher is given)."""

    if world()[0] != 0:
        cache_dir = None  # one process keeps the teacher's vectors
    known = known_languages(data, teacher)
    if cfg.route_known:  # the teacher embeds English and its own languages: nothing to guard
        cfg = replace(cfg, guard_english=0.0, guard_known=0.0)
    for lang in sorted(known):
        log.info("%s: a language the teacher knows, %s", lang,
                 "embedded by the teacher (--route-known): left out" if cfg.route_known
                 else "a guard (held on the teacher's vectors)" if cfg.guard_known > 0
                 else "left out (no --guard-known)")
    targets = TeacherTargets(model, data, known, cfg, teacher, cache_dir)
    log.info("new languages: %s", ", ".join(f"{lang} ({len(rows):,})" for lang, rows in targets.languages.items()))
    return TargetSideObjective(model, targets, cfg, device)


def prepare_objective(model: TrainableEncoder, data: ParallelData, cfg: TrainConfig, device,
                      teacher: Encoder | None = None,
                      cache_dir: Path | None = None) -> TranslationObjective | NLIObjective | TargetSideObjective:
    """Tokenize the data, embed it with the teacher, mine hard negatives: the long part of the start.

    ``cache_dir``: where the teacher's vectors are kept for a resumed run (target side).
    """
    started = time.time()
    if cfg.student_sides == "target":
        objective = prepare_target_objective(model, data, cfg, device, teacher, cache_dir)
    elif data.negative is not None:
        log.info("NLI triples: contrastive loss with contradictions as hard negatives (mSimCSE)")
        objective = NLIObjective(model, model.tokenize(data.src), model.tokenize(data.tgt),
                                 model.tokenize(data.negative), cfg, device)
    else:
        teacher_vectors = None
        if teacher is not None:
            log.info("embedding %d sources with the teacher %s", len(data), cfg.teacher)
            teacher_vectors = torch.from_numpy(teacher.encode(data.src))
        extra = negative_sentences(cfg.negative_sentences)
        negatives = Negatives.for_data(data, cfg.hard_negatives, cfg.hard_negative_encoder, device, cfg.seed, extra)
        objective = TranslationObjective(model, model.tokenize(data.src), model.tokenize(data.tgt), negatives,
                                         teacher_vectors, cfg, device, model.tokenize(extra) if extra else None)
    log.info("prepared %d training pairs in %.0f s", len(data), time.time() - started)
    return objective
