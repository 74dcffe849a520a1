"""BUCC-style mining evaluation: two sentence files with ids, and the gold pairs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bitextmine.errors import BitextmineError
from bitextmine.evaluate import best_threshold, bucc_metrics
from bitextmine.io.text import read_shard


@dataclass
class IdSentences:
    ids: list[str]
    texts: list[str]


def read_id_sentences(path: str | Path) -> IdSentences:
    """``id<TAB>sentence`` per line (the BUCC 2018 format)."""
    shard = read_shard(str(path))
    ids, texts = [], []
    for number, line in enumerate(shard.lines, 1):
        if not line.strip():
            continue
        key, sep, text = line.partition("\t")
        if not sep:
            raise BitextmineError("expected id<TAB>sentence", path=path, line=number)
        ids.append(key)
        texts.append(text.strip())
    return IdSentences(ids, texts)


def read_gold(path: str | Path) -> set[tuple[str, str]]:
    gold = set()
    for number, line in enumerate(read_shard(str(path)).lines, 1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 2:
            raise BitextmineError("expected src_id<TAB>tgt_id", path=path, line=number)
        gold.add((fields[0].strip(), fields[1].strip()))
    return gold


def evaluate_mined(src: IdSentences, tgt: IdSentences, src_unique: list[str], tgt_unique: list[str], pairs,
                   gold: set[tuple[str, str]], threshold: float) -> dict[str, float]:
    """P/R/F1 at ``threshold`` and at the best threshold, from pairs mined with none.

    ``pairs`` index ``src_unique``/``tgt_unique``; a mined pair of sentences stands for
    every combination of ids that carry those sentences.
    """
    src_ids: dict[str, list[str]] = {}
    tgt_ids: dict[str, list[str]] = {}
    for key, text in zip(src.ids, src.texts, strict=True):
        src_ids.setdefault(text, []).append(key)
    for key, text in zip(tgt.ids, tgt.texts, strict=True):
        tgt_ids.setdefault(text, []).append(key)
    id_pairs, scores = [], []
    for s, t, score in zip(pairs.src.tolist(), pairs.tgt.tolist(), pairs.score.tolist(), strict=True):
        for a in src_ids[src_unique[s]]:
            for b in tgt_ids[tgt_unique[t]]:
                id_pairs.append((a, b))
                scores.append(score)
    scores_arr = np.asarray(scores, dtype=np.float32)
    correct = np.array([p in gold for p in id_pairs], dtype=bool)
    kept = [p for p, sc in zip(id_pairs, scores, strict=True) if sc >= threshold]
    metrics = bucc_metrics(kept, gold)
    metrics["bucc_threshold"] = threshold
    best = best_threshold(scores_arr, correct, len(gold))
    metrics.update({f"bucc_best_{k}": v for k, v in best.items()})
    return metrics
