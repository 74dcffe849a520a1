"""Negatives of each training pair: the batch's other pairs, minus duplicates, plus hard ones.

Parallel data repeats sentences (one English sentence, several translations), so the
batch's other pairs are not all negatives: ``text_keys`` gives each distinct text one
integer, and the ranking loss masks a candidate that shares a text with the pair.
Hard negatives (USE-xling) are the pair's nearest targets under an existing encoder,
translations of it excluded; sentences that are no pair's target (``--negative-sentences``:
the pool a pair was mined from, whose near-duplicates are what mining confuses with its
translation) can be candidates too.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import torch

from bitextmine import defaults
from bitextmine.encoders import load_encoder
from bitextmine.errors import BitextmineError
from bitextmine.mine.knn import exact_knn
from bitextmine.train.data import ParallelData

log = logging.getLogger(__name__)

RANDOM_DRAWS = 100  # rounds of random replacements before giving up on too few distinct pairs


def text_keys(texts: list[str]) -> torch.Tensor:
    """One integer per distinct text (the index of its first occurrence), for each text."""
    first: dict[str, int] = {}
    return torch.tensor([first.setdefault(t, i) for i, t in enumerate(texts)], dtype=torch.long)


@dataclass
class Negatives:
    """Per training pair: its text keys, and the rows of its hard negatives (or None)."""

    src_keys: torch.Tensor  # (n,) int64
    tgt_keys: torch.Tensor  # (n,) int64
    # (n, k) rows of the candidates whose texts are hard negatives: the data's targets, then
    # the extra candidates (row n + i: extra[i])
    hard: torch.Tensor | None = None

    @classmethod
    def for_data(cls, data: ParallelData, k: int = 0, encoder_name: str = defaults.ENCODER, device: str = "cpu",
                 seed: int = defaults.SEED, extra: list[str] | None = None) -> Negatives:
        src_keys, tgt_keys = text_keys(data.src), text_keys(data.tgt)
        hard = mine_hard_negatives(data, k, encoder_name, device, src_keys, seed, extra) if k else None
        return cls(src_keys, tgt_keys, hard)

    def keys(self, rows: list[int], device) -> tuple[torch.Tensor, torch.Tensor]:
        return self.src_keys[rows].to(device), self.tgt_keys[rows].to(device)

    def hard_rows(self, rows: list[int]) -> list[int]:
        """The rows whose targets are the hard negatives of ``rows`` (k per row); [] without."""
        return [] if self.hard is None else self.hard[rows].reshape(-1).tolist()


def mine_hard_negatives(data: ParallelData, k: int, encoder_name: str, device: str,
                        src_keys: torch.Tensor | None = None, seed: int = defaults.SEED,
                        extra: list[str] | None = None) -> torch.Tensor:
    """For each pair, the k candidates nearest to its source that are not translations of it.

    The candidates are the data's targets, then the ``extra`` sentences (row n + i). Excluded:
    the pair's own target, and any candidate sharing its source or target text (in parallel
    data one sentence often has several translations, and the nearest "negative" would be
    one of them; an extra sentence that is the pair's target is that target). Slots left
    without a clean candidate take random pairs, drawn with ``seed``. Returns (n, k) rows.
    """

    extra = list(extra or [])
    encoder = load_encoder(encoder_name, device=device)
    log.info("mining %d hard negatives per pair with %s among %d targets and %d more sentences", k, encoder_name,
             len(data), len(extra))
    x = encoder.encode(data.src).astype(np.float16)
    y = encoder.encode(data.tgt + extra).astype(np.float16)
    n = len(data)
    # the data's target keys (``text_keys``); an extra sentence equal to a target gets that
    # target's key, and its source's: it is that target
    tk = text_keys(data.tgt + extra).numpy()
    sk = np.concatenate([(text_keys(data.src) if src_keys is None else src_keys).numpy(), -1 - np.arange(len(extra))])
    equal = tk[n:] < n  # an extra sentence's key is a target's row when it is that target's text
    sk[n:][equal] = sk[tk[n:][equal]]
    ids = exact_knn(x, y, min(len(y), 2 * k + defaults.TRAIN_HARD_NEGATIVE_SPARE), device=device).ids
    rows = np.arange(len(ids))[:, None]

    def translation_of(candidates, pairs):  # the same pair, or one sharing its source or target text
        return (candidates == pairs) | (sk[candidates] == sk[pairs]) | (tk[candidates] == tk[pairs])

    translation = translation_of(ids, rows)
    # stable sort puts the clean candidates first, in rank order
    order = np.argsort(translation, axis=1, kind="stable")[:, :k]
    chosen = np.take_along_axis(ids, order, 1)
    short = np.take_along_axis(translation, order, 1)  # slots with no clean candidate left
    # such slots (a sentence with many translations: all its neighbours are) take random
    # pairs, drawn again while they are translations too
    rng = np.random.default_rng(seed)
    for _ in range(RANDOM_DRAWS):
        if not short.any():
            break
        rows_short = np.nonzero(short)[0]
        draw = rng.integers(0, len(ids), len(rows_short))
        chosen[short] = draw
        short[short] = translation_of(draw, rows_short)
    if short.any():
        raise BitextmineError("too few distinct pairs for --hard-negatives: no negative that is not a translation")
    return torch.from_numpy(chosen)
