"""Length agreement: drop kept pairs whose sides differ in length far more than translations do.

A sentence vector says what a sentence is about, not how much of it there is, so a margin
cannot tell a translation from a pair that is only partly parallel: a headline and the
sentence that expands it, a sentence and its longer retelling in another article of the
same story. On news pools with few translations those pairs are most of what the
threshold lets through (benchmarks/RESULTS.md, "Length agreement"). Translations keep a
language pair's length ratio closely, so the pairs far off the ratio typical of the pools
are dropped. The typical ratio, and how freely the translations vary about it, are measured
on the better half of the kept pairs (mostly translations), so no per-language table is
needed: the band is ``ratio`` or, where the pools' translations vary more (short free
translations, as Tatoeba's), ``spread`` robust deviations of their log ratio. Short pairs,
whose ratio varies most, must also be off by ``slack`` characters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from bitextmine import defaults
from bitextmine.filter.text import text_length


@dataclass(frozen=True)
class LengthAgreement:
    keep: np.ndarray  # one flag per pair, in the pairs' order
    ratio: float  # the factor off the typical ratio a pair may be at least (0: nothing checked)
    typical_ratio: float | None  # source length / target length of a typical kept pair; None: not measured
    band: float | None = None  # the factor used: ratio, or wider where the pools' translations vary more
    reason: str = ""  # why nothing was checked, where nothing was

    @property
    def dropped(self) -> int:
        return int((~self.keep).sum())

    def written_precision(self, estimated: float | None) -> float | None:
        """The estimated precision of the pairs written, from ``estimated``, the threshold's: the
        dropped pairs counted as false pairs (on the benchmark's 39 pools 81 % of them were;
        benchmarks/RESULTS.md, "The estimate of the pairs written"). None where there is no
        estimate or nothing is written."""
        kept = len(self.keep)
        if estimated is None or not math.isfinite(estimated) or kept == self.dropped:
            return None
        false = max((1 - estimated) * kept - self.dropped, 0.0)
        return 1 - false / (kept - self.dropped)

    def record(self, estimated: float | None = None) -> dict:
        """What the sidecar keeps; ``estimated``: the threshold's estimated precision, if any."""
        written = self.written_precision(estimated)
        return {"ratio": self.ratio, "slack_chars": defaults.MINE_LENGTH_SLACK,
                "typical_ratio": None if self.typical_ratio is None else round(self.typical_ratio, 4),
                "band": None if self.band is None else round(self.band, 4),
                "dropped": self.dropped, **({"not_checked": self.reason} if self.reason else {}),
                **({} if written is None else {"estimated_precision_written": round(written, 4)})}


def length_agreement(scores: np.ndarray, src_texts: list[str], tgt_texts: list[str],
                     ratio: float = defaults.MINE_LENGTH_RATIO, slack: float = defaults.MINE_LENGTH_SLACK,
                     spread: float = defaults.MINE_LENGTH_SPREAD,
                     min_pairs: int = defaults.MINE_LENGTH_MIN_PAIRS) -> LengthAgreement:
    """Which pairs to keep: all but those off the typical length ratio by more than the band
    (``ratio`` times, or ``spread`` robust deviations where wider) and by more than ``slack``
    characters (a CJK character counting three)."""
    keep = np.ones(len(scores), dtype=bool)
    if not ratio:
        return LengthAgreement(keep, 0.0, None, reason="turned off")
    if len(scores) < min_pairs:
        return LengthAgreement(keep, ratio, None, reason=f"fewer than {min_pairs} pairs kept: no typical ratio")
    src_len, tgt_len = text_lengths(src_texts), text_lengths(tgt_texts)
    log_ratio = np.log(src_len / tgt_len)
    scores = np.asarray(scores)
    better = log_ratio[scores >= np.median(scores)]
    typical = float(np.median(better))
    deviation = 1.4826 * float(np.median(np.abs(better - typical)))  # the MAD, on the scale of a normal's SD
    band = max(math.log(ratio), spread * deviation)
    off = (np.abs(log_ratio - typical) > band) & (np.abs(src_len - math.exp(typical) * tgt_len) > slack)
    return LengthAgreement(~off, ratio, math.exp(typical), math.exp(band))


def written_pairs(pairs, src_texts, tgt_texts, threshold: float,
                  ratio: float = defaults.MINE_LENGTH_RATIO) -> tuple[np.ndarray, LengthAgreement]:
    """Which of ``pairs`` `mine` writes at ``threshold`` (a flag per pair): those at or above it
    whose lengths agree. ``src_texts``/``tgt_texts`` are indexed by ``pairs.src``/``pairs.tgt``,
    or are callables from those numbers to their texts (only the pairs above are read)."""
    above = np.flatnonzero(pairs.score >= threshold)
    src_of, tgt_of = (texts if callable(texts) else (lambda ids, t=texts: [t[i] for i in ids.tolist()])
                      for texts in (src_texts, tgt_texts))
    lengths = length_agreement(pairs.score[above], src_of(pairs.src[above]), tgt_of(pairs.tgt[above]), ratio)
    written = np.zeros(len(pairs.score), dtype=bool)
    written[above[lengths.keep]] = True
    return written, lengths


def text_lengths(texts: list[str]) -> np.ndarray:
    """Each text's length (``filter.text.text_length``), at least 1 so that ratios are finite."""
    return np.maximum(np.fromiter((text_length(t) for t in texts), dtype=np.float64, count=len(texts)), 1)


def log_length_ratios(src_texts: list[str], tgt_texts: list[str]) -> np.ndarray:
    """log(source length / target length) of each pair, lengths as the length agreement counts them."""
    return np.log(text_lengths(src_texts) / text_lengths(tgt_texts))


def precision_from_lengths(scores: np.ndarray, log_ratio: np.ndarray, null_log_ratio: np.ndarray,
                           best: int = defaults.LENGTH_EVIDENCE_BEST_PAIRS,
                           min_pairs: int = defaults.MINE_LENGTH_MIN_PAIRS,
                           iterations: int = defaults.ESTIMATE_EM_ITERATIONS) -> float | None:
    """The share of translations among kept pairs (``scores``, ``log_ratio``) told by their
    lengths alone, evidence the margins' gaps do not use: the pairs' log length ratios as a
    mixture of the translations' (a normal about the ratio of the best-scoring pairs, half of
    those kept, 10 to ``best``) and the false pairs' (a kernel density of ``null_log_ratio``:
    the kept pairs' runners-up, ``thresholds.runners_up``, nearly all false). Its weight is
    fitted by EM. None with fewer than ``min_pairs`` kept or null pairs. Translations keep a
    language pair's length ratio closely and false pairs do not, so the evidence is strongest on
    long sentences; where the false pairs kept are paraphrases of a like length it errs high."""
    scores, log_ratio, null = (np.asarray(a, dtype=np.float64) for a in (scores, log_ratio, null_log_ratio))
    if len(scores) < min_pairs or len(null) < min_pairs:
        return None
    top = log_ratio[np.argsort(-scores, kind="stable")[:max(10, min(best, len(scores) // 2))]]
    centre = float(np.median(top))
    spread = max(1.4826 * float(np.median(np.abs(top - centre))), 0.05)
    width = max(1.06 * float(null.std()) * len(null) ** -0.2, 1e-3)  # Silverman's rule
    # the density on a grid, read off at each kept pair: memory that does not grow with the pairs kept
    grid = np.linspace(min(log_ratio.min(), null.min()) - 4 * width, max(log_ratio.max(), null.max()) + 4 * width,
                       defaults.LENGTH_EVIDENCE_GRID)
    on_grid = np.exp(-0.5 * ((grid[:, None] - null[None, :]) / width) ** 2).mean(1) / (width * math.sqrt(2 * math.pi))
    false_density = np.interp(log_ratio, grid, on_grid)
    share = 0.5
    for _ in range(iterations):
        true_density = np.exp(-0.5 * ((log_ratio - centre) / spread) ** 2) / (spread * math.sqrt(2 * math.pi))
        weighted = share * true_density
        responsibility = weighted / np.maximum(weighted + (1 - share) * false_density, 1e-300)
        share = float(responsibility.mean())
        if responsibility.sum() > 1:
            centre = float((responsibility * log_ratio).sum() / responsibility.sum())
            spread = max(math.sqrt(float((responsibility * (log_ratio - centre) ** 2).sum() / responsibility.sum())),
                         0.03)
    return share
