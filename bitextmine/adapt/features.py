"""Sentence features: the part of the encoder that ``adapt`` leaves as it is, computed once.

The default encoder's network sums each sentence's token features (1280 numbers) and then
maps that sum to the sentence vector through a small network, its head
(``USEm3Network.sentence_features`` and ``head``). ``adapt`` trains the head only, so the
token-level pass, nearly all of the cost of embedding, runs once per sentence for the
whole run; every round re-embeds the pools through the head in seconds.

Features are kept under ``OUT/state`` (float32, 5 KB a sentence) with a key (the
encoder's identity, the texts' checksum, ``max_tokens``), so a resumed run reads them
back instead of computing them again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from bitextmine import defaults
from bitextmine.adapt.pools import texts_digest
from bitextmine.encoders.base import Encoder, token_budget_batches
from bitextmine.io.atomic import atomic_path, save_json

log = logging.getLogger(__name__)

FEATURE_DIM = 1280  # the sum of the token features: token embedding (512) + three n-gram branches (3 x 256)


@dataclass
class Features:
    """Sentence features (n, 1280) float32 and token counts (n,) of a list of texts."""

    sums: torch.Tensor
    lengths: torch.Tensor

    def __len__(self) -> int:
        return len(self.lengths)

    def rows(self, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.sums[rows], self.lengths[rows]


def compute_features(encoder: Encoder, network, texts: list[str], max_tokens: int,
                     batch_tokens: int = defaults.BATCH_TOKENS, progress: bool = False,
                     desc: str = "features") -> Features:
    """The features of ``texts`` as ``encoder`` (a usem3-architecture one, whose network is
    ``network``) tokenizes and truncates them."""
    from bitextmine.encoders.usem3 import packed_tokens
    from bitextmine.progress import progress_bar

    ids, _ = encoder.tokenize_truncated(texts, max_tokens)
    sums = torch.zeros(len(texts), FEATURE_DIM, dtype=torch.float32)
    lengths = torch.tensor([len(x) for x in ids], dtype=torch.int64)
    device = str(next(network.parameters()).device)
    with torch.inference_mode(), progress_bar(total=len(texts), desc=desc, unit="sent", disable=not progress) as bar:
        for batch in token_budget_batches(lengths.tolist(), batch_tokens):
            flat, counts = packed_tokens([ids[i] for i in batch], device)
            rows = torch.as_tensor(batch)
            sums[rows] = network.sentence_features(flat, counts)[: len(batch)].float().cpu()
            bar.update(len(batch))
    return Features(sums, lengths)


def cached_features(directory: Path, name: str, encoder: Encoder, network, texts: list[str], max_tokens: int,
                    progress: bool = False) -> Features:
    """``compute_features``, kept in ``directory`` as NAME.npy (+ NAME.json, the key) for a resumed run."""
    key = {"encoder": encoder.identity.to_dict(), "texts": len(texts), "texts_sha256": texts_digest(texts),
           "max_tokens": max_tokens}
    meta, data = directory / f"{name}.json", directory / f"{name}.npy"
    if meta.is_file() and data.is_file():
        import json

        try:
            same = json.loads(meta.read_text(encoding="utf-8")) == key
            stored = np.load(data) if same else None
        except (ValueError, OSError):
            stored = None
        if stored is not None and stored.shape == (len(texts), FEATURE_DIM + 1):
            log.info("%s: features of %d sentences read back", name, len(texts))
            sums = torch.from_numpy(np.ascontiguousarray(stored[:, :FEATURE_DIM]))
            return Features(sums, torch.from_numpy(stored[:, FEATURE_DIM].astype(np.int64)))
    features = compute_features(encoder, network, texts, max_tokens, progress=progress, desc=name)
    directory.mkdir(parents=True, exist_ok=True)
    # the token count travels as the last column
    stored = np.concatenate([features.sums.numpy(), features.lengths.numpy()[:, None].astype(np.float32)], axis=1)
    with atomic_path(data) as tmp, open(tmp, "wb") as f:
        np.save(f, stored)
    save_json(meta, key)
    return features


def cached_vectors(directory: Path, name: str, encoder: Encoder, texts: list[str],
                   progress: bool = False) -> np.ndarray:
    """``encoder``'s vectors of ``texts`` (a side that does not train: a teacher's, as ``embed``
    makes them), kept in ``directory`` as NAME.npy (+ NAME.json) for a resumed run."""
    import json

    from bitextmine.progress import encode_with_progress

    key = {"encoder": encoder.identity.to_dict(), "texts": len(texts), "texts_sha256": texts_digest(texts),
           "max_tokens": defaults.MAX_TOKENS}
    meta, data = directory / f"{name}.json", directory / f"{name}.npy"
    if meta.is_file() and data.is_file():
        try:
            stored = np.load(data) if json.loads(meta.read_text(encoding="utf-8")) == key else None
        except (ValueError, OSError):
            stored = None
        if stored is not None and stored.shape == (len(texts), encoder.dim):
            log.info("%s: vectors of %d sentences read back", name, len(texts))
            return stored
    vectors = np.asarray(encode_with_progress(encoder, texts, name, progress), dtype=np.float32)
    directory.mkdir(parents=True, exist_ok=True)
    with atomic_path(data) as tmp, open(tmp, "wb") as f:
        np.save(f, vectors)
    save_json(meta, key)
    return vectors


__all__ = ["FEATURE_DIM", "Features", "cached_features", "cached_vectors", "compute_features"]
