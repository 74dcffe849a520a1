"""Evaluation: BUCC-style mining P/R/F1 (``bucc``) and Tatoeba-style retrieval accuracy
(``tatoeba``) from the figures of ``metrics``; the report of a mined file (``report``) and
threshold calibration (``calibrate``).

Evaluators are pure functions over counts, returning ``dict[str, float]`` with stable
names, so that per-shard results add up exactly and reports can be compared.
"""

from bitextmine.evaluate.metrics import (
    Counts,
    best_threshold,
    bucc_counts,
    bucc_metrics,
    precision_at_1,
    signature,
    tatoeba_metrics,
)

__all__ = ["Counts", "best_threshold", "bucc_counts", "bucc_metrics", "precision_at_1", "signature",
           "tatoeba_metrics"]
