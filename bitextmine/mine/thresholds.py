"""The threshold `mine` uses when none is given.

**Chosen on the pools** (the default): the no-gold estimate (``mine/no_gold.py``) gives the
precision and recall of the pairs kept at every threshold; the threshold is the one of best
estimated F1 among those whose estimated precision reaches the target
(``defaults.TARGET_PRECISION``; ``defaults.TARGET_HEADROOM`` above it where that costs almost
no estimated F1, a margin for the estimate's error), unless reaching the target costs more than
``defaults.TARGET_F1_TOLERANCE`` of estimated F1: then the pools' translations and
non-translations overlap so much (an encoder that barely knows a language) that the target
would keep a small part of the translations, and the threshold of best estimated F1 is taken
instead, said so. Pools whose gaps set the translations apart weakly
(``defaults.ESTIMATE_CLEAR_SEPARATION``) get the threshold of best estimated F1 at once: there
the estimated recall is least sure, and the target's cost looked smaller than it was. When
the estimate cannot be trusted the threshold falls back to the fixed one below, said so: the
two sides disagree on how many translations there are, or one side's gaps show no group of
translations where the other's do (``blind_side``).
When the gaps show no group of translations, the pools may share none, or the encoder may
barely know a language: the two look alike (separations of 3.6-3.9 on unrelated news pools,
4.1-4.3 on a student's Hindi news with 3 % translations), so the encoder's own fixed
threshold, measured to be safe for its space, is used (on those unrelated pools it kept 0
and 2 pairs; on the Hindi pools the best threshold's pairs), said so; with no threshold of
the encoder's own, or a side whose gaps count almost no translations, nothing is kept.

**Fixed thresholds** are what the encoder declares for its embedding space (its identity's
``mining_thresholds``, recorded in every set it embeds): a student checkpoint declared
compatible with its teacher shares its scale, so it shares its thresholds, and which side
is ``--src`` does not matter. Encoders that declare none get the LASER-scale values of
``defaults.THRESHOLDS``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

import numpy as np

from bitextmine import defaults
from bitextmine.embed.corpus import release_mapped
from bitextmine.encoders import shared_thresholds
from bitextmine.mine.knn import Neighbours, SideSearches, exact_knn_both_ways
from bitextmine.mine.no_gold import (
    NoGoldEstimate,
    averaged_over_margins,
    decoy_best_scores,
    estimate_from_gaps,
    few_translations,
    mean_separation,
    query_gaps,
    translations_found,
)
from bitextmine.mine.scoring import SCORE_ALIASES, Pairs, candidates, retrieve

log = logging.getLogger(__name__)

# --- fixed thresholds, by embedding space ------------------------------------------------

DECLARED = "encoder default (fixed)"  # how a threshold the encoder declares for its space is named


def fixed_threshold(score: str, *identities) -> tuple[float, str]:
    """(threshold, how it was chosen) for ``score`` without looking at the pools: the one the
    identities' encoder declares for their embedding space (``EncoderIdentity``), else LASER's."""
    score = SCORE_ALIASES.get(score, score)
    declared = shared_thresholds(*identities)
    if declared is not None and score in declared.scores:
        return declared.scores[score], DECLARED
    return defaults.THRESHOLDS[score], "LASER-scale default (fixed)"


# --- the estimate and the choice -----------------------------------------------------------

def estimate_without_gold(pairs, x, y, cfg, fwd: Neighbours, bwd: Neighbours, device: str = "cpu",
                          seed: int = defaults.SEED, searches: SideSearches | None = None) -> NoGoldEstimate:
    """The gap-mixture estimate for ``pairs`` (every pair the retrieval selects, scored by
    ``cfg.score``): a sample of each side searched in the other (``no_gold.py``), exactly or as
    ``searches`` says (through the indexes mining searched, which at 300,000 rows a side took
    a 17th of the exact searches' time; benchmarks/RESULTS.md, "The estimate's searches
    through the indexes")."""
    on = searches or SideSearches()
    src = query_gaps(x, y, bwd.mean_sim(), cfg.k, cfg.score, seed, device, search=on.tgt)
    tgt = query_gaps(y, x, fwd.mean_sim(), cfg.k, cfg.score, seed + 1, device, search=on.src)
    decoys = None
    if cfg.score != "cosine":  # a margin divides out the monolingual/cross-lingual difference; a cosine does not
        decoys = tuple(decoy_best_scores(z, cfg.k, cfg.score, seed + i, device, search=own)
                       for i, (z, own) in enumerate(((x, on.src), (y, on.tgt))))
    by_ratio = estimate_from_gaps(pairs.score, src, tgt, decoys, seed)
    if cfg.score != "distance":
        return by_ratio
    by_distance = estimate_from_gaps(pairs.score, src.in_distance(), tgt.in_distance(), decoys, seed)
    return combined_over_margins(by_ratio, by_distance)


def combined_over_margins(by_ratio: NoGoldEstimate, by_distance: NoGoldEstimate) -> NoGoldEstimate:
    """The mean of both margins' false pairs (``averaged_over_margins``), but the distance gaps'
    estimate alone where the ratio gaps separate weakly and the two count translations for at
    least ``defaults.ESTIMATE_DISTANCE_ALONE_SHARE`` of the smaller side: there the ratio gaps
    took many translations for false pairs and the threshold lay above the best one."""
    method = by_ratio.details.get("method", "")
    rows = by_ratio.details.get("rows")
    translations = (by_ratio.translations + by_distance.translations) / 2
    if (by_ratio.warning or by_distance.warning or not rows or by_distance.details.get("method") != method
            or weakly_separated(by_ratio) is None
            or translations < defaults.ESTIMATE_DISTANCE_ALONE_SHARE * min(rows)):
        return averaged_over_margins(by_ratio, by_distance)
    # the separation rules read the ratio gaps' mixtures, as they were measured
    in_distance = {key: by_distance.details[key] for key in ("translations_by_side", "mixtures")}
    return replace(by_distance, details={**by_ratio.details, "distance_gaps": in_distance,
                                         "method": method + ", distance gaps alone (weak separation)"})


@dataclass
class ThresholdChoice:
    threshold: float
    source: str  # user | adaptive | fallback | none | adapt (adapt's, on the pools it trained on)
    reason: str  # what the sidecar and the log say, e.g. "adaptive: estimated precision 0.93 at target 0.90"
    estimate: NoGoldEstimate | None = None
    warning: str | None = None  # what the user must know about this choice (also on stderr)
    index: int | None = None  # the choice's row in the estimate's curves
    translations_seen: bool = True  # False: the estimate saw no group of translations (none, or its fallback)
    caveat: str | None = None  # how sure the estimate is, where that is less than usual (also in ``warning``)
    measured_error: str | None = None  # how far off such estimates were on pools with gold (WEAK/CLEAR_ESTIMATE_ERROR)
    length_precision: float | None = None  # the kept pairs' lengths' estimate (``add_length_evidence``)

    def __post_init__(self):
        if self.source == "none":  # nothing kept: no translations were seen
            self.translations_seen = False

    @property
    def gap_precision(self) -> float | None:
        """The gap mixture's estimated precision at the threshold chosen."""
        if self.estimate is None or self.index is None:
            return None
        return float(self.estimate.precision[self.index])

    @property
    def estimated_precision(self) -> float | None:
        """The gaps' estimate, or its mean with the lengths' where they were read (weak gaps)."""
        gaps = self.gap_precision
        if gaps is None or self.length_precision is None:
            return gaps
        return (gaps + self.length_precision) / 2

    def interval(self) -> tuple[float, float] | None:
        """The bootstrap interval of the estimated precision at the threshold chosen (of the
        gaps' sampling: with the lengths' estimate, each end's mean with it)."""
        e = self.estimate
        if e is None or self.index is None or e.precision_low is None:
            return None
        low, high = float(e.precision_low[self.index]), float(e.precision_high[self.index])
        if self.length_precision is None:
            return low, high
        return (low + self.length_precision) / 2, (high + self.length_precision) / 2


def best_within(f1: np.ndarray, eligible: np.ndarray, slack: float) -> tuple[int, float]:
    """(row, F1) of the best F1 among the ``eligible`` rows: the lowest threshold within ``slack`` of it."""
    scores = np.where(eligible, f1, -1.0)
    top = float(scores.max())
    return int(np.argmax(scores >= top - slack)), top


def pick_threshold(precision: np.ndarray, recall: np.ndarray, target: float,
                   tolerance: float = defaults.TARGET_F1_TOLERANCE, headroom: float = 0.0,
                   headroom_cost: float = defaults.TARGET_HEADROOM_F1_COST,
                   slack: float | None = None) -> tuple[int, bool]:
    """(row, whether the target is met) on a curve of ascending thresholds: the best F1 at
    precision >= ``target``, unless that costs more than ``tolerance`` of the best F1 overall
    (then the best F1's row). Where the target is met, the best F1 at precision >= ``target +
    headroom`` is taken instead when it costs at most ``headroom_cost`` of F1: a margin for
    the estimate's error where it comes cheap. "The best F1" is the lowest threshold whose
    F1 lies within ``slack`` (``defaults.ESTIMATE_F1_SLACK``) of the best: more pairs where
    the estimated F1 is flat."""
    slack = defaults.ESTIMATE_F1_SLACK if slack is None else slack
    p, r = np.nan_to_num(precision, nan=0.0), np.nan_to_num(recall, nan=0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        f1 = np.where(p + r > 0, 2 * p * r / (p + r), 0.0)

    def best_of(eligible: np.ndarray) -> tuple[int, float]:  # looked up at each call: a variant may replace it
        return best_within(f1, eligible, slack)

    best, best_f1 = best_of(np.ones(len(f1), dtype=bool))
    reaching = p >= target
    if reaching.any():
        i, i_f1 = best_of(reaching)
        if i_f1 >= best_f1 - tolerance:
            above = p >= target + headroom
            if headroom > 0 and above.any():
                j, j_f1 = best_of(above)
                if j_f1 >= i_f1 - headroom_cost:
                    return j, True
            return i, True
    return best, False


# How far the estimate (with the kept pairs' lengths) is off where the gaps separate weakly,
# measured against gold on 34 such pools of two draws (benchmarks/RESULTS.md, "The runners-up as
# the lengths' null"): said beside the threshold, since the bootstrap interval sees only the sampling error
WEAK_ESTIMATE_ERROR = ("on 34 pools with gold whose gaps separate this weakly the estimated precision was 0.1-40 "
                       "points off the truth (8 on average, within 5 on 22): within 14 where 15 % of the sentences "
                       "have a translation, over it by up to 40 where 1 % do; a sample of these pools' pairs judged "
                       "by hand gives a surer threshold (--threshold)")
# and where they separate clearly (the same section): the model's error, which the bootstrap interval does not see
CLEAR_ESTIMATE_ERROR = ("on 32 pools with gold whose gaps separate clearly (or whose sentences are mostly "
                        "translated) the estimated precision at the threshold was within 5 points of the truth on 29 "
                        "(2.1 points off on average, 9 at most)")


def choose_from_estimate(estimate: NoGoldEstimate, target: float, fixed: float, fixed_reason: str,
                         tolerance: float = defaults.TARGET_F1_TOLERANCE,
                         headroom: float = defaults.TARGET_HEADROOM, slack: float | None = None) -> ThresholdChoice:
    """The threshold of an estimate (``pick_threshold``, with ``headroom`` above the target
    where the gaps separate clearly, and its F1 ``slack``); ``fixed`` when the estimate cannot be trusted; nothing
    kept when it finds no translations."""
    if not len(estimate.thresholds):
        return ThresholdChoice(fixed, "fallback", f"{fixed_reason}; no pairs to estimate precision on", estimate)
    none_by_side = min(estimate.details["translations_by_side"]) < defaults.ESTIMATE_NO_TRANSLATIONS
    no_group, separation = not translations_found(estimate), mean_separation(estimate)
    if no_group and fixed_reason == DECLARED and separation is not None and not none_by_side:
        why = (f"the candidates' gaps show no group of translations apart from the rest (separation "
               f"{separation:.1f} < {defaults.ESTIMATE_MIN_SEPARATION:g}): the pools share few or no "
               "translations, or the encoder barely knows a language, so the encoder's own fixed threshold is used, "
               "which keeps few pairs of unrelated pools. Check the pairs; --threshold sets another")
        return ThresholdChoice(fixed, "fallback", f"{fixed_reason}; {why}", estimate, why, translations_seen=False)
    if no_group or none_by_side:
        why = ("no translations found in these pools (the candidates' gaps show no group of translations apart from "
               "the rest): nothing kept. Do the two sides translate each other, and does the encoder know both "
               "languages? --threshold keeps pairs anyway")
        return ThresholdChoice(float("inf"), "none", f"none: {why}", estimate, why)
    blind = blind_side(estimate)
    if estimate.warning or blind:
        doubt = estimate.warning or (
            f"the {('source', 'target')[blind[0]]} side's gaps show no group of translations (separation "
            f"{blind[1]:.1f} < {defaults.ESTIMATE_MIN_SEPARATION:g}) where the other side's do, so the two "
            "sides' counts of translations cannot both be right")
        why = f"the no-gold estimate cannot be trusted here ({doubt})"
        return ThresholdChoice(fixed, "fallback", f"{fixed_reason}; {why}", estimate, why)
    weak = weakly_separated(estimate) if tolerance < 1 else None  # a tolerance of 1: the target always
    i, met = pick_threshold(estimate.precision, estimate.recall, target, 0.0 if weak else tolerance,
                            0.0 if weak else headroom, slack=slack)
    precision, f1 = float(np.nan_to_num(estimate.precision[i])), float(estimate.f1()[i])
    caveat = few_translations(estimate)
    if weak:  # the separation is said once: in the reason below where the target is not met
        apart = (f"the candidates' gaps set the translations apart weakly (separation {weak:.1f} < "
                 f"{defaults.ESTIMATE_CLEAR_SEPARATION:g})")
        caveat = "; ".join(filter(None, [f"{apart}: {WEAK_ESTIMATE_ERROR}" if met else WEAK_ESTIMATE_ERROR, caveat]))
    measured = WEAK_ESTIMATE_ERROR if weak else CLEAR_ESTIMATE_ERROR
    if weak and not met:
        why = (f"{apart}: the encoder tells these pools' translations apart poorly, so the threshold of best "
               f"estimated F1 is used ({f1:.2f} at estimated precision {precision:.2f})")
        return ThresholdChoice(float(estimate.thresholds[i]), "adaptive", f"adaptive (best F1): {why}", estimate,
                               "; ".join(filter(None, [why, caveat])), i, caveat=caveat, measured_error=measured)
    if met:
        return ThresholdChoice(float(estimate.thresholds[i]), "adaptive",
                               f"adaptive: estimated precision {precision:.2f} at target {target:.2f}, "
                               f"estimated F1 {f1:.2f}", estimate, caveat, i, caveat=caveat, measured_error=measured)
    why = (f"estimated precision {target:.2f} would keep few of the translations (best estimated F1 {f1:.2f} "
           f"at precision {precision:.2f}): the encoder tells these pools' translations apart poorly, so the "
           "threshold of best F1 is used")
    return ThresholdChoice(float(estimate.thresholds[i]), "adaptive", f"adaptive (best F1): {why}", estimate,
                           "; ".join(filter(None, [why, caveat])), i, caveat=caveat, measured_error=measured)


def blind_side(estimate: NoGoldEstimate) -> tuple[int, float] | None:
    """(side, its separation) where one side's gaps show no group of translations
    (``defaults.ESTIMATE_MIN_SEPARATION``) though the sides' mean does; None otherwise, and
    for pools that are mostly translations (there the gaps are known to blur, the decoy sees).
    A student's Hindi news at 3 %: Hindi queries 5.0, English queries 4.4, counting 36 and 159
    translations where 15 are; the estimate's threshold kept 14 % precision, the encoder's
    declared one 38.5 % (the best threshold 40.0 %) (benchmarks/RESULTS.md)."""
    separations = [m["separation"] for m in estimate.details.get("mixtures", [])]
    if len(separations) != 2 or mostly_translations(estimate) is not False:
        return None
    side = int(np.argmin(separations))
    return (side, float(separations[side])) if separations[side] < defaults.ESTIMATE_MIN_SEPARATION else None


def weakly_separated(estimate: NoGoldEstimate) -> float | None:
    """The gaps' separation (mean over the sides) when it is below
    ``defaults.ESTIMATE_CLEAR_SEPARATION`` and the pools are not mostly translations; else None."""
    separation, mostly = mean_separation(estimate), mostly_translations(estimate)
    if separation is None or mostly is not False:
        return None
    return separation if separation < defaults.ESTIMATE_CLEAR_SEPARATION else None


ONE_TO_ONE = ("max", "intersect")  # retrievals of at most one pair a sentence: what the estimate models


def estimate_for_retrieval(pairs, x, y, cfg, fwd: Neighbours, bwd: Neighbours, device: str = "cpu",
                           seed: int = defaults.SEED, searches: SideSearches | None = None) -> NoGoldEstimate:
    """The estimate for ``pairs`` as ``cfg.retrieval`` selects them (``more_pairs_than_one_to_one``
    where a sentence may be in several)."""
    if cfg.retrieval in ONE_TO_ONE:
        return estimate_without_gold(pairs, x, y, cfg, fwd, bwd, device, seed, searches)
    one_to_one = retrieve(*candidates(fwd, bwd, cfg.score), "max", -np.inf)
    return more_pairs_than_one_to_one(estimate_without_gold(one_to_one, x, y, cfg, fwd, bwd, device, seed, searches),
                                      pairs.score, cfg.retrieval)


def more_pairs_than_one_to_one(estimate: NoGoldEstimate, scores: np.ndarray, retrieval: str) -> NoGoldEstimate:
    """The estimate of the one-to-one pairs read for a retrieval that keeps more (``fwd``,
    ``bwd``, ``union``: a sentence in several pairs). The estimate counts at most one false pair
    a sentence, so on those pairs it would find nearly every pair true; their translations are
    the one-to-one pairs' (a translation is, nearly always, the best of both its sentences), and
    every pair beyond those is counted false."""
    ordered = np.sort(np.asarray(scores, dtype=np.float64))
    kept = (len(ordered) - np.searchsorted(ordered, estimate.thresholds, side="left")).astype(np.float64)
    true = estimate.pairs - estimate.false_pairs
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(kept > 0, estimate.pairs / kept, np.nan)  # one-to-one pairs per pair kept
        precision = np.where(kept > 0, np.clip(true / kept, 0, 1), np.nan)
    read = NoGoldEstimate(estimate.thresholds, precision, estimate.recall, kept.astype(estimate.pairs.dtype),
                          np.maximum(kept - true, 0), estimate.translations, estimate.warning,
                          {**estimate.details, "retrieval": f"{retrieval}: the one-to-one pairs' translations, "
                                                            "every further pair counted false"})
    if estimate.precision_low is not None:
        read.precision_low = estimate.precision_low * share
        read.precision_high = np.minimum(estimate.precision_high * share, 1.0)
    return read


def mostly_translations(estimate: NoGoldEstimate) -> bool | None:
    """Whether the estimate counts translations for at least ``defaults.ESTIMATE_MOSTLY_TRANSLATED``
    of the smaller side's rows (None when it does not record the rows): the separation rules
    do not apply to such pools."""
    rows = estimate.details.get("rows")
    if not rows:
        return None
    return estimate.translations >= defaults.ESTIMATE_MOSTLY_TRANSLATED * min(rows)


def choose_threshold(pairs, x, y, cfg, identities, fwd: Neighbours, bwd: Neighbours,
                     device: str = "cpu", seed: int = defaults.SEED, searches: SideSearches | None = None
                     ) -> ThresholdChoice:
    """The threshold for ``pairs`` (every pair the retrieval selects, no threshold):
    ``cfg.threshold`` when given, else chosen on the pools (``choose_from_estimate``; the pools
    searched as ``searches`` says); no estimate (None) where the sides hold one text or too few
    sentences."""
    if cfg.threshold is not None:
        return ThresholdChoice(float(cfg.threshold), "user", "user")
    fixed, fixed_reason = fixed_threshold(cfg.score, *identities)
    same = float(np.mean(pairs.cosine >= defaults.SAME_TEXT_COSINE)) if len(pairs) else 0.0
    if same >= defaults.SAME_TEXT_SHARE:
        # identical sentences are no translations, though every estimate would count them as sure
        why = (f"{same:.0%} of the pairs are the same sentence on both sides (cosine >= "
               f"{defaults.SAME_TEXT_COSINE:g}): the two sides hold one text, or one language; nothing kept "
               "(--threshold keeps pairs anyway)")
        return ThresholdChoice(float("inf"), "none", f"none: {why}", None, why)
    if min(len(x), len(y)) < defaults.ESTIMATE_MIN_ROWS:
        why = f"{min(len(x), len(y))} sentences on a side: too few to estimate a threshold from the pools"
        return ThresholdChoice(fixed, "fallback", f"{fixed_reason}; {why}", None, why)
    estimate = estimate_for_retrieval(pairs, x, y, cfg, fwd, bwd, device, seed, searches)
    return choose_from_estimate(estimate, cfg.target_precision, fixed, fixed_reason, cfg.target_f1_tolerance,
                                cfg.target_headroom)


@dataclass
class Selection:
    pairs: object  # scoring.Pairs kept, best first
    choice: ThresholdChoice
    histogram: dict  # of every pair the retrieval selects, before the threshold
    runners_up: object = None  # the kept pairs' runners-up, where the lengths are read (weak gaps)


def reads_lengths(choice: ThresholdChoice) -> bool:
    """Whether the kept pairs' lengths are read as a second estimate: a threshold chosen on
    gaps that separate weakly, where the gaps' estimate alone was 10 points off on average."""
    return choice.source == "adaptive" and choice.index is not None and choice.measured_error == WEAK_ESTIMATE_ERROR


def runners_up(kept, fwd: Neighbours, bwd: Neighbours, seed: int = defaults.SEED,
               size: int = defaults.LENGTH_EVIDENCE_NULL_PAIRS):
    """The lengths' null (``lengths.precision_from_lengths``): each ``kept`` pair's source with
    its nearest target but its partner, and its target with its nearest source but its partner,
    a seeded sample of ``size``. A sentence has one translation at most, so nearly all are
    false, and they are false pairs as near in meaning as those a threshold lets through; on
    34 pools whose gaps separate weakly they made the mean estimate within 5 points of the gold
    on 22, pairs under the median score on 19 (benchmarks/RESULTS.md, "The runners-up as the
    lengths' null"). None with fewer than two neighbours a row."""
    if fwd.k < 2 or bwd.k < 2 or not len(kept):
        return None
    src = np.concatenate([kept.src, _nearest_but(bwd.ids[kept.tgt], kept.src)])
    tgt = np.concatenate([_nearest_but(fwd.ids[kept.src], kept.tgt), kept.tgt])
    rows = np.flatnonzero((src >= 0) & (tgt >= 0))  # an index may find fewer neighbours than asked
    if len(rows) > size:
        rows = np.sort(np.random.default_rng(seed).choice(rows, size, replace=False))
    no_scores = np.zeros(len(rows), dtype=np.float32)
    return Pairs(src[rows], tgt[rows], no_scores, no_scores)


def _nearest_but(ids: np.ndarray, partner: np.ndarray) -> np.ndarray:
    """Each row's nearest neighbour other than its ``partner``."""
    return np.where(ids[:, 0] == partner, ids[:, 1], ids[:, 0])


def length_evidence_of_every(choice: ThresholdChoice, every, fwd: Neighbours, bwd: Neighbours,
                             src_texts, tgt_texts) -> ThresholdChoice:
    """``add_length_evidence`` given every pair the retrieval selects (``every``, no threshold)
    and the neighbours they were selected from."""
    if not reads_lengths(choice):
        return choice
    kept = every.take(np.flatnonzero(every.score >= choice.threshold))
    return add_length_evidence(choice, kept, runners_up(kept, fwd, bwd), src_texts, tgt_texts)


def add_length_evidence(choice: ThresholdChoice, kept, null, src_texts, tgt_texts) -> ThresholdChoice:
    """``choice`` with the lengths' estimate of the precision of its ``kept`` pairs (``null``:
    their ``runners_up``), where ``reads_lengths``; ``src_texts``/``tgt_texts``: callables from
    the pairs' sentence numbers to their texts. Its estimated precision becomes the mean of the
    two: on 34 pools whose gaps separate weakly, the gaps' estimate erred low where translations
    are many and the lengths' high, and the mean was within 5 points of the gold on 22, the gaps'
    alone on 8 (benchmarks/RESULTS.md, "The lengths as a second estimate", "The runners-up as
    the lengths' null")."""
    from bitextmine.mine.lengths import log_length_ratios, precision_from_lengths

    if not reads_lengths(choice) or null is None or not len(kept):
        return choice
    kept_ratio = log_length_ratios(src_texts(kept.src), tgt_texts(kept.tgt))
    share = precision_from_lengths(kept.score, kept_ratio, log_length_ratios(src_texts(null.src), tgt_texts(null.tgt)))
    if share is None:
        return choice
    gaps = choice.gap_precision
    said = (f"the estimated precision {(gaps + share) / 2:.2f} is the mean of the gaps' {gaps:.2f} and the kept pairs' "
            f"lengths' {share:.2f}")
    caveat = "; ".join(filter(None, [choice.caveat, said]))
    warning = "; ".join(filter(None, [choice.warning, said]))
    return replace(choice, length_precision=share, caveat=caveat, warning=warning)


def score_histogram(scores: np.ndarray, bins: int = defaults.HISTOGRAM_BINS) -> dict:
    """A compact histogram: ``bins`` equal bins from the lowest to the highest score."""
    if len(scores) == 0:
        return {"edges": [], "counts": []}
    counts, edges = np.histogram(scores.astype(np.float64), bins=bins)
    return {"edges": [round(float(e), 5) for e in edges], "counts": counts.tolist()}


def mine_and_choose(x, y, cfg, identities, fwd: Neighbours | None = None, bwd: Neighbours | None = None,
                    device: str = "cpu", progress: bool = False, searches: SideSearches | None = None):
    """Every pair the retrieval selects (no threshold, best first) and the threshold for them.

    The pairs at threshold t are those of score >= t: the greedy selection never lets a
    lower pair block a higher one, so one retrieval serves every threshold. ``progress``:
    a bar for the exact search.
    """
    if fwd is None or bwd is None:
        fwd, bwd = exact_knn_both_ways(x, y, cfg.k, device=device, block_rows=cfg.block_rows, progress=progress)
    # the selection holds every candidate pair; the sides' mapped pages (up to
    # MAPPED_RESIDENT_BYTES each, SelectedRows) need not stay resident beside it
    release_mapped(x, y)
    fwd_pairs, bwd_pairs = candidates(fwd, bwd, cfg.score)
    every = retrieve(fwd_pairs, bwd_pairs, cfg.retrieval, -np.inf)
    return every, choose_threshold(every, x, y, cfg, identities, fwd, bwd, device, searches=searches)


def select_pairs(x, y, cfg, identities, fwd: Neighbours | None = None, bwd: Neighbours | None = None,
                 device: str = "cpu", progress: bool = False, searches: SideSearches | None = None) -> Selection:
    """Mine ``x`` against ``y`` and keep the pairs at the chosen threshold (and ``cfg.top_n``);
    ``searches``: how the threshold's estimate searches the pools (``SideSearches``)."""
    if fwd is None or bwd is None:  # kept for the runners-up
        fwd, bwd = exact_knn_both_ways(x, y, cfg.k, device=device, block_rows=cfg.block_rows, progress=progress)
    every, choice = mine_and_choose(x, y, cfg, identities, fwd, bwd, device, progress, searches)
    kept = every.take(np.flatnonzero(every.score >= choice.threshold))
    pairs = kept.take(np.arange(min(cfg.top_n, len(kept)))) if cfg.top_n is not None else kept
    return Selection(pairs, choice, score_histogram(every.score),
                     runners_up(kept, fwd, bwd) if reads_lengths(choice) else None)


def threshold_record(selection: Selection, points: int = defaults.SIDECAR_CURVE_POINTS) -> dict:
    """What the sidecar keeps for `report`: the histogram and the estimate (when there is one)."""
    record = {"score_histogram": selection.histogram}
    choice = selection.choice
    estimate = choice.estimate
    if choice.warning:
        record["threshold_warning"] = choice.warning
    if estimate is not None and len(estimate.thresholds):
        rows = np.unique(np.linspace(0, len(estimate.thresholds) - 1, points).astype(int))

        def column(values):
            if values is None:
                return None
            return [None if not np.isfinite(v) else round(float(v), 5) for v in np.asarray(values)[rows]]

        record["threshold_estimate"] = {
            "method": estimate.details.get("method"), "thresholds": column(estimate.thresholds),
            "precision": column(estimate.precision), "precision_low": column(estimate.precision_low),
            "precision_high": column(estimate.precision_high), "recall": column(estimate.recall),
            "pairs": [int(v) for v in estimate.pairs[rows]],
            "estimated_translations": round(estimate.translations, 1), "warning": estimate.warning,
            "recommended_threshold": None if not np.isfinite(choice.threshold) else round(choice.threshold, 5),
            "estimated_precision": None if choice.estimated_precision is None
            else round(choice.estimated_precision, 4), "measured_error": choice.measured_error,
            "details": estimate.details}
    return record
