"""Estimate precision and recall at every threshold, and recommend one.

Two modes:

**Seeds** (``calibrate_with_seeds``): a few hundred known translation pairs. Two in five
of them are planted in the pools as pairs, the others as orphans (the source side
only). Mining the augmented pools with no threshold gives, at each threshold t:

- R(t): the share of planted pairs mined correctly with score >= t (recall);
- W(t): the share of planted pairs whose source is mined with a wrong target;
- G(t): the share of orphans mined at all (a sentence without a translation);
- N(t): the number of mined pairs whose source is a pool sentence.

With T unknown translations among the n pool sources,
N(t) = T (R(t) + W(t)) + (n - T) G(t) for every t; T is fitted by least squares over
the thresholds, and precision(t) = 1 - ((n - T) G(t) + T W(t)) / N(t). Fails when the seeds are unlike the
corpus (other domain or length: their recall curve is not the corpus's), or when there
are too few seeds to estimate G and R (a few hundred are enough).

Seeds that also occur in the pools (the same sentence, or a near-identical vector) would
be planted next to their own copies and never mined as planted: those pool rows are left
out before planting, and the result says how many there were.

**No gold** (``calibrate_without_gold``): the estimate `mine` uses to choose its threshold
(the gap mixture, ``bitextmine.mine.no_gold``), and the threshold `mine` would choose for the
same pools and target (``bitextmine.mine.thresholds.choose_from_estimate``): the same number,
with a bootstrap interval of the estimated precision there, and what `mine` writes there
after its length agreement (``Calibration.written``). Where the estimate cannot be trusted
it says why and recommends `mine`'s fallback.

Both recommend by the same rule as `mine` (``pick_threshold``): the best F1 at the target
precision (``defaults.TARGET_HEADROOM`` above it where that costs at most
``defaults.TARGET_HEADROOM_F1_COST`` of F1), unless the target costs more than
``defaults.TARGET_F1_TOLERANCE`` of F1 (without seeds also where the gaps set the translations
apart weakly, as `mine`). With seeds, the no-gold estimate is computed too and both
recommendations are shown: they agree where both are right; seeds unlike the pools (shorter,
another domain) or an encoder whose translations' gaps overlap the others' make them differ,
which the notes say.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from bitextmine import defaults
from bitextmine.errors import BitextmineError
from bitextmine.mine import MineConfig, mine_vectors
from bitextmine.mine.knn import exact_knn, exact_knn_both_ways
from bitextmine.mine.lengths import written_pairs
from bitextmine.mine.scoring import candidates, retrieve
from bitextmine.mine.thresholds import choose_threshold, length_evidence_of_every, pick_threshold


@dataclass
class Calibration:
    method: str
    thresholds: np.ndarray
    precision: np.ndarray
    recall: np.ndarray  # nan where unknown
    pairs: np.ndarray  # mined pool pairs with score >= threshold
    details: dict
    warning: str | None = None  # why the estimate cannot be trusted (then the recommendation is a fallback)
    recommended: float | None = None  # the threshold recommended for the target (None: keep nothing)
    recommended_precision: float | None = None  # estimated precision there
    interval: tuple[float, float] | None = None  # its bootstrap interval (no-gold estimate)
    reason: str = ""  # how the recommendation was made
    precision_low: np.ndarray | None = None
    precision_high: np.ndarray | None = None
    no_gold: Calibration | None = None  # beside a seed calibration: the no-gold one, for comparison
    written: dict | None = None  # no gold: what `mine` writes at the recommendation (its length agreement)
    caveat: str | None = None  # no gold: how sure the estimate is, where less than usual (weak gaps, few translations)
    measured_error: str | None = None  # no gold: how far off such estimates were on pools with gold

    def recommend_for(self, target_precision: float, headroom: float = defaults.TARGET_HEADROOM) -> None:
        """Recommend by `mine`'s rule on this curve (seed calibrations; the no-gold one comes
        with `mine`'s own choice)."""
        i, met = pick_threshold(self.precision, self.recall, target_precision, headroom=headroom)
        self.recommended, self.recommended_precision = float(self.thresholds[i]), float(self.precision[i])
        self.reason = (f"best F1 at precision >= {target_precision:g}" if met else
                       f"precision {target_precision:g} would keep few of the translations: best F1")

    def notes(self) -> list[str]:
        """What a user must know about this result, one line each."""
        out = []
        found = self.details.get("seeds_in_pools", {})
        src, tgt = found.get("source_rows_left_out", 0), found.get("target_rows_left_out", 0)
        if src or tgt:
            out.append(f"note: {src} source and {tgt} target pool sentences repeat seed sentences; they were left "
                       "out of the pools before the seeds were planted")
        repeated = self.details.get("seeds_repeating_a_sentence", 0)
        if repeated:
            out.append(f"note: {repeated} seed pairs repeat the source or target sentence of an earlier seed; they "
                       "were left out (a sentence planted twice competes with its own copy)")
        if self.caveat:
            out.append(f"note: {self.caveat}")
        other = self.no_gold
        if (other is not None and self.recommended is not None and other.recommended is not None
                and other.recommended_precision is not None):
            at_other = float(np.interp(other.recommended, self.thresholds, self.precision))
            if abs(at_other - (other.recommended_precision or 0)) > defaults.CALIBRATIONS_AGREE:
                out.append(f"note: the seeds and the no-gold estimate disagree: at {other.recommended:g} the seeds "
                           f"measure precision {at_other:.2f}, the no-gold estimate {other.recommended_precision:.2f}. "
                           "Seeds unlike the pools (shorter, another domain) move the seed curve; translations "
                           "whose gaps overlap the others' (a weak encoder) move the no-gold one")
            else:
                agree = 100 * defaults.CALIBRATIONS_AGREE
                out.append(f"note: the seeds and the no-gold estimate agree within {agree:g} points at "
                           f"{other.recommended:g} (no gold: {other.recommended_precision:.2f}, seeds: {at_other:.2f})")
        return out

    def to_dict(self) -> dict:
        out = {"method": self.method, "details": self.details, "warning": self.warning,
               "recommended_threshold": self.recommended, "recommended_precision": self.recommended_precision,
               "recommended_interval": list(self.interval) if self.interval else None, "reason": self.reason,
               "written": self.written, "caveat": self.caveat, "measured_error": self.measured_error}
        for key in ("thresholds", "precision", "recall", "pairs", "precision_low", "precision_high"):
            values = getattr(self, key)
            out[key] = None if values is None else [None if np.isnan(v) else round(float(v), 6)
                                                    for v in np.asarray(values, dtype=float)]
        if self.no_gold is not None:
            out["no_gold"] = self.no_gold.to_dict()
        return out




def threshold_grid(scores: np.ndarray, points: int = 200) -> np.ndarray:
    """Thresholds spanning the observed scores (ascending)."""
    if len(scores) == 0:
        return np.zeros(0)
    lo, hi = np.quantile(scores, [0.01, 0.999])
    return np.linspace(lo, hi, points)


def _at_least(scores: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """For each threshold, how many scores are >= it."""
    ordered = np.sort(scores)
    return len(ordered) - np.searchsorted(ordered, grid, side="left")


def seeds_in_pools(x_pool, y_pool, seed_src: np.ndarray, seed_tgt: np.ndarray,
                   device: str = "cpu") -> tuple[np.ndarray, np.ndarray]:
    """Pool rows (source, target) that repeat a seed sentence: near-identical vectors."""
    found = []
    for seeds, pool in ((seed_src, x_pool), (seed_tgt, y_pool)):
        nearest = exact_knn(np.asarray(seeds, dtype=np.float32), pool, 1, device=device)
        close = nearest.sims[:, 0] >= defaults.SEED_DUPLICATE_COSINE
        found.append(np.unique(nearest.ids[close, 0]))
    return found[0], found[1]


def calibrate_with_seeds(x_pool, y_pool, seed_src: np.ndarray, seed_tgt: np.ndarray, cfg: MineConfig,
                         seed: int = 0, device: str = "cpu", progress: bool = False) -> Calibration:
    """Plant seed pairs (and orphans) in the pools, mine, and read P/R off them.

    Pool rows that repeat a seed are left out first (``details["seeds_in_pools"]``).
    """
    src_dups, tgt_dups = seeds_in_pools(x_pool, y_pool, seed_src, seed_tgt, device)
    x_pool = np.delete(np.asarray(x_pool[:], dtype=np.float16), src_dups, axis=0)
    y_pool = np.delete(np.asarray(y_pool[:], dtype=np.float16), tgt_dups, axis=0)
    result = _plant_and_measure(x_pool, y_pool, seed_src, seed_tgt, cfg, seed, device, progress)
    result.details["seeds_in_pools"] = {"source_rows_left_out": int(len(src_dups)),
                                        "target_rows_left_out": int(len(tgt_dups))}
    return result


def _plant_and_measure(x_pool, y_pool, seed_src: np.ndarray, seed_tgt: np.ndarray, cfg: MineConfig,
                       seed: int, device: str, progress: bool) -> Calibration:
    n, m = len(x_pool), len(y_pool)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(seed_src))
    # orphans carry the false-pair rate, which decides precision: give them more seeds
    split = int(round(defaults.CALIBRATE_PLANTED_SHARE * len(order)))
    planted, orphans = order[:split], order[split:]
    x = np.concatenate([x_pool, seed_src[planted].astype(np.float16), seed_src[orphans].astype(np.float16)])
    y = np.concatenate([y_pool, seed_tgt[planted].astype(np.float16)])
    pairs = mine_vectors(x, y, cfg, threshold=-np.inf, device=device, progress=progress)

    src, tgt, score = pairs.src, pairs.tgt, pairs.score.astype(np.float64)
    in_pool = src < n
    is_planted = (src >= n) & (src < n + len(planted))
    is_orphan = src >= n + len(planted)
    correct = is_planted & (tgt == (src - n) + m)
    grid = threshold_grid(score[in_pool])
    big_n = _at_least(score[in_pool], grid).astype(np.float64)
    recall = _at_least(score[correct], grid) / max(1, len(planted))
    wrong = _at_least(score[is_planted & ~correct], grid) / max(1, len(planted))
    orphan_rate = _at_least(score[is_orphan], grid) / max(1, len(orphans))
    # N = T (R + W - G) + n G  ->  least squares for T where the signal is clear and few orphans
    # are mined: lower down, the one-to-one selection caps N while n G grows (T came out < 0)
    signal = recall + wrong - orphan_rate
    use = (signal > 0.1) & (orphan_rate <= defaults.CALIBRATE_FIT_ORPHAN_RATE)
    use = use if use.sum() >= 3 else signal > 0.1
    if use.any():
        t_hat = float(np.sum((big_n - n * orphan_rate)[use] * signal[use]) / np.sum(signal[use] ** 2))
    else:
        t_hat = 0.0
    t_hat = float(np.clip(t_hat, 0, min(n, m)))
    # precision = 1 - false pairs / all pairs; false pairs are pool sentences without a
    # translation that got mined (rate G) plus translations mined to a wrong partner (W)
    false_pairs = (n - t_hat) * orphan_rate + t_hat * wrong
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(big_n > 0, np.clip(1 - false_pairs / big_n, 0, 1), np.nan)
    return Calibration("seeds", grid, precision, recall, big_n,
                       {"planted_pairs": int(len(planted)), "orphans": int(len(orphans)),
                        "estimated_translations_in_pools": round(t_hat, 1), "pool_sources": n, "pool_targets": m})


def calibrate_without_gold(x_pool, y_pool, cfg: MineConfig, identities=(), seed: int = defaults.SEED,
                           device: str = "cpu", progress: bool = False, texts=None) -> Calibration:
    """`mine`'s estimate and threshold for these pools (``cfg.target_precision``), as a curve.
    ``texts``: (source, target) callables from distinct-sentence numbers to their texts; with
    them, what `mine` writes at that threshold (its length agreement) is estimated too."""
    fwd, bwd = exact_knn_both_ways(x_pool, y_pool, cfg.k, device=device, block_rows=cfg.block_rows,
                                   progress=progress)
    pairs = retrieve(*candidates(fwd, bwd, cfg.score), cfg.retrieval, -np.inf)
    # `mine`'s own choice, its checks before any estimate included (one text on both sides, too few sentences)
    choice = choose_threshold(pairs, x_pool, y_pool, replace(cfg, threshold=None), identities, fwd, bwd, device,
                              seed)
    if texts is not None:  # as `mine` reads them where the gaps separate weakly: the kept pairs' lengths
        choice = length_evidence_of_every(choice, pairs, fwd, bwd, *texts)
    recommended = choice.threshold if np.isfinite(choice.threshold) else None
    pools = {"pool_sources": len(x_pool), "pool_targets": len(y_pool)}
    estimate = choice.estimate
    if estimate is None:  # no curve: `mine` decided before estimating
        none = np.zeros(0)
        result = Calibration("no gold (not estimated)", none, none, none, none, pools, choice.warning, recommended,
                             reason=choice.reason)
    else:
        result = Calibration("no gold (gap mixture)", estimate.thresholds, estimate.precision, estimate.recall,
                             estimate.pairs, {"estimated_translations_in_pools": round(estimate.translations, 1),
                                              **pools, **estimate.details},
                             choice.warning if choice.source in ("fallback", "none") else estimate.warning,
                             recommended, choice.estimated_precision,
                             choice.interval(), choice.reason, estimate.precision_low, estimate.precision_high)
    result.caveat, result.measured_error = choice.caveat, choice.measured_error
    if texts is not None and recommended is not None:
        result.written = _written_at(pairs, recommended, choice.estimated_precision, cfg, texts)
    return result


def _written_at(pairs, threshold: float, estimated: float | None, cfg: MineConfig, texts) -> dict:
    """The pairs `mine` writes at ``threshold``: kept, dropped for their lengths, and their
    estimated precision (``LengthAgreement.written_precision``)."""
    written, lengths = written_pairs(pairs, *texts, threshold, cfg.length_ratio)
    precision = lengths.written_precision(estimated)
    return {"pairs": int(written.sum()), "dropped_for_lengths": lengths.dropped,
            "estimated_precision": None if precision is None else round(precision, 4)}


def check_target_precision(target: float) -> None:
    if not 0 < target < 1:  # as mine's: an estimate never promises 100 %
        raise BitextmineError(f"--target-precision is a share in (0, 1), such as 0.9 for 90%, not {target:g}")


def calibrate_sets(src: list, tgt: list, cfg: MineConfig, seeds: str | None = None, seed: int = defaults.SEED,
                   progress: bool = False) -> Calibration:
    """Calibrate the pools of two embedding-set lists for ``cfg.target_precision``.

    Each distinct sentence is one row of its pool, as `mine` sees them. Without ``seeds``,
    `mine`'s estimate and threshold; with ``seeds`` (a pairs file of at least
    ``defaults.CALIBRATE_MIN_SEEDS`` known translations, embedded with the sets' own encoder)
    the seed method, with the no-gold calibration beside it (``Calibration.no_gold``) for comparison.
    """
    from bitextmine.devices import resolve_device
    from bitextmine.embed.corpus import EmbeddingCorpus, SelectedRows
    from bitextmine.mine import adapted_choice, check_compatible, check_k, unique_sentences

    check_target_precision(cfg.target_precision)
    device = resolve_device(cfg.device)
    src_corpus, tgt_corpus = EmbeddingCorpus.load(src), EmbeddingCorpus.load(tgt)
    check_compatible(src_corpus, tgt_corpus)
    src_side, tgt_side = unique_sentences(src_corpus), unique_sentences(tgt_corpus)
    if cfg.score != "cosine":  # as `mine` refuses it, so that calibrate never recommends what mine refuses
        check_k(cfg.k, {"source": len(src_side), "target": len(tgt_side)},
                (src_corpus.sets[0].path, tgt_corpus.sets[0].path))
    x, y = SelectedRows(src_corpus, src_side.rows), SelectedRows(tgt_corpus, tgt_side.rows)
    identities = (src_corpus.encoder, tgt_corpus.encoder)
    known, repeated = _read_seeds(seeds) if seeds is not None else (None, 0)  # a bad file fails before any search
    no_gold = calibrate_without_gold(np.asarray(x[:]), np.asarray(y[:]), cfg, identities, seed, device, progress,
                                     (src_side.texts, tgt_side.texts))
    adapted = adapted_choice(cfg, src_corpus.encoder, src_side, tgt_side)
    if adapted is not None:  # as `mine` takes it: on the pools the encoder trained on its curve is self-scored
        no_gold.recommended, no_gold.reason, no_gold.warning, no_gold.written = (adapted.threshold, adapted.reason,
                                                                                 None, None)
        no_gold.recommended_precision = no_gold.interval = None
        no_gold.caveat = "the encoder trained on these pools: the no-gold curve is self-scored there"
    if seeds is None:
        return no_gold
    seed_src = _embed_seeds([p.src for p in known], src_corpus, device, progress)
    seed_tgt = _embed_seeds([p.tgt for p in known], tgt_corpus, device, progress)
    result = calibrate_with_seeds(x, y, seed_src, seed_tgt, cfg, seed, device, progress)
    result.details["seeds_repeating_a_sentence"] = repeated
    result.recommend_for(cfg.target_precision, cfg.target_headroom)
    result.no_gold = no_gold
    return result


def _read_seeds(seeds: str) -> tuple[list, int]:
    """(the seed pairs of a pairs file, how many were left out): a pair whose source or target
    sentence an earlier seed has is left out (planted twice, a sentence competes with its own
    copy, and a repeated pair counts its recall twice); at least ``defaults.CALIBRATE_MIN_SEEDS``
    distinct pairs, neither side empty."""
    from bitextmine.io.pairs import read_pairs

    pairs = read_pairs(seeds, allow_empty_side=False)
    seen_src, seen_tgt, distinct = set(), set(), []
    for pair in pairs:
        if pair.src not in seen_src and pair.tgt not in seen_tgt:
            distinct.append(pair)
        seen_src.add(pair.src)
        seen_tgt.add(pair.tgt)
    left_out = len(pairs) - len(distinct)
    if len(distinct) < defaults.CALIBRATE_MIN_SEEDS:
        repeated = f" ({left_out} more repeat a seed's sentence)" if left_out else ""
        raise BitextmineError(f"only {len(distinct)} distinct seed pairs{repeated}: give a few hundred "
                              f"(at least {defaults.CALIBRATE_MIN_SEEDS})", path=seeds)
    return distinct, left_out


def _embed_seeds(texts: list[str], corpus, device: str, progress: bool) -> np.ndarray:
    """One side of the seed pairs, embedded by the encoder that made that side's sets (a
    student's routed language by the teacher, as its pool was)."""
    from bitextmine.encoders import load_encoder
    from bitextmine.progress import encode_with_progress

    encoder = load_encoder(corpus.encoder.name, device=device)
    if encoder.identity.space() != corpus.encoder.space():
        raise BitextmineError("the encoder found under the sets' encoder name is not the one that made them",
                              path=corpus.sets[0].path)
    return encode_with_progress(encoder, texts, "encode seeds", progress)
