"""Tatoeba-style retrieval: aligned files, P@1 in both directions (xsim)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import numpy as np

from bitextmine import defaults
from bitextmine.devices import precision_name, resolve_device
from bitextmine.encoders import load_encoder
from bitextmine.errors import BitextmineError
from bitextmine.evaluate.metrics import signature, tatoeba_metrics
from bitextmine.io.text import read_shard
from bitextmine.languages import base_code, iso_language, language_key, language_suffix, same_language_codes
from bitextmine.mine.knn import exact_knn_both_ways
from bitextmine.mine.scoring import best_per, candidates
from bitextmine.progress import encode_with_progress


def top1(x: np.ndarray, y: np.ndarray, score: str = "cosine", k: int = defaults.K,
         device: str = "cpu") -> tuple[np.ndarray, np.ndarray]:
    """Best target of every source and best source of every target.

    ``score="cosine"`` is plain nearest neighbour; a margin re-ranks each query's k
    nearest candidates by margin (LASER's xsim with margin).
    """
    if score == "cosine":
        fwd, bwd = exact_knn_both_ways(x, y, 1, device=device)
        return fwd.ids[:, 0], bwd.ids[:, 0]
    fwd, bwd = exact_knn_both_ways(x, y, k, device=device)
    fwd_pairs, bwd_pairs = candidates(fwd, bwd, score)
    fwd_best, bwd_best = best_per(fwd_pairs, fwd_pairs.src), best_per(bwd_pairs, bwd_pairs.tgt)
    src_top1, tgt_top1 = np.full(len(x), -1, dtype=np.int64), np.full(len(y), -1, dtype=np.int64)
    src_top1[fwd_best.src] = fwd_best.tgt
    tgt_top1[bwd_best.tgt] = bwd_best.src
    return src_top1, tgt_top1


def evaluate_aligned(x: np.ndarray, y: np.ndarray, name: str, score: str = "cosine", device: str = "cpu",
                     k: int = defaults.K) -> dict[str, float]:
    """P@1 of aligned embeddings (row i of x translates row i of y)."""
    if len(x) != len(y):
        raise ValueError("aligned sets must have the same number of rows")
    fwd, bwd = top1(x, y, score, k, device=device)
    return tatoeba_metrics(fwd, bwd, name)


def tatoeba_sets(data_dir: str | Path, langs: list[str]) -> list[tuple[str, Path, Path]]:
    """(name, foreign file, English file) of each language in a Tatoeba directory.

    A language is named by any ISO 639 code (``de``, ``deu``, ``ger``); the files are found
    by their own code (``tatoeba.deu-eng.deu``), which names the set. A code that matches no
    file names the file its ISO 639-3 spelling would have (the error says it is missing).
    """

    data_dir = Path(data_dir)
    present = [m.group(1) for p in sorted(data_dir.glob("tatoeba.*-eng.*"))
               if (m := re.fullmatch(r"tatoeba\.([^.]+)-eng\.\1", p.name))] if data_dir.is_dir() else []
    sets = []
    for lang in langs:
        language_key(lang, "--langs")  # an unknown code is an error, not a missing file
        found = same_language_codes(lang, present)
        code = found[0] if found else iso_language(base_code(lang)).pt3  # known: language_key checked it
        sets.append((code, data_dir / f"tatoeba.{code}-eng.{code}", data_dir / f"tatoeba.{code}-eng.eng"))
    return sets


def evaluate_aligned_files(sets: list[tuple[str, Path, Path]], encoder_name: str, cfg,
                           progress: bool = False) -> dict:
    """P@1 both ways of each (name, src, tgt) set of aligned files, with one encoder.

    ``cfg`` is a ``MineConfig`` (score, k, device). Returns the report: ``metrics``
    (``NAME_p@1_mean``, ``NAME_pairs``, ...), ``primary_metric`` and ``signature``.
    """

    given = [str(path) for _, src, tgt in sets for path in (src, tgt)]
    for path in given:  # checked before the encoder loads: a pipe or - is read when its turn comes
        if path != "-" and not Path(path).exists():
            raise BitextmineError("no such file", path=path)
        if Path(path).is_dir():
            raise BitextmineError("is a directory: give a file", path=path)
    if given.count("-") > 1:
        raise BitextmineError("standard input (-) can be read once: give one file as -")
    names = [name for name, _, _ in sets]
    if len(set(names)) < len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise BitextmineError(f"two sets are named {twice!r} (a set is named by its source file): their "
                              "results would overwrite each other; give files of different names")
    cfg = replace(cfg, device=resolve_device(cfg.device))
    encoder = load_encoder(encoder_name, device=cfg.device)
    metrics: dict[str, float] = {}
    for name, src, tgt in sets:
        src_lines, tgt_lines = read_shard(str(src)).lines, read_shard(str(tgt)).lines
        if len(src_lines) != len(tgt_lines):
            raise BitextmineError(f"{len(src_lines)} lines, but {tgt} has {len(tgt_lines)}: files must be aligned",
                                  path=src)
        # each side by the encoder for its language, as `embed --lang` would (named by the file)
        x = encode_with_progress(encoder.for_language(language_suffix(src)), src_lines, f"encode {name}", progress)
        y = encode_with_progress(encoder.for_language(language_suffix(tgt)), tgt_lines, f"encode {name}", progress)
        metrics.update(evaluate_aligned(x, y, name, cfg.score, cfg.device, cfg.k))
        metrics[f"{name}_pairs"] = len(src_lines)
    return {"metrics": metrics, "primary_metric": "p@1_mean",
            "signature": signature(encoder=encoder.identity.name, weights=encoder.identity.weights_sha256[:12],
                                   score=cfg.score, k=cfg.k if cfg.score != "cosine" else None,
                                   precision=precision_name(encoder.device, encoder.precision))}
