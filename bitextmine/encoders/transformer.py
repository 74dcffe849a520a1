"""The transformer sentence encoder that ``bitextmine train`` builds from scratch (``ckpt:DIR``).

Token embeddings (optionally averaged with hashed character n-gram embeddings, as in
USE-xling) -> learned positions -> pre-norm transformer layers -> mean (or CLS) pooling
-> L2 normalisation. The same encoder embeds both languages (a shared dual encoder).
"""

from __future__ import annotations

import zlib
from dataclasses import asdict, dataclass, fields

import torch
from torch import nn

from bitextmine import defaults

PRESETS = defaults.TRAIN_PRESET_SHAPES  # the shapes `train --preset` names


@dataclass
class TransformerConfig:
    vocab_size: int
    dim: int = 256
    layers: int = 2
    heads: int = 4
    ff: int = 1024
    max_tokens: int = 128
    pooling: str = "mean"  # "mean" over tokens, or "cls" (the first token, BOS)
    char_ngram_buckets: int = 0  # 0: off; else hashed character 3-5-grams of each piece
    dropout: float = 0.1

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> TransformerConfig:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def piece_ngram_ids(pieces: list[str], buckets: int, orders=(3, 4, 5), max_per_piece: int = 24) -> torch.Tensor:
    """(vocab, max_per_piece) hashed character n-gram ids of each piece; -1 pads.

    A stable hash (CRC32) keeps the table identical across runs and machines.
    """
    table = torch.full((len(pieces), max_per_piece), -1, dtype=torch.int64)
    for i, piece in enumerate(pieces):
        text = f"<{piece}>"
        grams = [text[j : j + n] for n in orders for j in range(len(text) - n + 1)][:max_per_piece]
        for j, gram in enumerate(grams):
            table[i, j] = zlib.crc32(gram.encode("utf-8")) % buckets
    return table


class TransformerSentenceEncoder(nn.Module):
    def __init__(self, cfg: TransformerConfig, pieces: list[str] | None = None):
        super().__init__()
        self.cfg = cfg
        self.tokens = nn.Embedding(cfg.vocab_size, cfg.dim, padding_idx=0)
        self.positions = nn.Embedding(cfg.max_tokens, cfg.dim)
        if cfg.char_ngram_buckets:
            if pieces is None:
                pieces = [""] * cfg.vocab_size  # the table is then loaded from the checkpoint
            self.register_buffer("piece_ngrams", piece_ngram_ids(pieces, cfg.char_ngram_buckets))
            self.ngrams = nn.EmbeddingBag(cfg.char_ngram_buckets + 1, cfg.dim, mode="mean",
                                          padding_idx=cfg.char_ngram_buckets)
        layer = nn.TransformerEncoderLayer(cfg.dim, cfg.heads, cfg.ff, cfg.dropout, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, cfg.layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(cfg.dim)
        self.dropout = nn.Dropout(cfg.dropout)
        nn.init.normal_(self.tokens.weight, std=cfg.dim**-0.5)
        nn.init.normal_(self.positions.weight, std=0.02)

    def embed_tokens(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.tokens(ids)  # (B, T, D)
        if self.cfg.char_ngram_buckets:
            grams = self.piece_ngrams[ids.reshape(-1)]  # (B*T, G)
            grams = torch.where(grams < 0, self.cfg.char_ngram_buckets, grams)
            g = self.ngrams(grams).view_as(x)
            x = (x + g) / 2  # USE-xling: piece and character n-gram embeddings averaged
        return x

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """ids, mask: (B, T) with mask True on real tokens -> (B, D) L2-normalised."""
        positions = torch.arange(ids.shape[1], device=ids.device)
        x = self.dropout(self.embed_tokens(ids) + self.positions(positions)[None])
        x = self.encoder(x, src_key_padding_mask=~mask)
        x = self.norm(x)
        if self.cfg.pooling == "cls":
            pooled = x[:, 0]
        else:
            m = mask.unsqueeze(-1).to(x.dtype)
            pooled = (x * m).sum(1) / m.sum(1).clamp(min=1)
        return nn.functional.normalize(pooled, dim=-1)


def pad_batch(batch: list[list[int]], max_tokens: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """Token id lists -> (ids, mask) padded to the longest (at most ``max_tokens``)."""
    length = min(max(len(x) for x in batch), max_tokens)
    ids = torch.zeros(len(batch), length, dtype=torch.int64)
    for i, x in enumerate(batch):
        x = x[:length]
        ids[i, : len(x)] = torch.tensor(x, dtype=torch.int64)
    mask = ids != 0
    mask[:, 0] = True  # a sentence is never empty (BOS at least)
    return ids.to(device), mask.to(device)
