"""The pure core of mining: vectors in, scored row pairs out."""

from __future__ import annotations

import numpy as np

from bitextmine.devices import resolve_device
from bitextmine.mine.config import MineConfig
from bitextmine.mine.knn import Neighbours, exact_knn_both_ways
from bitextmine.mine.scoring import Pairs, candidates, retrieve


def mine_vectors(x, y, cfg: MineConfig, threshold: float | None = None, fwd: Neighbours | None = None,
                 bwd: Neighbours | None = None, device: str | None = None, progress: bool = False) -> Pairs:
    """Score and select pairs between rows of ``x`` and ``y`` (both L2-normalised).

    ``fwd``/``bwd``: neighbours already found (e.g. through an index); otherwise exact
    search runs on the config's device (``progress``: with a bar on stderr). Returns the
    pairs scoring >= the config's threshold, best first. ``threshold`` and ``device``
    stand in for the config's when given: ``threshold=-inf`` keeps every pair the
    retrieval selects, for sweeps over thresholds.
    """
    threshold = cfg.threshold if threshold is None else threshold
    if threshold is None:
        raise ValueError("mine_vectors needs a threshold: set cfg.threshold, or pass threshold=-inf for every pair")
    if fwd is None or bwd is None:
        fwd, bwd = exact_knn_both_ways(x, y, cfg.k, device=resolve_device(device or cfg.device),
                                       block_rows=cfg.block_rows, progress=progress)
    fwd_pairs, bwd_pairs = candidates(fwd, bwd, cfg.score)
    pairs = retrieve(fwd_pairs, bwd_pairs, cfg.retrieval, threshold)
    if cfg.top_n is not None:
        pairs = pairs.take(np.arange(min(cfg.top_n, len(pairs))))
    return pairs
