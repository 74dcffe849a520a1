"""What ``plan`` measures on the corpus itself, where its embedding sets already exist: the
share of rows mine will keep, sampled and scored as mine scores, and re-ranking against the
largest side's own vectors."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from bitextmine import defaults
from bitextmine.embed.corpus import EmbeddingCorpus, SelectedRows
from bitextmine.errors import BitextmineError
from bitextmine.launch.config import PipelineConfig
from bitextmine.launch.costs import MinedShare
from bitextmine.launch.pipeline import embed_dirs
from bitextmine.launch.probes import rerank_rate
from bitextmine.mine.knn import as_float32, exact_knn
from bitextmine.mine.scoring import margin_scores
from bitextmine.mine.thresholds import fixed_threshold


@dataclass
class EmbeddedSide:
    corpus: EmbeddingCorpus
    rows: SelectedRows  # the rows that are not blank lines, as mine reads them


def embedded_sides(cfg: PipelineConfig, languages=None) -> dict[str, EmbeddedSide]:
    """The ``languages`` (default: all) whose embedding sets all exist, each found once: telling
    the blank rows apart reads every vector (2 GB at 2M rows)."""
    sides = {}
    for lang in languages or cfg.languages:
        try:
            corpus = EmbeddingCorpus.load(embed_dirs(cfg, lang), verify=False)
        except (BitextmineError, OSError):  # not embedded yet (or not all of it)
            continue
        sides[lang] = EmbeddedSide(corpus, SelectedRows(corpus, corpus.non_blank_ids()))
    return sides


def rates_on_embedded_sets(cfg: PipelineConfig, sides: dict[str, EmbeddedSide] | None = None) -> dict:
    """Re-ranking measured again against the largest side's own vectors, when its embedding
    sets exist: gathering random rows slows as the mapping grows (at 1M rows 0.8x the rate
    on the calibration's 128 MB file), and that side is what mine gathers from."""
    sides = embedded_sides(cfg) if sides is None else sides
    if any(lang not in sides for lang in cfg.languages):
        return {}
    lang, largest = max(sides.items(), key=lambda side: side[1].corpus.total_rows)
    database = largest.rows
    if len(database) < defaults.RERANK_GATHER_ROWS:
        return {}
    queries = as_float32(database[: 8192])
    return {"rerank_per_second": rerank_rate(queries, database),
            "rerank_measured_on": f"{lang}: {len(database):,} rows"}


def sampled_mined_share(cfg: PipelineConfig, pair: tuple[str, str], device: str,
                        budget_pairs: int = defaults.PLAN_SHARE_SAMPLE_PAIRS,
                        sides: dict[str, EmbeddedSide] | None = None) -> MinedShare | None:
    """The share of ``pair``'s smaller side that mine will keep, measured on a sample when
    both sides' embedding sets exist (None when they do not).

    Rows sampled from each side are searched exactly against the other side, their k
    candidates against the first side (for the candidates' neighbourhood means), and each
    candidate pair scored as mine scores it, against the pipeline's threshold (when mine is
    to choose one, the encoder's fixed threshold stands in for it). A row counts when one of
    its candidates passes. Mine pairs rows found from either side, so each side's counted
    rows make pairs, except that a pair found from both sides (the row is among its best
    candidate's own k nearest) is one pair: those count half from each side. The share
    falls as pools grow (nearer neighbours, lower margins), so it is measured against the
    whole other side. Rows are sampled in doubling rounds until ``PLAN_SHARE_SAMPLE_PASSING``
    of them count or the budget of vector pairs is spent; the sampling error is about
    1 / sqrt(rows counted), stated with the figure.
    """
    sides = embedded_sides(cfg, pair) if sides is None else sides
    if any(lang not in sides for lang in pair):
        return None
    corpora = [sides[lang].corpus for lang in pair]
    x, y = (sides[lang].rows for lang in pair)
    n, m, k = len(x), len(y), cfg.mine.k
    if not n or not m:
        return None
    threshold = cfg.mine.threshold
    if threshold is None:
        threshold = fixed_threshold(cfg.mine.score, corpora[0].encoder, corpora[1].encoder)[0]
    fewest, most = defaults.PLAN_SHARE_SAMPLE_ROWS
    allowed = max(fewest, min(most, budget_pairs // ((1 + k) * (n + m))))
    rng = np.random.default_rng(defaults.SEED)
    order = [rng.permutation(n)[: min(allowed, n)], rng.permutation(m)[: min(allowed, m)]]

    def counted(a, b, rows: np.ndarray) -> np.ndarray:
        """(rows with a passing candidate in ``b``, those whose best passing candidate has
        the row among its own k nearest in ``a``) for sampled ``rows`` of ``a``."""
        rows = np.sort(rows)
        found = exact_knn(as_float32(a[rows]), b, k, device=device)
        valid = found.ids >= 0
        candidates, where = np.unique(found.ids[valid], return_inverse=True)
        back = exact_knn(as_float32(b[candidates]), a, k, device=device)
        their_means = np.zeros(found.ids.shape, dtype=np.float32)
        their_means[valid] = back.mean_sim()[where]
        their_rows = np.full(found.ids.shape + (k,), -1, dtype=np.int64)
        their_rows[valid] = back.ids[where]
        scores = np.where(valid, margin_scores(found.sims, found.mean_sim()[:, None], their_means, cfg.mine.score),
                          -np.inf)
        passes = scores.max(axis=1) >= threshold
        best = scores.argmax(axis=1)
        mutual = (their_rows[np.arange(len(rows)), best] == rows[:, None]).any(axis=1)
        return np.array([passes.sum(), (passes & mutual).sum()])

    tally = [np.zeros(2, dtype=np.int64), np.zeros(2, dtype=np.int64)]  # per side: (passing, mutual)
    taken = 0
    while taken < max(len(o) for o in order):
        step = max(fewest, taken)  # doubling rounds
        for side, (a, b) in enumerate(((x, y), (y, x))):
            if taken < len(order[side]):
                tally[side] += counted(a, b, order[side][taken : taken + step])
        taken += step
        if tally[0][0] + tally[1][0] >= defaults.PLAN_SHARE_SAMPLE_PASSING:
            break
    sampled = [min(taken, len(o)) for o in order]
    pairs = sum(size * t[0] * (1 - t[1] / max(t[0], 1) / 2) / rows
                for size, t, rows in zip((n, m), tally, sampled, strict=True))
    smaller = min(n, m)
    share = min(pairs, smaller) / smaller
    passing = int(tally[0][0] + tally[1][0])
    error = f"+-{100 / math.sqrt(passing):.0f}%" if passing else "none passed"
    return MinedShare(share, f"sampled: {sampled[0]:,} + {sampled[1]:,} rows, {passing} with a passing candidate "
                             f"({error}), at threshold {threshold:g}")


def mined_shares(cfg: PipelineConfig, device: str, given: float | None = None,
                 sides: dict[str, EmbeddedSide] | None = None) -> dict[tuple[str, str], MinedShare]:
    """Each pair's share: ``given``; else sampled where its embedding sets exist; else assumed."""
    if given is not None:
        return {pair: MinedShare(given, "given") for pair in map(tuple, cfg.pairs)}
    sides = embedded_sides(cfg) if sides is None else sides
    assumed = MinedShare(defaults.PLAN_MINED_SHARE, "assumed")
    return {pair: sampled_mined_share(cfg, pair, device, sides=sides) or assumed for pair in map(tuple, cfg.pairs)}
