"""Training objectives for dual sentence encoders, one small ``nn.Module`` each.

As in sentence-transformers, a loss holds the embedding function of the model it trains:
``forward`` takes batches of token ids, embeds them and calls
``compute_loss_from_embeddings``, which takes embeddings only and is tested without a
model. The training loop, which shares one set of embeddings between several losses
(ranking + distillation) and gathers them across devices first, calls
``compute_loss_from_embeddings`` itself.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn
from torch.nn import functional as F

from bitextmine import defaults

# token-id lists -> (B, D) L2-normalised embeddings, with gradient
Embed = Callable[[list[list[int]]], torch.Tensor]


class _EmbeddingLoss(nn.Module):
    def __init__(self, embed: Embed | None = None):
        super().__init__()
        self.embed = embed

    def _embed(self, ids: list[list[int]]) -> torch.Tensor:
        if self.embed is None:
            raise TypeError(f"{type(self).__name__} was built without an embed function: "
                            "call compute_loss_from_embeddings")
        return self.embed(ids).float()


class AdditiveMarginSoftmaxLoss(_EmbeddingLoss):
    """Bidirectional in-batch softmax with additive margin (LaBSE).

    For a batch of translation pairs (x_i, y_i) with L2-normalised embeddings:

        S_ij = x_i . y_j - margin * [i == j]
        loss = ( CE(scale * S, i) + CE(scale * S^T, i) ) / 2

    Every other target in the batch is a negative for x_i, and every other source a
    negative for y_i. Hard negatives (extra targets, e.g. k per pair mined with an
    existing encoder, as in USE-xling) join the candidate targets of the source->target
    direction only.

    Parallel data repeats sentences (one English sentence with several translations), so
    an in-batch "negative" can be a true translation. With ``src_keys``/``tgt_keys`` (one
    integer per distinct text), a candidate that shares the source or the target text of
    pair i is no negative for it and drops out of its softmax.

    Args:
        embed: the model's embedding function (needed by ``forward`` only).
        margin: subtracted from the positive's cosine; 0 gives plain translation ranking.
        scale: multiplies the cosines before the softmax; ``scale = 1 / temperature``, so
            20 is a temperature of 0.05.

    Inputs (``compute_loss_from_embeddings``): src (B, D), tgt (B, D), optional
    hard_negatives (N, D), optional src_keys and tgt_keys (B,) integers, optional
    hard_negative_keys (N,): the target-text key of each hard negative, which is masked
    for the pair whose target it is. Output: a scalar.

    References: Feng et al. 2022, Language-agnostic BERT Sentence Embedding (LaBSE), ACL;
    Yang et al. 2019, Improving Multilingual Sentence Embedding Using Bi-directional Dual
    Encoder with Additive Margin Softmax, IJCAI.
    """

    citation = "Feng et al. 2022, Language-agnostic BERT Sentence Embedding, ACL"

    def __init__(self, embed: Embed | None = None, margin: float = defaults.TRAIN_MARGIN,
                 scale: float = defaults.TRAIN_SCALE):
        super().__init__(embed)
        self.margin = margin
        self.scale = scale

    def forward(self, src_ids: list[list[int]], tgt_ids: list[list[int]],
                hard_negative_ids: list[list[int]] | None = None, src_keys: torch.Tensor | None = None,
                tgt_keys: torch.Tensor | None = None) -> torch.Tensor:
        hard = None if not hard_negative_ids else self._embed(hard_negative_ids)
        return self.compute_loss_from_embeddings(self._embed(src_ids), self._embed(tgt_ids), hard, src_keys,
                                                 tgt_keys)

    def compute_loss_from_embeddings(self, src: torch.Tensor, tgt: torch.Tensor,
                                     hard_negatives: torch.Tensor | None = None,
                                     src_keys: torch.Tensor | None = None,
                                     tgt_keys: torch.Tensor | None = None,
                                     hard_negative_keys: torch.Tensor | None = None) -> torch.Tensor:
        batch = src.shape[0]
        labels = torch.arange(batch, device=src.device)  # (B,): pair i's target is column i
        eye = torch.eye(batch, device=src.device, dtype=torch.bool)  # (B, B)
        sims = src @ tgt.T - self.margin * eye.to(src.dtype)  # (B, B)
        if src_keys is not None and tgt_keys is not None:
            same = (src_keys[:, None] == src_keys[None, :]) | (tgt_keys[:, None] == tgt_keys[None, :])  # (B, B)
            sims = sims.masked_fill(same & ~eye, float("-inf"))
        fwd_logits = sims
        if hard_negatives is not None and hard_negatives.numel():
            extra = src @ hard_negatives.T  # (B, N)
            if hard_negative_keys is not None and tgt_keys is not None:  # a negative that is pair i's target text
                extra = extra.masked_fill(tgt_keys[:, None] == hard_negative_keys[None, :], float("-inf"))
            fwd_logits = torch.cat([sims, extra], dim=1)  # (B, B + N)
        fwd = F.cross_entropy(self.scale * fwd_logits, labels)
        bwd = F.cross_entropy(self.scale * sims.T, labels)
        return (fwd + bwd) / 2

    def get_config_dict(self) -> dict:
        return {"margin": self.margin, "scale": self.scale}


class DistillationLoss(_EmbeddingLoss):
    """The student mimics a teacher's embedding space (multilingual knowledge distillation).

        loss = D * ( MSE(student(src), teacher(src)) + MSE(student(tgt), teacher(src)) )

    Both sides are pulled onto the teacher's vector of the *source* sentence, so the
    student's space stays the teacher's and sets embedded by either can be mined
    together. MSE is a mean over dimensions; times D it is the mean squared distance
    per vector, on the ranking loss's scale whatever the width.

    Args:
        embed: the student's embedding function (needed by ``forward`` only).

    Inputs (``compute_loss_from_embeddings``): student src (B, D), student tgt (B, D),
    teacher src (B, D). Output: a scalar.

    References: Reimers & Gurevych 2020, Making Monolingual Sentence Embeddings
    Multilingual using Knowledge Distillation, EMNLP.
    """

    citation = "Reimers & Gurevych 2020, EMNLP"

    def forward(self, src_ids: list[list[int]], tgt_ids: list[list[int]], teacher_src: torch.Tensor) -> torch.Tensor:
        return self.compute_loss_from_embeddings(self._embed(src_ids), self._embed(tgt_ids), teacher_src)

    def compute_loss_from_embeddings(self, src: torch.Tensor, tgt: torch.Tensor,
                                     teacher_src: torch.Tensor) -> torch.Tensor:
        dim = src.shape[1]
        return dim * (F.mse_loss(src, teacher_src) + F.mse_loss(tgt, teacher_src))

    def get_config_dict(self) -> dict:
        return {}


class TeacherMatchLoss(_EmbeddingLoss):
    """The student's vectors onto given teacher vectors: the mean squared distance.

        loss = mean_i || student_i - teacher_i ||^2

    What multilingual distillation minimises (Reimers & Gurevych 2020; LASER3, Heffernan
    et al. 2022), for one side at a time: the new language's sentences onto the teacher's
    vectors of their English translations, or sentences the teacher knows (English, its
    languages) onto the teacher's own vectors of them, which holds them in place. The
    teacher's side carries no gradient. On the ranking loss's scale whatever the width.

    Args:
        embed: the student's embedding function (needed by ``forward`` only).

    Inputs (``compute_loss_from_embeddings``): student (B, D), teacher (B, D). Output: a scalar.

    References: Reimers & Gurevych 2020, EMNLP; Heffernan, Çelebi & Schwenk 2022, Bitext
    Mining Using Distilled Sentence Representations for Low-Resource Languages, Findings of EMNLP.
    """

    citation = "Heffernan, Çelebi & Schwenk 2022, Findings of EMNLP"

    def forward(self, ids: list[list[int]], teacher: torch.Tensor) -> torch.Tensor:
        return self.compute_loss_from_embeddings(self._embed(ids), teacher)

    def compute_loss_from_embeddings(self, student: torch.Tensor, teacher: torch.Tensor) -> torch.Tensor:
        if not len(student):
            return student.new_zeros(())
        return (student - teacher.to(student.dtype)).pow(2).sum(dim=1).mean()

    def get_config_dict(self) -> dict:
        return {}


class ContrastiveNLILoss(_EmbeddingLoss):
    """English contrastive learning on NLI triples (mSimCSE).

    Anchor a_i, its entailment p_i as the positive, the contradictions n_j as hard
    negatives:

        loss = CE( scale * [a_i . p_j for all j | a_i . n_j for all j], i )

    Args:
        embed: the model's embedding function (needed by ``forward`` only).
        scale: ``scale = 1 / temperature``.

    Inputs (``compute_loss_from_embeddings``): anchor, positive, negative (B, D).
    Output: a scalar.

    References: Wang et al. 2022, English Contrastive Learning Can Learn Universal
    Cross-lingual Sentence Embeddings, EMNLP.
    """

    citation = "Wang et al. 2022, English Contrastive Learning Can Learn Universal Cross-lingual Sentence Embeddings"

    def __init__(self, embed: Embed | None = None, scale: float = defaults.TRAIN_SCALE):
        super().__init__(embed)
        self.scale = scale

    def forward(self, anchor_ids: list[list[int]], positive_ids: list[list[int]],
                negative_ids: list[list[int]]) -> torch.Tensor:
        return self.compute_loss_from_embeddings(self._embed(anchor_ids), self._embed(positive_ids),
                                                 self._embed(negative_ids))

    def compute_loss_from_embeddings(self, anchor: torch.Tensor, positive: torch.Tensor,
                                     negative: torch.Tensor) -> torch.Tensor:
        logits = self.scale * torch.cat([anchor @ positive.T, anchor @ negative.T], dim=1)  # (B, 2B)
        return F.cross_entropy(logits, torch.arange(anchor.shape[0], device=anchor.device))

    def get_config_dict(self) -> dict:
        return {"scale": self.scale}
