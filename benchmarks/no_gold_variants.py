"""The ways of choosing a threshold without gold that were tried, side by side, on one pool.

``benchmarks.mining_defaults`` runs each of them on every pool; the one `mine` uses is
``bitextmine.mine.thresholds.choose_threshold`` (the gap mixture, each threshold's false
pairs bounded by the same-language decoy's). The others are kept here, outside the package,
so that their figures can be measured again:

- ``cautious``: the target met by the low end of the estimate's bootstrap interval (its
  10th percentile) rather than the estimate, and ``halfway`` between the two;
- ``best F1`` and ``tolerance 0.05``: the same estimate, the threshold of best estimated F1
  (the target's F1 tolerance 0), or the target given up when it costs more than 0.05 of
  estimated F1 (rather than 0.08);
- ``gap mixture alone``: without the decoy's bound;
- ``old decoy``: each side mined against itself (the default before 2026-12-02; ``old decoy
  unchecked`` as it was, without the length agreement);
- ``score mixture``: the pairs' scores fitted as an exponential tail of non-translations
  plus a normal bump of translations, from the mode of the scores up;
- ``gap + u``: the gap mixture with each query's leave-one-out best score as a second
  variable (the non-translations' best score as the convolution of their second best and
  the spacing);
- ``cautious below 30`` (and 60): ``cautious`` only where the estimate counts fewer
  translations than that;
- ``null left of the mode``, ``share by score``, ``null from second spacings``: other models
  of the gap mixture's null and share, and ``skewed translations`` (with ``and spacing null``):
  the translations' gaps a skew normal (``benchmarks.gap_null_variants``);
- ``mine before the blind side``: `mine` before 2026-12-04, when an estimate whose one side's
  gaps showed no group of translations (``thresholds.blind_side``) was trusted;
- ``mine without the headroom``: `mine` before 2026-12-04 (later), the threshold of the
  target itself where a precision 0.02 above it cost at most 0.01 of estimated F1;
- ``mine before the weak count``: `mine` before 2026-12-05, the translations counted only where
  half the pairs kept are true, also where the gaps separate weakly;
- ``weak count everywhere``: the translations counted down to a third of the pairs true on
  every pool, not only where the gaps separate weakly;
- ``headroom by the interval``: the headroom above the target also asks the bootstrap's 10th
  percentile of the precision to reach the target;
- ``mine at tolerance 0.15``: `mine` (headroom and weak rule included) giving the target up only
  past 0.15 of estimated F1, the default since 2026-12-05 (0.08 before; ``tolerance 0.05``
  above is the bare rule at 0.05, without the headroom and the weak rule);
- ``mine with cosine floor F`` and ``mine with cosine agreement S``: `mine`'s threshold, its
  written pairs also cut under a cosine, or S robust deviations under their typical cosine
  (``benchmarks.mining_defaults.cosine_checked``; applied where the pairs are scored);
- ``F1 slack 0.005 where clear`` (and 0.01): the slack only where the gaps separate clearly;
- ``both sides' gaps`` (and ``at half``): a query's posterior also reading its best
  candidate's gap on the other side, where the two are each other's best;
- ``fixed 1.30``: the ratio threshold at which the default encoder does best on news pools
  on average, the same for every pool (``fixed 1.14``, ``fixed 1.40`` beside it), and
  ``fixed distance 0.12``, the default encoder's declared distance threshold; each applies
  only to its own score.

Each variant returns the threshold and its estimated precision curve (None for a fixed one).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace

import numpy as np
from scipy.ndimage import gaussian_filter1d
from scipy.optimize import minimize
from scipy.stats import gaussian_kde, gumbel_r, norm

from benchmarks import gap_null_variants
from bitextmine import defaults
from bitextmine.mine.knn import Neighbours, exact_knn
from bitextmine.mine.no_gold import estimate_from_gaps, query_gaps
from bitextmine.mine.scoring import candidates, margin_scores, retrieve
from bitextmine.mine.thresholds import choose_from_estimate, choose_threshold, fixed_threshold, pick_threshold


@contextlib.contextmanager
def patched(module, name: str, value):
    """``module.name`` set to ``value`` for the duration (a variant's change to `mine`'s code)."""
    plain = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, plain)


@dataclass
class Outcome:
    threshold: float
    thresholds: np.ndarray | None = None  # the estimate's curve, ascending
    precision: np.ndarray | None = None
    how: str = ""
    choice: object = None  # `mine`'s ThresholdChoice, where the variant is `mine`'s (its lengths read as it reads them)


def default(pairs, x, y, cfg, identities, fwd, bwd) -> Outcome:
    """What `mine` does: the smaller of the gap mixture's and the decoy's false pairs."""
    choice = choose_threshold(pairs, x, y, cfg, identities, fwd, bwd)
    e = choice.estimate
    return Outcome(choice.threshold, e.thresholds, e.precision, choice.source, choice)


def without_headroom(pairs, x, y, cfg, identities, fwd, bwd) -> Outcome:
    """`mine` before 2026-12-04 (later): the target's own threshold, no headroom above it."""
    return default(pairs, x, y, replace(cfg, target_headroom=0.0), identities, fwd, bwd)


def mine_at_tolerance(tolerance: float):
    """As `mine` (headroom and the weak rule included), the target given up only where it costs
    more than ``tolerance`` of estimated F1 (`mine`: ``defaults.TARGET_F1_TOLERANCE``)."""
    def run(pairs, x, y, cfg, identities, fwd, bwd) -> Outcome:
        return default(pairs, x, y, replace(cfg, target_f1_tolerance=tolerance), identities, fwd, bwd)
    return run


def with_defaults(**values):
    """As `mine`, with these of ``bitextmine.defaults`` set for the duration of the choice."""
    def run(pairs, x, y, cfg, identities, fwd, bwd) -> Outcome:
        with contextlib.ExitStack() as stack:
            for name, value in values.items():
                stack.enter_context(patched(defaults, name, value))
            return default(pairs, x, y, cfg, identities, fwd, bwd)
    return run


# the lowest threshold whose estimated F1 lies within this of the best (`mine`: the best's own)
f1_slack_half_point = with_defaults(ESTIMATE_F1_SLACK=0.005)
f1_slack_point = with_defaults(ESTIMATE_F1_SLACK=0.01)
f1_slack_two_points = with_defaults(ESTIMATE_F1_SLACK=0.02)


def f1_slack_middle(slack: float):
    """As `mine`, "the best F1" the middle (by row) of the thresholds whose estimated F1 lies
    within ``slack`` of the best: where the estimate cannot tell them apart, neither end."""
    from bitextmine.mine import thresholds

    def middle(f1, eligible, _slack):
        scores = np.where(eligible, f1, -1.0)
        top = float(scores.max())
        rows = np.flatnonzero(scores >= top - slack)
        return int(rows[len(rows) // 2]), top

    def run(pairs, x, y, cfg, identities, fwd, bwd) -> Outcome:
        with patched(thresholds, "best_within", middle):
            return default(pairs, x, y, cfg, identities, fwd, bwd)
    return run


def f1_slack_where_clear(slack: float):
    """As `mine`, "the best F1" the lowest threshold whose estimated F1 lies within ``slack`` of the
    best, only where the gaps separate clearly (the target's rule, its precision still met);
    where they separate weakly (the best estimated F1 taken, no target: tolerance and headroom
    0) the best's own."""
    from bitextmine.mine import thresholds

    plain = thresholds.pick_threshold

    def pick(precision, recall, target, tolerance=defaults.TARGET_F1_TOLERANCE, headroom=0.0, *args, **kwargs):
        weak = tolerance == 0.0 and headroom == 0.0
        kwargs["slack"] = 0.0 if weak else slack
        return plain(precision, recall, target, tolerance, headroom, *args, **kwargs)

    def run(pairs, x, y, cfg, identities, fwd, bwd) -> Outcome:
        with patched(thresholds, "pick_threshold", pick):
            return default(pairs, x, y, cfg, identities, fwd, bwd)
    return run


# `mine` before 2026-12-05: the translations counted where half the pairs kept are true, however
# weakly the gaps separate; and the other way, a third on every pool
before_weak_count = with_defaults(ESTIMATE_WEAK_TRANSLATIONS_PRECISION=defaults.ESTIMATE_TRANSLATIONS_PRECISION)
weak_count_everywhere = with_defaults(ESTIMATE_TRANSLATIONS_PRECISION=defaults.ESTIMATE_WEAK_TRANSLATIONS_PRECISION)
# where the gaps separate weakly, the translations counted down to a quarter of the pairs kept true
weak_count_at_a_quarter = with_defaults(ESTIMATE_WEAK_TRANSLATIONS_PRECISION=0.25)


def headroom_by_interval(pairs, x, y, cfg, identities, fwd, bwd) -> Outcome:
    """As `mine`, the headroom above the target also asks the bootstrap's 10th percentile of the
    precision to reach the target (at the same cost in estimated F1)."""
    choice = choose_threshold(pairs, x, y, cfg, identities, fwd, bwd)
    e = choice.estimate
    out = Outcome(choice.threshold, None if e is None else e.thresholds, None if e is None else e.precision,
                  choice.source)
    if e is None or e.precision_low is None or choice.index is None or choice.source != "adaptive":
        return out
    p, low, f1 = np.nan_to_num(e.precision), np.nan_to_num(e.precision_low), e.f1()
    target = cfg.target_precision
    if p[choice.index] < target or low[choice.index] >= target:  # the target not met, or met by the interval
        return out
    own, _ = pick_threshold(e.precision, e.recall, target)
    above = (p >= target + cfg.target_headroom) & (low >= target)
    if not above.any():
        return out
    j = int(np.argmax(np.where(above, f1, -1)))
    if f1[j] >= f1[own] - defaults.TARGET_HEADROOM_F1_COST:
        return Outcome(float(e.thresholds[j]), e.thresholds, e.precision, "interval")
    return out


def cautious(pairs, x, y, cfg, identities, fwd, bwd) -> Outcome:
    """As `mine`, the target reached by the bootstrap's 10th percentile of the precision."""
    choice = choose_threshold(pairs, x, y, cfg, identities, fwd, bwd)
    e = choice.estimate
    if e is None or choice.source != "adaptive":
        return Outcome(choice.threshold, None if e is None else e.thresholds, None if e is None else e.precision,
                       choice.source)
    i, _ = pick_threshold(e.precision_low, e.recall, cfg.target_precision)
    return Outcome(float(e.thresholds[i]), e.thresholds, e.precision, "cautious")


def halfway(pairs, x, y, cfg, identities, fwd, bwd) -> Outcome:
    """As `mine`, the target reached halfway between the estimate's precision and its
    bootstrap's 10th percentile."""
    choice = choose_threshold(pairs, x, y, cfg, identities, fwd, bwd)
    e = choice.estimate
    if e is None or choice.source != "adaptive":
        return Outcome(choice.threshold, None if e is None else e.thresholds, None if e is None else e.precision,
                       choice.source)
    i, _ = pick_threshold((e.precision + e.precision_low) / 2, e.recall, cfg.target_precision)
    return Outcome(float(e.thresholds[i]), e.thresholds, e.precision, "halfway")


def cautious_when_few(translations: float):
    """As `mine`, but where the estimate counts fewer than ``translations`` translations the
    target (and, unmet, the best F1) is judged on the bootstrap's 10th percentile."""
    def run(pairs, x, y, cfg, identities, fwd, bwd) -> Outcome:
        choice = choose_threshold(pairs, x, y, cfg, identities, fwd, bwd)
        e = choice.estimate
        if e is None or choice.source != "adaptive" or e.translations >= translations:
            return Outcome(choice.threshold, None if e is None else e.thresholds,
                           None if e is None else e.precision, choice.source)
        i, _ = pick_threshold(e.precision_low, e.recall, cfg.target_precision)
        return Outcome(float(e.thresholds[i]), e.thresholds, e.precision, f"cautious below {translations:g}")
    return run


def before_blind_side(pairs, x, y, cfg, identities, fwd, bwd) -> Outcome:
    """`mine` before 2026-12-04: one side's gaps blind (``thresholds.blind_side``) was trusted."""
    from bitextmine.mine import thresholds

    rule, thresholds.blind_side = thresholds.blind_side, lambda estimate: None
    try:
        return default(pairs, x, y, cfg, identities, fwd, bwd)
    finally:
        thresholds.blind_side = rule


def with_tolerance(tolerance: float):
    """As `mine`, the target given up when it costs more than ``tolerance`` of estimated F1."""
    def run(pairs, x, y, cfg, identities, fwd, bwd) -> Outcome:
        choice = choose_threshold(pairs, x, y, cfg, identities, fwd, bwd)
        e = choice.estimate
        if e is None or choice.source != "adaptive":
            return Outcome(choice.threshold, None if e is None else e.thresholds,
                           None if e is None else e.precision, choice.source)
        i, _ = pick_threshold(e.precision, e.recall, cfg.target_precision, tolerance)
        return Outcome(float(e.thresholds[i]), e.thresholds, e.precision, f"tolerance {tolerance}")
    return run


def gap_mixture_alone(pairs, x, y, cfg, identities, fwd, bwd) -> Outcome:
    src = query_gaps(x, y, bwd.mean_sim(), cfg.k, cfg.score, defaults.SEED)
    tgt = query_gaps(y, x, fwd.mean_sim(), cfg.k, cfg.score, defaults.SEED + 1)
    e = estimate_from_gaps(pairs.score, src, tgt, bootstrap=0)
    choice = choose_from_estimate(e, cfg.target_precision, *fixed_threshold(cfg.score, *identities))
    return Outcome(choice.threshold, e.thresholds, e.precision, choice.source)


def fixed(value: float, score: str = "ratio"):
    def run(pairs, x, y, cfg, identities, fwd, bwd) -> Outcome:
        return Outcome(value if cfg.score == score else np.nan, how="fixed")
    return run


def _curve_choice(grid, kept, false, translations, target) -> Outcome:
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(kept > 0, 1 - np.minimum(false, kept) / kept, np.nan)
        recall = np.clip((kept - false) / max(translations, 1e-9), 0, 1)
    i, met = pick_threshold(precision, recall, target)
    return Outcome(float(grid[i]), grid, precision, "target" if met else "best F1")


def _grid(scores):
    lo, hi = np.quantile(scores, [0.01, 1.0])
    return np.linspace(lo, hi, defaults.ESTIMATE_POINTS, endpoint=False)


def _at_least(scores, grid):
    ordered = np.sort(scores)
    return (len(ordered) - np.searchsorted(ordered, grid, side="left")).astype(np.float64)


# --- score mixture ---------------------------------------------------------------------------

def score_mixture(pairs, x, y, cfg, identities, fwd, bwd) -> Outcome:
    s = np.sort(pairs.score.astype(np.float64))
    grid0 = np.linspace(*np.quantile(s, [0.02, 0.98]), 400)
    t0 = float(grid0[np.argmax(gaussian_kde(s)(grid0))])
    z = s[s >= t0]

    def nll(p):
        a, b, t, mu, sd = np.exp(p[0]), np.exp(p[1]), np.exp(p[2]), p[3], np.exp(p[4])
        lam = a / b * np.exp(-(z - t0) / b) + t * norm.pdf(z, mu, sd)
        return -(np.log(lam + 1e-300).sum() - a - t * norm.sf(t0, mu, sd))

    best = None
    for mu0 in np.linspace(t0 + 0.05, max(np.quantile(z, 0.95), t0 + 0.1), 6):
        for frac in (0.05, 0.2, 0.5):
            r = minimize(nll, [np.log(len(z) * (1 - frac)), np.log(0.08), np.log(len(z) * frac + 1), mu0,
                               np.log(0.1)], method="Nelder-Mead", options={"maxiter": 3000})
            best = r if best is None or r.fun < best.fun else best
    a, b, t = np.exp(best.x[0]), np.exp(best.x[1]), np.exp(best.x[2])
    grid = _grid(pairs.score)
    false = np.where(grid >= t0, a * np.exp(-(grid - t0) / b), np.inf)
    return _curve_choice(grid, _at_least(pairs.score, grid), false, t, cfg.target_precision)


# --- gap + u ---------------------------------------------------------------------------------

def _leave_one_out(queries, database, database_means, k):
    """Best ratio margin, the best without it, and the best (mined score) for every query."""
    found = exact_knn(np.asarray(queries, dtype=np.float32), database, k + defaults.ESTIMATE_EXTRA_NEIGHBOURS)
    cos = found.sims.astype(np.float64)
    other = database_means[found.ids]
    ratio = cos / ((cos[:, :k].mean(1)[:, None] + other) / 2)
    top = ratio.argmax(1)
    r = np.arange(len(cos))
    rest = np.arange(cos.shape[1])[None, :] != top[:, None]
    c2 = cos[rest].reshape(len(cos), -1)
    o2 = other[rest].reshape(len(cos), -1)
    u = (c2 / ((c2[:, :k].mean(1)[:, None] + o2) / 2)).max(1)
    return ratio[r, top], u


def _em_with_u(m1, u, iterations=100, step=0.005, bandwidth=0.02):
    d = m1 - u
    lo = u.min() - 0.5
    grid = np.arange(lo, u.max() + 1.0, step)
    cell = np.clip(((u - lo) / step).astype(int), 0, len(grid) - 1)
    q1, q2, q3 = np.quantile(d, [0.25, 0.5, 0.75])
    scale = (q3 - q1) / 1.5725
    loc = q2 - 0.3665 * scale
    top = d[d > np.quantile(d, 0.9)]
    share, mean, sd = 0.1, top.mean(), max(top.std(), 0.05)
    w = np.zeros(len(d))
    kernel = gumbel_r.pdf(np.arange(-0.3, 1.0, step), loc, scale) * step
    for _ in range(iterations):
        f0 = gaussian_filter1d(np.bincount(cell, weights=1 - w, minlength=len(grid)), bandwidth / step) + 1e-12
        f0 /= f0.sum() * step
        kernel = gumbel_r.pdf(np.arange(-0.3, 1.0, step), loc, scale) * step
        f1 = np.convolve(f0, kernel)[int(round(0.3 / step)):][:len(grid)] + 1e-12  # a null query's best
        null = (1 - share) * f0[cell] * gumbel_r.pdf(d, loc, scale)
        true = share * f1[cell] * norm.pdf(d, mean, sd)
        w = true / np.maximum(null + true, 1e-300)
        share = w.mean()
        mean, sd = (w * d).sum() / w.sum(), np.sqrt((w * (d - (w * d).sum() / w.sum()) ** 2).sum() / w.sum())
        v = 1 - w
        m = (v * d).sum() / v.sum()
        scale = np.sqrt(6 * (v * (d - m) ** 2).sum() / v.sum()) / np.pi
        loc = m - 0.5772 * scale
    return w


def gap_and_u(pairs, x, y, cfg, identities, fwd, bwd) -> Outcome:
    grid = _grid(pairs.score)
    false, translations = [], []
    for q, db, means in ((x, y, bwd.mean_sim()), (y, x, fwd.mean_sim())):
        m1, u = _leave_one_out(q, db, means, cfg.k)
        w = _em_with_u(m1, u)
        order = np.argsort(m1)
        without = np.concatenate([[0.0], np.cumsum((1 - w[order])[::-1])])
        false.append(without[len(m1) - np.searchsorted(m1[order], grid, side="left")])
        translations.append(w.sum())
    return _curve_choice(grid, _at_least(pairs.score, grid), np.mean(false, 0), np.mean(translations),
                         cfg.target_precision)


# --- the old decoy (the default before 2026-12-02) -------------------------------------------

def _own_language_neighbours(z, rows, k):
    n = len(z)
    found = exact_knn(np.asarray(z[rows], dtype=np.float32), z, min(k + 2, n))
    other = (found.ids != rows[:, None]) & (found.ids >= 0)

    def first_k(keep):
        order = np.argsort(~keep, axis=1, kind="stable")[:, :k]
        valid = np.take_along_axis(keep, order, 1)
        return Neighbours(np.where(valid, np.take_along_axis(found.sims, order, 1), -np.inf).astype(np.float32),
                          np.where(valid, np.take_along_axis(found.ids, order, 1), -1))

    return first_k(other).mean_sim(), first_k(other & (found.sims < 0.95))


def _decoy_best_scores(z, k, queries=20_000, seed=0):
    n = len(z)
    rows = np.arange(n) if n <= queries else np.sort(np.random.default_rng(seed).choice(n, queries, replace=False))
    means = np.zeros(n, dtype=np.float32)
    means[rows], nb = _own_language_neighbours(z, rows, k)
    others = np.setdiff1d(np.unique(nb.ids[nb.ids >= 0]), rows)
    if len(others):
        means[others] = _own_language_neighbours(z, others, k)[0]
    scores = margin_scores(nb.sims, means[rows][:, None], means[np.maximum(nb.ids, 0)], "ratio")
    return np.where(nb.ids >= 0, scores, -np.inf).max(axis=1)


def _decoy_tail(decoy, grid, caution=0.0, tail=25):
    ordered = np.sort(decoy[np.isfinite(decoy)])
    count = (len(ordered) - np.searchsorted(ordered, grid, side="left")).astype(np.float64)
    if len(ordered) > tail:
        start = ordered[-tail - 1]
        scale = max(float(np.mean(ordered[-tail:] - start)), 1e-9)
        beyond = grid > start
        count[beyond] = tail * np.exp(-(grid[beyond] - start) / scale)
    return (count + caution * np.sqrt(count)) / max(len(ordered), 1)


def _decoy_estimate(scores, decoy_src, decoy_tgt, n, m, caution):
    grid = _grid(scores)
    kept = _at_least(scores, grid)
    p_pair = np.sqrt(_decoy_tail(decoy_src, grid, caution) / max(n - 1, 1) *
                     _decoy_tail(decoy_tgt, grid, caution) / max(m - 1, 1))
    log_miss = np.log1p(-np.minimum(p_pair, 1 - 1e-12))
    translations = 0.0
    for _ in range(3):
        a, b = max(n - translations, 0), max(m - translations, 0)
        false = np.minimum(np.minimum(a * -np.expm1(b * log_miss), b * -np.expm1(a * log_miss)), kept)
        true = kept - false
        usable = true >= kept / 2
        translations = float(true[usable].max()) if usable.any() else 0.0
    false = np.maximum(false, kept - translations)
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(kept > 0, (kept - false) / kept, np.nan)
    return grid, kept, false, translations, precision


def old_decoy(pairs, x, y, cfg, identities, fwd, bwd) -> Outcome:
    """The decoy with its rule: best cautious F1 at cautious precision >= target, else the most
    precise threshold (at least the encoder's fixed one)."""
    from bitextmine.mine.thresholds import fixed_threshold

    if cfg.score != "ratio":  # the decoy judged other scores through an isotonic map: not kept here
        return Outcome(np.nan, how="ratio only")
    d_src, d_tgt = _decoy_best_scores(x, cfg.k), _decoy_best_scores(y, cfg.k)
    grid, kept, false, translations, precision = _decoy_estimate(pairs.score, d_src, d_tgt, len(x), len(y), 0.0)
    cautious = _decoy_estimate(pairs.score, d_src, d_tgt, len(x), len(y), 1.0)[4]
    cautious = np.nan_to_num(cautious)
    fixed_value = fixed_threshold("ratio", *identities)[0]
    if translations < 20:
        return Outcome(max(fixed_value, float(grid[int(np.argmax(cautious))])), grid, precision, "few")
    ok = cautious >= cfg.target_precision
    if not ok.any():
        return Outcome(max(fixed_value, float(grid[int(np.argmax(cautious))])), grid, precision, "none reaches")
    recall = np.clip((kept - false) / translations, 0, 1) * np.where(precision > 0, cautious / np.maximum(
        precision, 1e-12), 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        f1 = np.where(cautious + recall > 0, 2 * cautious * recall / (cautious + recall), 0)
    i = int(np.argmax(np.where(ok, f1, -1)))
    return Outcome(float(grid[i]), grid, precision, "target")


# --- a generalised extreme value null ----------------------------------------------------------

def _gev_mixture(gaps, start=None, iterations=defaults.ESTIMATE_EM_ITERATIONS, gumbel_fit=None, gev_iterations=8):
    """The gap mixture with the null's tail shape fitted too: the Gumbel EM first, then EM steps
    whose null is a GEV fitted by weighted likelihood (a heavier or lighter tail than Gumbel's)."""
    from scipy.stats import genextreme

    from bitextmine.mine import no_gold

    d = np.asarray(gaps, dtype=np.float64)
    mix = gumbel_fit(d, start, iterations)
    c, loc, scale = 0.0, mix.null_loc, mix.null_scale
    w = mix.posterior
    for _ in range(gev_iterations if start is None else 2):
        null = (1 - mix.share) * genextreme.pdf(d, c, loc, scale)
        true = mix.share * norm.pdf(d, mix.true_mean, mix.true_sd)
        w = true / np.maximum(null + true, 1e-300)
        share = float(w.mean())
        if not 0 < share < 1:
            break
        true_mean = float((w * d).sum() / w.sum())
        true_sd = max(float(np.sqrt((w * (d - true_mean) ** 2).sum() / w.sum())), 1e-6)
        v = 1 - w

        def loss(p, v=v):
            logpdf = np.maximum(genextreme.logpdf(d, p[0], p[1], np.exp(p[2])), -50.0)
            return -float((v * logpdf).sum())

        res = minimize(loss, [c, loc, np.log(scale)], method="Nelder-Mead",
                       options={"maxiter": 300, "xatol": 1e-5, "fatol": 1e-4})
        c, loc, scale = float(np.clip(res.x[0], -0.5, 0.5)), float(res.x[1]), float(np.exp(res.x[2]))
        mix = no_gold.GapMixture(share, loc, scale, true_mean, true_sd, w)
    return mix


def gev_null(pairs, x, y, cfg, identities, fwd, bwd) -> Outcome:
    """As `mine`, the null of the gaps a GEV (its tail shape fitted) rather than a Gumbel."""
    from bitextmine.mine import no_gold

    gumbel = no_gold.fit_gap_mixture
    no_gold.fit_gap_mixture = lambda gaps, start=None, iterations=defaults.ESTIMATE_EM_ITERATIONS: _gev_mixture(
        gaps, start, iterations, gumbel)
    try:
        return default(pairs, x, y, cfg, identities, fwd, bwd)
    finally:
        no_gold.fit_gap_mixture = gumbel


def with_null(model):
    """As `mine`, the gap mixture's null (or share) as ``model`` has it (``benchmarks.gap_null_variants``)."""
    def run(pairs, x, y, cfg, identities, fwd, bwd) -> Outcome:
        with model():
            return default(pairs, x, y, cfg, identities, fwd, bwd)
    return run


def monotone_true_count(pairs, x, y, cfg, identities, fwd, bwd) -> Outcome:
    """As `mine`, the translations counted among the pairs kept never fewer at a lower
    threshold (the count at each threshold at least the count above it)."""
    from bitextmine.mine import no_gold

    plain = no_gold._precision_and_recall

    def monotone(kept, false, translations):
        true = np.maximum.accumulate((kept - false)[::-1])[::-1]
        return plain(kept, kept - true, translations)

    with patched(no_gold, "_precision_and_recall", monotone):
        return default(pairs, x, y, cfg, identities, fwd, bwd)


def curve_count_uncapped(pairs, x, y, cfg, identities, fwd, bwd) -> Outcome:
    """`mine` before 2026-12-05 (late): the translations the false-pair curve implies, not at
    most the mixtures' sum where the gaps separate clearly."""
    from bitextmine.mine import no_gold

    plain = no_gold._curves

    def uncapped(grid, kept, sides, fits, decoy_false=None):
        if decoy_false is None:
            return plain(grid, kept, sides, fits, decoy_false)
        false = np.minimum(np.minimum(no_gold._false_pairs_of_sides(grid, sides, fits), kept), decoy_false)
        weak = np.mean([f.separation() for f in fits]) < defaults.ESTIMATE_CLEAR_SEPARATION
        translations = no_gold.translations_of(kept, false, defaults.ESTIMATE_WEAK_TRANSLATIONS_PRECISION if weak
                                               else defaults.ESTIMATE_TRANSLATIONS_PRECISION)
        return (*no_gold._precision_and_recall(kept, false, translations), false, translations)

    with patched(no_gold, "_curves", uncapped):
        return default(pairs, x, y, cfg, identities, fwd, bwd)


def _mutual_posteriors(sides, fits, damping: float) -> list[np.ndarray] | None:
    """Each side's posteriors (of a translation) with the other side's evidence added where a
    query and its best candidate are each other's best: the two gaps as independent evidence
    (the odds multiplied, the other side's prior odds divided out), ``damping`` of it taken."""
    if any(s.query_rows is None or s.candidate_rows is None for s in sides):
        return None

    def logit(p):
        p = np.clip(p, 1e-9, 1 - 1e-9)
        return np.log(p / (1 - p))

    out = []
    for a, b, fa, fb in ((sides[0], sides[1], fits[0], fits[1]), (sides[1], sides[0], fits[1], fits[0])):
        where_b = {int(r): i for i, r in enumerate(b.query_rows)}
        index = np.array([where_b.get(int(c), -1) for c in a.candidate_rows])
        mutual = index >= 0
        mutual[mutual] = b.candidate_rows[index[mutual]] == a.query_rows[mutual]
        evidence = np.zeros(len(a.gap))
        evidence[mutual] = logit(fb.posterior[index[mutual]]) - logit(np.array(fb.share))
        out.append(1 / (1 + np.exp(-(logit(fa.posterior) + damping * evidence))))
    return out


def both_sides_gaps(damping: float = 1.0):
    """As `mine`, a query's posterior (of a translation) also reading its best candidate's gap
    on the other side where the two are each other's best (``_mutual_posteriors``)."""
    def run(pairs, x, y, cfg, identities, fwd, bwd) -> Outcome:
        from bitextmine.mine import no_gold

        plain = no_gold._false_pairs_of_sides

        def combined(grid, sides, fits):
            posteriors = _mutual_posteriors(sides, fits, damping)
            if posteriors is None:
                return plain(grid, sides, fits)
            return plain(grid, sides, [replace(f, posterior=p) for f, p in zip(fits, posteriors, strict=True)])

        with patched(no_gold, "_false_pairs_of_sides", combined):
            return default(pairs, x, y, cfg, identities, fwd, bwd)
    return run


def distance_gaps_where_weak(least_share: float = 0.0):
    """As `mine`, the distance gaps' estimate alone where the gaps separate weakly and the
    estimate counts translations for at least ``least_share`` of the smaller side (`mine`:
    ``defaults.ESTIMATE_DISTANCE_ALONE_SHARE``, since 2026-12-06; before, never: the mean of
    both margins' false pairs, chosen on French news, whose gaps separate clearly)."""
    def run(pairs, x, y, cfg, identities, fwd, bwd) -> Outcome:
        with patched(defaults, "ESTIMATE_DISTANCE_ALONE_SHARE", least_share):
            return default(pairs, x, y, cfg, identities, fwd, bwd)
    return run


def before_distance_alone(pairs, x, y, cfg, identities, fwd, bwd) -> Outcome:
    """`mine` before 2026-12-06: the mean of both margins' false pairs wherever the gaps separate."""
    from bitextmine.mine import thresholds

    with patched(thresholds, "combined_over_margins", thresholds.averaged_over_margins):
        return default(pairs, x, y, cfg, identities, fwd, bwd)


def precision_weighted_where_weak_and_few(beta: float = 0.5, least_share: float = 0.05, base=default):
    """As ``base``, but where the gaps separate weakly and the estimate counts translations for
    fewer than ``least_share`` of the smaller side, the threshold of best estimated F-``beta``
    (precision weighted ``1 / beta`` times recall) rather than of best F1: on such pools the
    estimate counted too few false pairs (its null's tail too light), and `mine`'s threshold
    lay under the best one on every weak pool at 1 % of two draws."""
    def run(pairs, x, y, cfg, identities, fwd, bwd) -> Outcome:
        from bitextmine.mine import thresholds

        choice = choose_threshold(pairs, x, y, cfg, identities, fwd, bwd)
        e = choice.estimate
        if (e is None or choice.source != "adaptive" or thresholds.weakly_separated(e) is None
                or e.translations >= least_share * min(e.details["rows"])):
            return base(pairs, x, y, cfg, identities, fwd, bwd)
        p, r = np.nan_to_num(e.precision), np.nan_to_num(e.recall)
        b2 = beta * beta
        with np.errstate(divide="ignore", invalid="ignore"):
            f = np.where(b2 * p + r > 0, (1 + b2) * p * r / (b2 * p + r), 0.0)
        i = int(np.argmax(f))
        return Outcome(float(e.thresholds[i]), e.thresholds, e.precision, f"F{beta:g} where weak and few")
    return run


VARIANTS = {"mine": default, "mine with lengths unchecked": default, "mine with cosine floor 0.6": default,
            "mine with cosine floor 0.5": default, "mine with cosine agreement 3": default,
            "mine with cosine agreement 2.5": default, "cautious": cautious, "halfway": halfway,
            "best F1": with_tolerance(0.0),
            "tolerance 0.05": with_tolerance(0.05), "mine at tolerance 0.15": mine_at_tolerance(0.15),
            "gap mixture alone": gap_mixture_alone,
            "old decoy": old_decoy, "old decoy unchecked": old_decoy, "score mixture": score_mixture,
            "gap + u": gap_and_u, "fixed 1.30": fixed(1.30),
            "fixed 1.14": fixed(1.14), "fixed 1.40": fixed(1.40), "fixed distance 0.12": fixed(0.12, "distance"),
            "gev null": gev_null, "cautious below 30": cautious_when_few(30),
            "cautious below 60": cautious_when_few(60), "mine before the blind side": before_blind_side,
            "mine without the headroom": without_headroom, "mine before the weak count": before_weak_count,
            "weak count everywhere": weak_count_everywhere,
            "weak count at a quarter": weak_count_at_a_quarter, "headroom by the interval": headroom_by_interval,
            "null left of the mode": with_null(gap_null_variants.null_left_of_mode),
            "share by score": with_null(gap_null_variants.share_by_score),
            "null from second spacings": with_null(gap_null_variants.null_from_second_spacings),
            "skewed translations": with_null(gap_null_variants.skewed_translations),
            "null by convolution": with_null(gap_null_variants.null_by_convolution),
            "skewed translations and spacing null": with_null(gap_null_variants.skewed_translations_spacing_null),
            "F1 slack 0.005": f1_slack_half_point, "F1 slack 0.01": f1_slack_point,
            "F1 slack 0.02": f1_slack_two_points, "F1 slack 0.005 middle": f1_slack_middle(0.005),
            "F1 slack 0.01 middle": f1_slack_middle(0.01), "monotone true count": monotone_true_count,
            "curve's count uncapped": curve_count_uncapped, "both sides' gaps": both_sides_gaps(),
            "both sides' gaps at half": both_sides_gaps(0.5),
            "F1 slack 0.005 where clear": f1_slack_where_clear(0.005),
            "F1 slack 0.01 where clear": f1_slack_where_clear(0.01),
            "distance gaps where weak": distance_gaps_where_weak(),
            "distance gaps where weak and many": distance_gaps_where_weak(0.05),
            "mine before the distance gaps alone": before_distance_alone,
            "F0.5 where weak and few": precision_weighted_where_weak_and_few(0.5, base=before_distance_alone),
            "distance gaps where weak and many and F0.5 where few": precision_weighted_where_weak_and_few(
                0.5, base=default),
            "distance gaps where weak and many and F0.7 where few": precision_weighted_where_weak_and_few(
                0.7, base=default),
            "F0.5 where weak and under 2 %": precision_weighted_where_weak_and_few(0.5, 0.02),
            "F0.5 where weak and under 3 %": precision_weighted_where_weak_and_few(0.5, 0.03)}


def every_pair(x, y, cfg):
    """(every pair the retrieval selects, forward and backward neighbours): exact search."""
    from bitextmine.mine.knn import exact_knn_both_ways

    fwd, bwd = exact_knn_both_ways(x, y, cfg.k)
    return retrieve(*candidates(fwd, bwd, cfg.score), cfg.retrieval, -np.inf), fwd, bwd


if __name__ == "__main__":  # a library of variants: the command that runs them is mining_defaults
    import argparse

    argparse.ArgumentParser(
        prog="python -m benchmarks.no_gold_variants",
        description="The no-gold threshold variants, by name (run them with python -m benchmarks.mining_defaults "
                    "--variants NAME,...): " + ", ".join(VARIANTS)).parse_args()
    print("this module only defines the variants: run python -m benchmarks.mining_defaults --variants NAME,... "
          "(--help lists the names)")
