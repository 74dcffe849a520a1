"""Training objectives for dual sentence encoders, as small ``nn.Module``s.

Each loss embeds in ``forward`` and computes in ``compute_loss_from_embeddings``, which
takes embeddings only, so it can be tested without a model.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class AdditiveMarginSoftmaxLoss(nn.Module):
    """Bidirectional in-batch softmax with additive margin (LaBSE, Feng et al. 2022).

    For a batch of translation pairs (x_i, y_i) with L2-normalised embeddings:

        S_ij = scale * (x_i . y_j - margin * [i == j])
        loss = ( CE(S, i) + CE(S^T, i) ) / 2

    Every other target in the batch is a negative for x_i, and every other source a
    negative for y_i. Hard negatives (extra targets, e.g. k per pair mined with an
    existing encoder, as in USE-xling) join the candidate targets of the source->target
    direction. ``margin=0`` gives plain translation ranking; ``scale`` = 1/temperature.

    Parallel data repeats sentences (one English sentence with several translations), so
    an in-batch "negative" can be a true translation. With ``src_keys``/``tgt_keys`` (one
    integer per distinct text), a candidate that shares the source or the target text of
    pair i is no negative for it and drops out of its softmax.

    Inputs: src (B, D), tgt (B, D), optional hard_negatives (N, D), optional src_keys and
    tgt_keys (B,). Output: a scalar.
    """

    def __init__(self, margin: float = 0.3, scale: float = 20.0):
        super().__init__()
        self.margin = margin
        self.scale = scale

    def compute_loss_from_embeddings(self, src: torch.Tensor, tgt: torch.Tensor,
                                     hard_negatives: torch.Tensor | None = None,
                                     src_keys: torch.Tensor | None = None,
                                     tgt_keys: torch.Tensor | None = None) -> torch.Tensor:
        batch = src.shape[0]
        labels = torch.arange(batch, device=src.device)
        eye = torch.eye(batch, device=src.device, dtype=torch.bool)
        sims = src @ tgt.T  # (B, B)
        sims = sims - self.margin * eye.to(sims.dtype)
        if src_keys is not None and tgt_keys is not None:
            same = (src_keys[:, None] == src_keys[None, :]) | (tgt_keys[:, None] == tgt_keys[None, :])
            sims = sims.masked_fill(same & ~eye, float("-inf"))
        fwd_logits = sims
        if hard_negatives is not None and hard_negatives.numel():
            fwd_logits = torch.cat([sims, src @ hard_negatives.T], dim=1)  # (B, B + N)
        fwd = F.cross_entropy(self.scale * fwd_logits, labels)
        bwd = F.cross_entropy(self.scale * sims.T, labels)
        return (fwd + bwd) / 2

    def get_config_dict(self) -> dict:
        return {"margin": self.margin, "scale": self.scale}

    citation = "Feng et al. 2022, Language-agnostic BERT Sentence Embedding, ACL"


class DistillationLoss(nn.Module):
    """Student mimics a teacher (Reimers & Gurevych 2020, Making Monolingual Sentence
    Embeddings Multilingual using Knowledge Distillation).

        loss = MSE(student(src), teacher(src)) + MSE(student(tgt), teacher(src))

    Both sides are pulled onto the teacher's vector of the *source* sentence, so the
    student's space stays the teacher's and sets embedded by either can be mined
    together. Inputs: student src/tgt (B, D), teacher src (B, D).
    """

    def compute_loss_from_embeddings(self, src: torch.Tensor, tgt: torch.Tensor,
                                     teacher_src: torch.Tensor) -> torch.Tensor:
        # MSE per dimension scaled back to per-vector squared distance: keeps the loss
        # on the same scale as the ranking loss whatever the dimension
        dim = src.shape[1]
        return dim * (F.mse_loss(src, teacher_src) + F.mse_loss(tgt, teacher_src))

    def get_config_dict(self) -> dict:
        return {}

    citation = "Reimers & Gurevych 2020, EMNLP"


class ContrastiveNLILoss(nn.Module):
    """English contrastive learning on NLI triples (mSimCSE, Wang et al. 2022).

    Anchor a_i, its entailment p_i as the positive, and contradictions n_j as hard
    negatives: CE over [a_i . p_j for all j | a_i . n_j for all j] at temperature 1/scale.
    Inputs: anchor, positive, negative (B, D).
    """

    def __init__(self, scale: float = 20.0):
        super().__init__()
        self.scale = scale

    def compute_loss_from_embeddings(self, anchor: torch.Tensor, positive: torch.Tensor,
                                     negative: torch.Tensor) -> torch.Tensor:
        logits = self.scale * torch.cat([anchor @ positive.T, anchor @ negative.T], dim=1)  # (B, 2B)
        return F.cross_entropy(logits, torch.arange(anchor.shape[0], device=anchor.device))

    def get_config_dict(self) -> dict:
        return {"scale": self.scale}

    citation = "Wang et al. 2022, English Contrastive Learning Can Learn Universal Cross-lingual Sentence Embeddings"
