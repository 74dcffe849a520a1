"""Evaluation figures from counts: BUCC-style mining P/R/F1, the best threshold of a sweep,
Tatoeba-style retrieval accuracy (xsim), and the signature that goes with a figure.

Evaluators are pure functions over counts, returning ``dict[str, float]`` with stable
names, so that per-shard results add up exactly and reports can be compared.
"""


from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bitextmine import __version__


@dataclass
class Counts:
    true_positives: int
    false_positives: int
    false_negatives: int

    @property
    def precision(self) -> float:
        found = self.true_positives + self.false_positives
        return self.true_positives / found if found else 0.0

    @property
    def recall(self) -> float:
        gold = self.true_positives + self.false_negatives
        return self.true_positives / gold if gold else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


def bucc_counts(mined: list[tuple[str, str]], gold: set[tuple[str, str]]) -> Counts:
    found = set(mined)
    tp = len(found & gold)
    return Counts(tp, len(found) - tp, len(gold) - tp)


def bucc_metrics(mined: list[tuple[str, str]], gold: set[tuple[str, str]], prefix: str = "bucc") -> dict[str, float]:
    c = bucc_counts(mined, gold)
    return {f"{prefix}_precision": c.precision, f"{prefix}_recall": c.recall, f"{prefix}_f1": c.f1,
            f"{prefix}_pairs": c.true_positives + c.false_positives, f"{prefix}_gold": len(gold)}


def best_threshold(scores: np.ndarray, correct: np.ndarray, n_gold: int) -> dict[str, float]:
    """Sweep every cut of pairs sorted best first; the threshold with the best F1.

    ``scores`` (sorted descending) and ``correct`` (bool) describe the pairs mined with
    no threshold. The pairs at threshold t are exactly those scoring >= t (the greedy
    one-to-one selection never lets a lower pair block a higher one), so each prefix is
    the result at one threshold.
    """
    if len(scores) == 0 or n_gold == 0:
        return {"threshold": float("nan"), "precision": 0.0, "recall": 0.0, "f1": 0.0}
    tp = np.cumsum(correct)
    found = np.arange(1, len(scores) + 1)
    # only cut between different scores: a threshold keeps all pairs of equal score
    last_of_score = np.append(scores[1:] != scores[:-1], True)
    precision = tp / found
    recall = tp / n_gold
    f1 = np.where(precision + recall > 0, 2 * precision * recall / np.maximum(precision + recall, 1e-12), 0)
    f1 = np.where(last_of_score, f1, -1)
    i = int(np.argmax(f1))
    # the threshold halfway to the next lower score generalises better than the exact score
    threshold = (scores[i] + scores[i + 1]) / 2 if i + 1 < len(scores) else scores[i]
    return {"threshold": float(threshold), "precision": float(precision[i]), "recall": float(recall[i]),
            "f1": float(f1[i])}


def precision_at_1(ids: np.ndarray) -> float:
    """Share of queries whose nearest neighbour is their aligned counterpart (row i <-> i)."""
    return float((ids[:, 0] == np.arange(len(ids))).mean()) if len(ids) else 0.0


def tatoeba_metrics(fwd_top1: np.ndarray, bwd_top1: np.ndarray, prefix: str) -> dict[str, float]:
    """P@1 both ways, their mean, and xsim error (1 - P@1), each a share in [0, 1] as every
    rate the toolkit reports (LASER prints xsim error in %: 100 times these)."""
    src2tgt = precision_at_1(fwd_top1[:, None])
    tgt2src = precision_at_1(bwd_top1[:, None])
    mean = (src2tgt + tgt2src) / 2
    return {f"{prefix}_p@1_src2tgt": src2tgt, f"{prefix}_p@1_tgt2src": tgt2src, f"{prefix}_p@1_mean": mean,
            f"{prefix}_xsim_error_src2tgt": 1 - src2tgt, f"{prefix}_xsim_error_tgt2src": 1 - tgt2src}


def signature(**settings) -> str:
    """A short string of the settings behind a figure, with the version (as sacrebleu does):
    enough to make the figure again (the encoder's weights, the score and its neighbourhood,
    the threshold and how it was chosen, the precision of the products)."""
    parts = [f"{k}:{v}" for k, v in settings.items() if v is not None]
    return "|".join([*parts, f"version:{__version__}"])
