"""Estimate precision and recall at every threshold, and recommend one.

Two modes:

**Seeds** (``calibrate_with_seeds``): a few hundred known translation pairs. Half of
them are planted in the pools as pairs, the other half as orphans (the source side
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

**No gold** (``calibrate_without_gold``): a two-component Gaussian mixture on the
scores of all retrieved pairs; the upper component stands for translations. Precision
at t is that component's share of the mass above t. Also reported: the share of pairs
above t that are mutual nearest neighbours (forward and backward agree). Fails when
the two score distributions overlap heavily, when translations are very rare (the
upper component then fits the tail of the non-translations), or when the score
distribution of either group is far from Gaussian (ratio margins are skewed).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from bitextmine import defaults
from bitextmine.errors import BitextmineError
from bitextmine.mine import MineConfig, mine_vectors

PLANTED_SHARE = 0.4  # of the seeds planted as pairs; the rest are planted as orphans
MIN_SEEDS = 20  # fewer cannot estimate the rates G and R at all (a few hundred are enough)


@dataclass
class Calibration:
    method: str
    thresholds: np.ndarray
    precision: np.ndarray
    recall: np.ndarray  # nan where unknown
    pairs: np.ndarray  # mined pool pairs with score >= threshold
    details: dict

    def recommend(self, target_precision: float) -> float | None:
        """The lowest threshold (most recall) whose estimated precision reaches the target
        there and at every higher threshold."""
        ok = self.precision >= target_precision
        # walk down from the highest threshold while precision holds
        best = None
        for i in range(len(self.thresholds) - 1, -1, -1):
            if not ok[i]:
                break
            best = float(self.thresholds[i])
        return best

    def to_dict(self) -> dict:
        out = asdict(self)
        for key in ("thresholds", "precision", "recall", "pairs"):
            out[key] = [None if np.isnan(v) else round(float(v), 6) for v in np.asarray(out[key], dtype=float)]
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


def calibrate_with_seeds(x_pool, y_pool, seed_src: np.ndarray, seed_tgt: np.ndarray, cfg: MineConfig,
                         seed: int = 0, device: str = "cpu", progress: bool = False) -> Calibration:
    """Plant seed pairs (and orphans) in the pools, mine, and read P/R off them."""
    n, m = len(x_pool), len(y_pool)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(seed_src))
    # orphans carry the false-pair rate, which decides precision: give them more seeds
    split = int(round(PLANTED_SHARE * len(order)))
    planted, orphans = order[:split], order[split:]
    x = np.concatenate([np.asarray(x_pool[:], dtype=np.float16), seed_src[planted].astype(np.float16),
                        seed_src[orphans].astype(np.float16)])
    y = np.concatenate([np.asarray(y_pool[:], dtype=np.float16), seed_tgt[planted].astype(np.float16)])
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
    # N = T (R + W - G) + n G  ->  least squares for T where the signal is clear
    signal = recall + wrong - orphan_rate
    use = signal > 0.1
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


def calibrate_without_gold(x_pool, y_pool, cfg: MineConfig, seed: int = 0, device: str = "cpu",
                           progress: bool = False) -> Calibration:
    """Mixture-model estimate from the score distribution alone."""
    from scipy.stats import norm
    from sklearn.mixture import GaussianMixture

    pairs = mine_vectors(x_pool, y_pool, cfg, threshold=-np.inf, device=device, progress=progress)
    score = pairs.score.astype(np.float64)
    grid = threshold_grid(score)
    if len(score) < 10:
        nan = np.full(len(grid), np.nan)
        return Calibration("mixture", grid, nan, nan, _at_least(score, grid), {"fitted": False})
    mixture = GaussianMixture(2, random_state=seed).fit(score[:, None])
    means = mixture.means_.ravel()
    sds = np.sqrt(mixture.covariances_.ravel())
    weights = mixture.weights_.ravel()
    hi, lo = int(np.argmax(means)), int(np.argmin(means))
    above_true = weights[hi] * norm.sf(grid, means[hi], sds[hi])
    above_false = weights[lo] * norm.sf(grid, means[lo], sds[lo])
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(above_true + above_false > 0, above_true / (above_true + above_false), np.nan)
    recall = norm.sf(grid, means[hi], sds[hi])
    # agreement of the two directions, as a second signal: mutual nearest neighbours
    mutual = mine_vectors(x_pool, y_pool, MineConfig(k=cfg.k, score=cfg.score, retrieval="intersect",
                                                     block_rows=cfg.block_rows), threshold=-np.inf, device=device,
                          progress=progress)
    mutual_share = _at_least(mutual.score.astype(np.float64), grid) / np.maximum(_at_least(score, grid), 1)
    return Calibration("mixture", grid, precision, recall, _at_least(score, grid),
                       {"components": {"translations": {"weight": float(weights[hi]), "mean": float(means[hi]),
                                                        "sd": float(sds[hi])},
                                       "others": {"weight": float(weights[lo]), "mean": float(means[lo]),
                                                  "sd": float(sds[lo])}},
                        "mutual_nn_share": [round(float(v), 4) for v in mutual_share]})


def check_target_precision(target: float) -> None:
    if not 0 < target <= 1:
        raise BitextmineError(f"--target-precision is a share in (0, 1], such as 0.9 for 90%, not {target:g}")


def calibrate_sets(src: list, tgt: list, cfg: MineConfig, target_precision: float, seeds: str | None = None,
                   seed: int = defaults.SEED, progress: bool = False) -> tuple[Calibration, float | None]:
    """Calibrate the pools of two embedding-set lists; (curve, recommended threshold or None).

    Each distinct sentence is one row of its pool. With ``seeds`` (a pairs file of at
    least ``MIN_SEEDS`` known translations, embedded with the sets' own encoder) the
    seed method runs, else the mixture model.
    """
    from bitextmine.devices import resolve_device
    from bitextmine.embed.corpus import EmbeddingCorpus, SelectedRows
    from bitextmine.mine import check_compatible, unique_sentences

    check_target_precision(target_precision)
    device = resolve_device(cfg.device)
    src_corpus, tgt_corpus = EmbeddingCorpus.load(src), EmbeddingCorpus.load(tgt)
    check_compatible(src_corpus, tgt_corpus)
    x = SelectedRows(src_corpus, unique_sentences(src_corpus).rows)
    y = SelectedRows(tgt_corpus, unique_sentences(tgt_corpus).rows)
    if seeds is None:
        result = calibrate_without_gold(np.asarray(x[:]), np.asarray(y[:]), cfg, seed, device, progress)
    else:
        seed_src, seed_tgt = _embed_seeds(seeds, src_corpus, device, progress)
        result = calibrate_with_seeds(x, y, seed_src, seed_tgt, cfg, seed, device, progress)
    return result, result.recommend(target_precision)


def _embed_seeds(seeds: str, corpus, device: str, progress: bool) -> tuple[np.ndarray, np.ndarray]:
    """Both sides of the seed pairs, embedded by the encoder that made ``corpus``."""
    from bitextmine.encoders import load_encoder
    from bitextmine.io.pairs import read_pairs
    from bitextmine.progress import encode_with_progress

    pairs = read_pairs(seeds, allow_empty_side=False)
    if len(pairs) < MIN_SEEDS:
        raise BitextmineError(f"only {len(pairs)} seed pairs: give a few hundred (at least {MIN_SEEDS})", path=seeds)
    encoder = load_encoder(corpus.encoder.name, device=device)
    if encoder.identity.space() != corpus.encoder.space():
        raise BitextmineError("the encoder found under the sets' encoder name is not the one that made them",
                              path=corpus.sets[0].path)
    return (encode_with_progress(encoder, [p.src for p in pairs], "encode seeds", progress),
            encode_with_progress(encoder, [p.tgt for p in pairs], "encode seeds", progress))
