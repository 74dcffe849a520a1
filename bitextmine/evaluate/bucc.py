"""BUCC-style mining evaluation: two sentence files with ids, and the gold pairs."""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from bitextmine.devices import precision_name, resolve_device
from bitextmine.encoders import load_encoder
from bitextmine.errors import BitextmineError
from bitextmine.evaluate.metrics import best_threshold, bucc_metrics, signature
from bitextmine.io.text import read_shard
from bitextmine.languages import language_suffix
from bitextmine.mine.lengths import written_pairs
from bitextmine.mine.sentences import check_k
from bitextmine.mine.thresholds import mine_and_choose
from bitextmine.progress import encode_with_progress

log = logging.getLogger(__name__)


@dataclass
class IdSentences:
    ids: list[str]
    texts: list[str]


def read_id_sentences(path: str | Path) -> IdSentences:
    """``id<TAB>sentence`` per line (the BUCC 2018 format)."""
    shard = read_shard(str(path))
    ids, texts = [], []
    seen: dict[str, int] = {}
    for number, line in enumerate(shard.lines, 1):
        if not line.strip():
            continue
        key, sep, text = line.partition("\t")
        if not sep:
            raise BitextmineError("expected id<TAB>sentence", path=path, line=number)
        if key in seen:  # the gold names sentences by id: two of one id make the scores ambiguous
            raise BitextmineError(f"id {key!r} given twice (also on line {seen[key]})", path=path, line=number)
        seen[key] = number
        ids.append(key)
        texts.append(text.strip())
    return IdSentences(ids, texts)


def read_gold(path: str | Path) -> dict[tuple[str, str], int]:
    """The gold pairs ``src_id<TAB>tgt_id``, each with the line it was read from."""
    gold: dict[tuple[str, str], int] = {}
    for number, line in enumerate(read_shard(str(path)).lines, 1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 2:
            raise BitextmineError("expected src_id<TAB>tgt_id", path=path, line=number)
        gold.setdefault((fields[0].strip(), fields[1].strip()), number)
    return gold


def evaluate_mined(src: IdSentences, tgt: IdSentences, src_unique: list[str], tgt_unique: list[str], pairs,
                   gold: set[tuple[str, str]], threshold: float, length_ratio: float = 0.0) -> dict[str, float]:
    """P/R/F1 at ``threshold`` (of the pairs whose lengths agree, as `mine` writes them, with a
    ``length_ratio``) and at the best threshold, from pairs mined with none.

    ``pairs`` index ``src_unique``/``tgt_unique``; a mined pair of sentences stands for
    every combination of ids that carry those sentences.
    """
    src_ids: dict[str, list[str]] = {}
    tgt_ids: dict[str, list[str]] = {}
    for key, text in zip(src.ids, src.texts, strict=True):
        src_ids.setdefault(text, []).append(key)
    for key, text in zip(tgt.ids, tgt.texts, strict=True):
        tgt_ids.setdefault(text, []).append(key)
    written, lengths = written_pairs(pairs, src_unique, tgt_unique, threshold, length_ratio)
    id_pairs, scores, kept = [], [], []
    for s, t, score, keep in zip(pairs.src.tolist(), pairs.tgt.tolist(), pairs.score.tolist(), written.tolist(),
                                 strict=True):
        for a in src_ids[src_unique[s]]:
            for b in tgt_ids[tgt_unique[t]]:
                id_pairs.append((a, b))
                scores.append(score)
                if keep:
                    kept.append((a, b))
    scores_arr = np.asarray(scores, dtype=np.float32)
    correct = np.array([p in gold for p in id_pairs], dtype=bool)
    metrics = bucc_metrics(kept, gold)
    metrics["bucc_threshold"] = threshold
    metrics["bucc_dropped_for_lengths"] = lengths.dropped
    best = best_threshold(scores_arr, correct, len(gold))
    metrics.update({f"bucc_best_{k}": v for k, v in best.items()})
    return metrics


def evaluate_bucc_files(src: str | Path, tgt: str | Path, gold: str | Path, encoder_name: str, cfg,
                        progress: bool = False) -> dict:
    """Mine two ``id<TAB>sentence`` files with no threshold and score against the gold pairs.

    ``cfg`` is a ``MineConfig``; its threshold (default: the one `mine` chooses for these
    pools) is the one reported beside the best of the sweep. Returns the report:
    ``metrics``, ``threshold_source``, ``primary_metric`` and ``signature``. Each side is
    embedded by the encoder for its language, named by the file (``de-en.training.de``).
    """

    src_s, tgt_s, gold_lines = read_id_sentences(src), read_id_sentences(tgt), read_gold(gold)
    check_gold_ids(gold_lines, src_s, tgt_s, (src, tgt, gold))
    return evaluate_bucc_sentences(src_s, tgt_s, set(gold_lines), encoder_name, cfg,
                                   (language_suffix(src), language_suffix(tgt)), progress)


def evaluate_bucc_sentences(src_s: IdSentences, tgt_s: IdSentences, gold_pairs: set[tuple[str, str]],
                            encoder_name: str, cfg, langs: tuple[str | None, str | None] = (None, None),
                            progress: bool = False) -> dict:
    """``evaluate_bucc_files`` on sentences and gold already read; ``langs`` route each side."""

    # identical sentences searched once, blank ones never (as `mine`): a gold pair naming one is a miss
    src_unique, tgt_unique = ([t for t in dict.fromkeys(side.texts) if t.strip()] for side in (src_s, tgt_s))
    for side, unique in (("source", src_unique), ("target", tgt_unique)):
        if not unique:
            raise BitextmineError(f"no sentence to mine: every {side} sentence is blank")
    if cfg.score != "cosine":  # as `mine` refuses it
        check_k(cfg.k, {"source": len(src_unique), "target": len(tgt_unique)})
    cfg = replace(cfg, device=resolve_device(cfg.device))
    encoder = load_encoder(encoder_name, device=cfg.device)
    src_encoder, tgt_encoder = encoder.for_language(langs[0]), encoder.for_language(langs[1])
    x = encode_with_progress(src_encoder, src_unique, "encode src", progress)
    y = encode_with_progress(tgt_encoder, tgt_unique, "encode tgt", progress)
    # every pair (the sweep needs them), and the threshold `mine` would use for them
    pairs, choice = mine_and_choose(x, y, cfg, (src_encoder.identity, tgt_encoder.identity), device=cfg.device,
                                    progress=progress)
    threshold = choice.threshold  # inf when the pools show no translations: nothing kept
    log.info("threshold %g (%s)", threshold, choice.reason)
    metrics = evaluate_mined(src_s, tgt_s, src_unique, tgt_unique, pairs, gold_pairs, threshold, cfg.length_ratio)
    return {"metrics": metrics, "threshold_source": choice.reason,
            "primary_metric": "bucc_f1",
            "signature": signature(encoder=encoder.identity.name, weights=encoder.identity.weights_sha256[:12],
                                   k=cfg.k, margin=cfg.score, retrieval=cfg.retrieval,
                                   threshold=f"{threshold:.6g}", chosen=_chosen(choice, cfg),
                                   lengths=f"{cfg.length_ratio:g}",
                                   precision=precision_name(encoder.device, encoder.precision))}


def _chosen(choice, cfg) -> str:
    """How the reported threshold was chosen, for the signature: given, fixed, or adaptive at a target."""
    return f"adaptive@{cfg.target_precision:g}" if choice.source == "adaptive" else choice.source


def check_gold_ids(gold: dict[tuple[str, str], int], src: IdSentences, tgt: IdSentences, paths) -> None:
    """Refuse gold pairs that name ids the sentence files do not hold: such a pair could never
    be found and would lower the recall silently (gold of other files, of a whole corpus
    beside a part of it, or ids with a typo)."""
    src_path, tgt_path, gold_path = paths
    src_ids, tgt_ids = set(src.ids), set(tgt.ids)
    absent = [(line, a, b) for (a, b), line in gold.items() if a not in src_ids or b not in tgt_ids]
    if absent:
        line, a, b = min(absent)
        missing = (f"source id {a!r} is not in {src_path}" if a not in src_ids
                   else f"target id {b!r} is not in {tgt_path}")
        raise BitextmineError(f"{missing} ({len(absent)} of {len(gold)} gold pairs name ids the sentence files lack; "
                              "give the gold of these files)", path=gold_path, line=line)
