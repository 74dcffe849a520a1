"""``adapt(src, tgt, encoder, out_dir, cfg)``: self-training on the pools being mined, read top to bottom.

1. the pools (``pools``) and the encoder whose head trains (``model``); the sentence
   features of both pools, computed once (``features``, ``sides``);
2. round 0: the starting encoder mines the pools at a threshold chosen without gold for
   ``target_precision``; the filter's rules and language ID keep the pairs to train on;
3. round r: the head trains ``steps`` steps on round r-1's pairs (``objective``: ranking
   against the pools with hard negatives, distillation for a student, anchors, replay),
   or, with ``trainable="network"``, every layer through ``bitextmine train``
   (``network``); the pools are embedded again and mined again;
4. the loop stops when a round no longer changes the pairs or no longer raises the
   held-out estimate, after ``rounds`` rounds, or when the next round would not fit
   ``max_minutes``;
5. the trained round of best held-out estimate, where it beats round 0's by more than
   ``min_keep_gain`` (else round 0: ``best_round``), is written as a checkpoint
   (``ckpt:OUT``), with the threshold for mining these pools with it (``pools_threshold``).

Self-confirmation: from round 1 on, the pairs a round mines are scored by a model trained
on most of them, so their scores, and the no-gold estimate made from them, flatter them. Each
record says which share of its pairs its model was trained on, and the decisions use
another estimate: the one on the *held-out pools*. A share of the source sentences
(``held_out``, drawn when round 0 has mined; raised where round 0 counts so few translations
that it would hold too few of them: ``held_out_share``) is never trained on; they are mined
against the target sentences of no training pair, so no model has seen a pair of theirs, and their translations
are as hard as the pools' own (leaving out only the sentences trained on would leave the
hardest translations, too few for the estimate to find). A round's model and the previous
round's are both measured there (the gain is what stops the loop), and at the end every
round on the same held-out pools. With each round's readings pooled (``pooled_held_out_scores``),
the best round is kept where it beats round 0 by the keep gain (round 0, the encoder as it
started, otherwise, and when none has a held-out estimate: too few sentences, or no
translations found among them).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from pathlib import Path

import numpy as np
import torch

from bitextmine import defaults
from bitextmine.adapt.config import AdaptConfig
from bitextmine.adapt.model import AdaptedEncoder, check_adaptable
from bitextmine.adapt.objective import PairObjective, RoundPairs, Side, hard_negatives
from bitextmine.adapt.pools import Pool, check_not_the_encoder, check_replay_files, read_pools
from bitextmine.adapt.rounds import STATE, AdaptState, RoundRecord, claimed_output
from bitextmine.adapt.sides import embed_side, make_side, replay_sides
from bitextmine.errors import BitextmineError
from bitextmine.progress import progress_bar
from bitextmine.train.optim import clip_gradients

log = logging.getLogger(__name__)

LOSS_WINDOW = 10  # the round's losses are reported as the mean of its last steps
# why the loop ended, as the command says it
STOPS = {"rounds": "the rounds asked for are done",
         "pairs_stable": "the last round hardly changed the training pairs",
         "estimate_stable": "the last round did not raise the held-out estimate",
         "held_out_blind": ("the held-out pools show no translations before or after the last round, so no round "
                            "can be judged there: give a larger --held-out share, or pools with more translations"),
         "time_budget": "another round would not fit --max-minutes",
         "too_few_pairs": "the filter left fewer than 2 pairs to train on",
         "no_translations": "mining found no translations in the pools, so there is nothing to train on"}


def adapt(src: str | list[str], tgt: str | list[str], encoder: str, out_dir: str | Path,
          cfg: AdaptConfig = AdaptConfig(), resume: bool = False, progress: bool = True,
          started: float | None = None, mine=None, restart_on_change: bool = False) -> dict:
    """Adapt ``encoder`` to the pools ``src`` and ``tgt`` (text files or embedding sets); the
    round of best estimated F1 ends up in ``out_dir`` as a checkpoint. ``resume``: continue
    the run ``out_dir`` holds. ``started``: ``time.monotonic()`` when the command began, from
    which ``cfg.max_minutes`` counts (default: now). ``mine``: the ``MineConfig`` the pools
    will be mined with afterwards, for ``pools_threshold`` (default: mine's own, at ``cfg.k``).
    ``restart_on_change``: with ``resume``, a run of other settings or pools in ``out_dir`` is
    cleared and adapted again (a pipeline's task) rather than refused."""
    from bitextmine.devices import resolve_device

    started = time.monotonic() if started is None else started
    device = resolve_device(cfg.device)
    check_adaptable(encoder)  # before the pools are read: a wrong encoder fails at once
    check_not_the_encoder(encoder, out_dir)
    cfg = cfg.for_encoder(encoder)
    check_replay_files(cfg.replay)  # before any work: a bad file found after round 0 would leave a run behind
    pools = read_pools(src, tgt)
    check_pools(pools, cfg.k)
    if cfg.trainable == "network":
        from bitextmine.adapt.network import NetworkAdaptedEncoder

        model = NetworkAdaptedEncoder(encoder, cfg.src_lang, cfg.tgt_lang, device, Path(out_dir) / STATE)
    else:
        model = AdaptedEncoder(encoder, cfg.src_lang, cfg.tgt_lang, device)
    run = {"encoder": encoder, "encoder_identity": model.start.identity.to_dict(),
           "pools": [{"sources": p.sources, "sentences": len(p), "sha256": p.digest()} for p in pools],
           "settings": cfg.run_signature()}
    with claimed_output(Path(out_dir)) as state:
        if not state.check_run(run, resume, restart_on_change):
            state.start(run)
        return _adapt(model, pools, state, cfg, started, progress, mine)


def _adapt(model: AdaptedEncoder, pools: tuple[Pool, Pool], state: AdaptState, cfg: AdaptConfig, started: float,
           progress: bool, mine=None) -> dict:
    sides = tuple(make_side(model, i, pool.texts, f"pool-{name}", state.state, cfg, progress)
                  for i, (pool, name) in enumerate(zip(pools, ("src", "tgt"), strict=True)))
    # the network's rounds read the replay files through bitextmine train (``network.round_data``)
    replay = replay_sides(model, cfg, state.state, progress) if cfg.replay and cfg.trainable == "head" else None
    records = state.rounds()
    if records:
        log.info("resuming after round %d", records[-1].round)
        model.load_head(state.head(records[-1].round))
    else:
        records.append(mine_round(model, sides, pools, state, cfg, 0, None, started))
    if records[0].held_out_share is not None:  # round 0 chose it (``held_out_share``)
        cfg = dataclasses.replace(cfg, held_out=records[0].held_out_share)
    stop = stop_reason(records, cfg, started)
    while stop is None:
        number, round_started = records[-1].round + 1, time.monotonic()
        before = tuple(embed_side(model, side) for side in sides)  # the vectors the pairs were mined with
        if cfg.trainable == "network":
            from bitextmine.adapt.network import train_network_round

            losses = train_network_round(model, pools, state.pairs(number - 1), cfg, number, started, progress,
                                         reserve=records[0].seconds, vectors=before,
                                         held_out=held_out_sources(len(pools[0].texts), cfg))
        else:
            losses = train_round(model, sides, before, state.pairs(number - 1), replay, cfg, number, started,
                                 progress, reserve=records[0].seconds)
        records.append(mine_round(model, sides, pools, state, cfg, number, before, started, losses, round_started))
        model.round_done(number)
        stop = stop_reason(records, cfg, started)
    scores = pooled_held_out_scores(held_out_scores(model, sides, state, records, cfg), records)
    best = best_round(records, scores, cfg.min_keep_gain)
    threshold = pools_threshold(model, sides, state, best, cfg, mine, scores)
    model.load_head(state.head(best.round))
    kept_because = keep_message(best, records, scores, cfg.min_keep_gain)
    if best.round == 0:
        log.warning("round 0 kept: the encoder as it started (%s)", kept_because)
    summary = {"rounds": [r.round for r in records], "best_round": best.round, "stopped": stop,
               "stopped_because": stop_message(stop, records), "kept_because": kept_because,
               "held_out_f1": scores, "pairs": best.kept, "pools_threshold": threshold,
               "trained_languages": [lang for lang, trains in zip((cfg.src_lang, cfg.tgt_lang), model.trains,
                                                                  strict=True) if trains and lang],
               "settings": cfg.run_signature(),
               "minutes": round((time.monotonic() - started) / 60, 2)}
    model.write(state.out_dir, {**summary, "encoder": model.spec, "pools": [p.sources for p in pools],
                                "pool_digests": [{"sentences": len(p), "sha256": p.digest()} for p in pools]})
    log.info("kept round %d (held-out estimated F1 by round: %s); stopped: %s", best.round,
             ", ".join("n/a" if f is None else f"{100 * f:.1f}" for f in scores), summary["stopped_because"])
    return {**summary, "records": [r.__dict__ for r in records]}


def train_round(model: AdaptedEncoder, sides: tuple[Side, Side], vectors: tuple[np.ndarray, np.ndarray],
                previous: dict[str, np.ndarray], replay: tuple[Side, Side] | None, cfg: AdaptConfig, number: int,
                started: float, progress: bool, reserve: float = 0.0) -> dict[str, float]:
    """``cfg.steps`` steps of the head on the previous round's pairs (mined with ``vectors``); the
    mean of the last losses. Training stops early when ``reserve`` seconds (the mining after it)
    would pass ``max_minutes``."""
    (x, y), src, tgt = vectors, previous["src"], previous["tgt"]
    pairs = RoundPairs(torch.from_numpy(src), torch.from_numpy(tgt),
                       hard_negatives(x[src], y, tgt, cfg.hard_negatives, model.device),
                       hard_negatives(y[tgt], x, src, cfg.hard_negatives, model.device))
    objective = PairObjective(model, *sides, pairs, cfg, seed=cfg.seed * 1000 + number, replay=replay)
    torch.manual_seed(cfg.seed + number)
    params = model.parameters()
    optimizer = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    recent: list[dict[str, float]] = []
    with progress_bar(total=cfg.steps, desc=f"round {number}", unit="step", disable=not progress) as bar:
        for step in range(cfg.steps):
            loss, parts = objective(step)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            clip_gradients(params, defaults.TRAIN_CLIP_NORM)
            optimizer.step()
            recent = (recent + [parts])[-LOSS_WINDOW:]
            bar.update(1)
            bar.set_postfix(loss=f"{loss.item():.3f}")
            if out_of_time(cfg, started, reserve):
                log.warning("round %d: the time limit cut its training short at step %d", number, step + 1)
                break
    return {k: round(float(np.mean([r[k] for r in recent])), 4) for k in recent[0]}


def mine_round(model: AdaptedEncoder, sides: tuple[Side, Side], pools: tuple[Pool, Pool], state: AdaptState,
               cfg: AdaptConfig, number: int, before: tuple[np.ndarray, np.ndarray] | None, started: float,
               losses: dict | None = None, round_started: float | None = None) -> RoundRecord:
    """Mine the pools with the model as it stands, filter, and save the round. ``before``: the
    previous round's vectors, measured beside this round's on the held-out pools."""
    from bitextmine.mine.thresholds import select_pairs

    round_started = time.monotonic() if round_started is None else round_started
    x, y = (embed_side(model, side) for side in sides)
    identities = tuple(side.identity for side in model.sides)
    selection = select_pairs(x, y, cfg.mine_config(model.device), identities, device=model.device)
    found = selection.pairs
    seen = selection.choice.translations_seen  # else the encoder's threshold kept pairs of pools without a group
    share = None
    if number == 0:
        share = held_out_share(cfg, selection.choice)
        if share > cfg.held_out:
            log.warning("round 0 counts %.0f translations in the pools: %.0f%% of the source sentences are held "
                        "out to judge the rounds (--held-out %g would hold out too few of them)",
                        selection.choice.estimate.translations, 100 * share, cfg.held_out)
        cfg = dataclasses.replace(cfg, held_out=share)
    keep = kept_by_filter(found, pools, cfg) & ~np.isin(found.src, held_out_sources(len(x), cfg)) & seen
    pairs = {"src": found.src[keep].astype(np.int64), "tgt": found.tgt[keep].astype(np.int64),
             "score": found.score[keep].astype(np.float32)}
    previous = state.pairs(number - 1) if number else None
    now, trained = pair_set(pairs), pair_set(previous)
    measured = {}
    if before is not None:
        rows = held_out_rows(state, number, (len(x), len(y)), cfg)
        measured = {"held_out_f1": held_out_f1((x, y), rows, cfg, identities, model.device),
                    "held_out_f1_before": held_out_f1(before, rows, cfg, identities, model.device),
                    "held_out_sentences": tuple(len(r) for r in rows)}
    record = RoundRecord(
        round=number, pairs=len(found), kept=len(now), added=len(now - trained) if number else 0,
        dropped=len(trained - now), threshold=finite_or_none(selection.choice.threshold),
        threshold_reason=selection.choice.reason, threshold_source=selection.choice.source, translations_seen=seen,
        held_out_share=share,
        estimated_f1=estimated_f1(selection.choice),
        trained_pairs=len(trained), self_scored_share=len(now & trained) / max(len(now), 1), losses=losses or {},
        seconds=round(time.monotonic() - round_started, 1), minutes_total=round((time.monotonic() - started) / 60, 2),
        **measured)
    state.save_round(record, model.head_state(), pairs, (pools[0].texts, pools[1].texts))
    log.info("%s", record.line())
    return record


def trained_rows(state: AdaptState, number: int) -> tuple[np.ndarray, np.ndarray]:
    """The source and target rows of every pair that rounds 1..``number`` trained on."""
    src, tgt = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
    for r in range(number):
        pairs = state.pairs(r)
        src.append(pairs["src"])
        tgt.append(pairs["tgt"])
    return np.unique(np.concatenate(src)), np.unique(np.concatenate(tgt))


def held_out_sources(rows: int, cfg: AdaptConfig) -> np.ndarray:
    """The source rows no round trains on (seeded: the same on resume)."""
    from bitextmine.mine.no_gold import sample_rows

    return sample_rows(rows, int(round(cfg.held_out * rows)), cfg.seed) if cfg.held_out > 0 else np.zeros(0, int)


def held_out_share(cfg: AdaptConfig, choice) -> float:
    """The share of the source sentences to hold out: ``cfg.held_out``, raised up to
    ``defaults.ADAPT_HELD_OUT_MAX`` until it would hold ``defaults.ADAPT_HELD_OUT_TRANSLATIONS``
    of the translations round 0's estimate counts (0 stays 0: no held-out pools asked for)."""
    translations = choice.estimate.translations if choice.estimate is not None else 0.0
    if cfg.held_out <= 0 or not choice.translations_seen or not translations > 0:
        return cfg.held_out
    wanted = min(defaults.ADAPT_HELD_OUT_MAX, defaults.ADAPT_HELD_OUT_TRANSLATIONS / translations)
    return float(max(cfg.held_out, wanted))


def held_out_rows(state: AdaptState, number: int, sizes: tuple[int, int], cfg: AdaptConfig
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The held-out pools after ``number`` rounds of training: the held-out source rows (all
    the source rows never trained on, without a held-out share) and the target rows of no
    training pair."""
    trained = trained_rows(state, number)
    held = held_out_sources(sizes[0], cfg)
    src = held if len(held) else np.setdiff1d(np.arange(sizes[0]), trained[0])
    return src, np.setdiff1d(np.arange(sizes[1]), trained[1])


def held_out_f1(vectors: tuple[np.ndarray, np.ndarray], rows: tuple[np.ndarray, np.ndarray], cfg: AdaptConfig,
                identities, device: str) -> float | None:
    """The estimated F1 on the pools of ``rows`` (None when too few; 0 when mining finds no
    translations there, so that a round which finds them where the start found none counts as
    the gain it is: on a student's Czech news at 3 %, +9.7 best-threshold F1)."""
    from bitextmine.mine.thresholds import mine_and_choose

    if min(len(r) for r in rows) <= cfg.k:
        return None
    _, choice = mine_and_choose(vectors[0][rows[0]], vectors[1][rows[1]], cfg.mine_config(device), identities,
                                device=device)
    return estimated_f1(choice) if choice.translations_seen else 0.0


def held_out_scores(model: AdaptedEncoder, sides: tuple[Side, Side], state: AdaptState,
                    records: list[RoundRecord], cfg: AdaptConfig) -> list[float | None]:
    """Every round's estimated F1 on the same held-out pools (``held_out_rows`` after the last round)."""
    held = held_out_rows(state, records[-1].round, (len(sides[0]), len(sides[1])), cfg)
    identities = tuple(side.identity for side in model.sides)
    scores = []
    for record in records:
        model.load_head(state.head(record.round))
        vectors = tuple(embed_side(model, side) for side in sides)
        scores.append(held_out_f1(vectors, held, cfg, identities, model.device))
    return scores


def pooled_held_out_scores(final: list[float | None], records: list[RoundRecord]) -> list[float | None]:
    """Each round's held-out estimate as the rounds are judged: the mean of its readings that
    found translations (``final``'s, and the loop's of the same model: as its own round and as
    the next round's "before"); 0 where none found any, None where none was read. A reading
    that finds no translations where another of the same model on nearly the same pools found
    them is the estimate losing its group among a few dozen translations, not the model losing
    them (Polish lines: a round read 81.3 twice in the loop, then 0 on 63 fewer target sentences)."""
    pooled = []
    for i, (record, score) in enumerate(zip(records, final, strict=True)):
        readings = [score, record.held_out_f1,  # None for round 0: the loop reads a round once trained
                    records[i + 1].held_out_f1_before if i + 1 < len(records) else None]
        readings = [r for r in readings if r is not None]
        found = [r for r in readings if r > 0]
        pooled.append(round(float(np.mean(found)), 5) if found else (0.0 if readings else None))
    return pooled


def pools_threshold(model: AdaptedEncoder, sides: tuple[Side, Side], state: AdaptState, best: RoundRecord,
                    cfg: AdaptConfig, mine=None, held_out: list[float | None] | None = None) -> dict | None:
    """The threshold for mining these pools with the kept round (None: round 0 kept, whose own
    estimate is not self-scored, or ``mine`` has a threshold of its own).

    On the pools a round trained on, mine's no-gold estimate is self-scored: the trained pairs
    stand apart and the estimate doubts the translations it did not train on (on news,
    ``mine``'s own threshold lost 4 F1 points on French and 40 on a student's Czech; RESULTS.md,
    "Adapt"). The starting encoder has trained on none of them: its threshold says how many
    pairs to keep, grown by the kept round's gain on the held-out pools (``held_out``, each
    round's estimated F1 there, never trained on), and the kept round which ones. The start's
    count alone capped the recall at the start's (Chinese and Polish lines: 84.8 and 82.9 where
    the grown count gives 93.3 and 92.6); the growth never takes the count past the
    translations round 0 counts in the pools, or past the start's own count where that is larger
    (RESULTS.md, "Adapt on lines of other languages"). The threshold lies halfway between the
    scores of the kept round's pairs of that rank and the next, under ``mine``'s score and k.
    """
    from bitextmine.mine import MineConfig
    from bitextmine.mine.thresholds import mine_and_choose

    mine = mine or MineConfig(k=cfg.k, device=model.device)
    if not best.round or mine.threshold is not None:
        return None
    identities = tuple(side.identity for side in model.sides)
    model.load_head(state.head(0))
    pairs, start = mine_and_choose(*(embed_side(model, side) for side in sides), mine, identities,
                                   device=model.device)
    start_count = int((pairs.score >= start.threshold).sum())
    if start_count == 0:
        return None
    growth = held_out_growth(held_out, best.round)
    trusted = start.source == "adaptive" and start.estimate is not None
    count = grown_count(start_count, growth, start.estimate.translations if trusted else None)
    model.load_head(state.head(best.round))
    pairs, _ = mine_and_choose(*(embed_side(model, side) for side in sides), mine, identities, device=model.device)
    scores = np.sort(pairs.score)[::-1]
    # halfway to the next pair's score: embedding sets store fp16, and a threshold on the last
    # pair's own score could drop it when the pools are embedded again
    rank = min(count, len(scores)) - 1
    threshold = (scores[rank] + scores[rank + 1]) / 2 if rank + 1 < len(scores) else scores[rank]
    return {"threshold": float(threshold), "pairs": count, "start_pairs": start_count,
            "held_out_growth": round(growth, 4), "score": mine.score, "k": mine.k,
            "start_threshold": float(start.threshold), "start_reason": start.reason}


def grown_count(start_count: int, growth: float, translations: float | None) -> int:
    """The start's count of pairs times the held-out growth, at most the ``translations`` round 0
    counts (or the start's count, where larger); the start's count where the count is not trusted."""
    if growth <= 1 or translations is None:
        return start_count
    return min(int(round(start_count * growth)), max(start_count, int(round(translations))))


def held_out_growth(held_out: list[float | None] | None, kept_round: int) -> float:
    """The kept round's estimated F1 on the held-out pools over round 0's (1 where either is unknown or 0)."""
    if not held_out or kept_round >= len(held_out) or not held_out[0] or not held_out[kept_round]:
        return 1.0
    return float(held_out[kept_round] / held_out[0])


def kept_by_filter(found, pools: tuple[Pool, Pool], cfg: AdaptConfig) -> np.ndarray:
    """Which mined pairs the filter keeps (its rules, and language ID when the languages are given)."""
    if not cfg.filter:
        return np.ones(len(found), dtype=bool)
    from bitextmine.filter import FilterConfig, PairFilter
    from bitextmine.io.pairs import Pair

    pairs = [Pair(float(score), pools[0].texts[s], pools[1].texts[t], (), n + 1)
             for n, (score, s, t) in enumerate(zip(found.score.tolist(), found.src.tolist(), found.tgt.tolist(),
                                                   strict=True))]
    verdicts = PairFilter(FilterConfig(src_lang=cfg.src_lang, tgt_lang=cfg.tgt_lang)).run(pairs)
    return np.array([reason is None for _, reason in verdicts], dtype=bool)


def finite_or_none(value: float) -> float | None:
    """A threshold as the round's JSON keeps it (none chosen: None)."""
    return float(value) if np.isfinite(value) else None


def pair_set(pairs: dict[str, np.ndarray] | None) -> set[tuple[int, int]]:
    return set() if pairs is None else set(zip(pairs["src"].tolist(), pairs["tgt"].tolist(), strict=True))


def estimated_f1(choice) -> float | None:
    """The best F1 over thresholds that the threshold's no-gold estimate sees (None without one, and
    when it finds no translations: its curve then describes no group of translations)."""
    estimate = getattr(choice, "estimate", None)
    if not choice.translations_seen or estimate is None or not len(getattr(estimate, "thresholds", ())):
        return None
    p = np.nan_to_num(np.asarray(estimate.precision, dtype=np.float64))
    r = np.nan_to_num(np.asarray(estimate.recall, dtype=np.float64))
    f1 = np.where(p + r > 0, 2 * p * r / np.maximum(p + r, 1e-12), 0.0)
    return round(float(f1.max()), 5)


def out_of_time(cfg: AdaptConfig, started: float, reserve: float) -> bool:
    """Whether ``reserve`` more seconds would pass ``max_minutes``."""
    return cfg.max_minutes is not None and time.monotonic() + reserve > started + 60 * cfg.max_minutes


def stop_reason(records: list[RoundRecord], cfg: AdaptConfig, started: float) -> str | None:
    """Why no further round runs (None: one does)."""
    last = records[-1]
    if last.kept < 2:
        # a record written before translations_seen was recorded names "none" alone
        return "no_translations" if last.threshold_source == "none" or not last.translations_seen else "too_few_pairs"
    if last.round >= cfg.rounds:
        return "rounds"
    if last.round >= 1:
        before = records[-2]
        if (last.added + last.dropped) / max(before.kept, 1) < cfg.min_pair_change:
            return "pairs_stable"
        if last.held_out_f1 == 0 and last.held_out_f1_before == 0:  # no translations seen there by either
            return "held_out_blind"
        if (last.held_out_f1 is not None and last.held_out_f1_before is not None
                and last.held_out_f1 - last.held_out_f1_before < cfg.min_f1_change):
            return "estimate_stable"
    # the next round takes about as long as the last one trained, or a first guess for round 1
    expected = last.seconds if last.round else 0.0
    return "time_budget" if out_of_time(cfg, started, expected) else None


def stop_message(stop: str, records: list[RoundRecord]) -> str:
    """Why the loop ended, in words; for no translations, mine's own reason."""
    if stop == "no_translations":
        return f"round {records[-1].round}: {records[-1].threshold_reason}"
    return STOPS[stop]


def best_round(records: list[RoundRecord], scores: list[float | None], min_gain: float = 0.0) -> RoundRecord:
    """The trained round of best held-out estimate (the earliest of equals), kept where it is more
    than ``min_gain`` above round 0's (a negative ``min_gain``: where it is less than that under
    it); else round 0, as where round 0 or every trained round has no estimate."""
    trained = [(score, -r.round, r) for r, score in zip(records[1:], scores[1:], strict=True) if score is not None]
    if not trained or scores[0] is None:
        return records[0]
    score, _, best = max(trained, key=lambda item: item[:2])
    return best if score - scores[0] > min_gain else records[0]


def keep_message(best: RoundRecord, records: list[RoundRecord], scores: list[float | None], min_gain: float) -> str:
    """Why ``best`` (``best_round``'s pick) is the round kept, in words."""
    if len(records) == 1:
        return "no round was trained"
    if best.round:
        gain = scores[records.index(best)] - scores[0]
        within = f", within the {_points(-min_gain)} a trained round may lose (--min-keep-gain)" if gain <= 0 else ""
        return (f"the best held-out estimate of the trained rounds, {100 * scores[records.index(best)]:.1f}, "
                f"against {100 * scores[0]:.1f} at round 0{within}")
    trained = [(score, r.round) for r, score in zip(records[1:], scores[1:], strict=True) if score is not None]
    if not trained or scores[0] is None:
        return "the held-out pools gave no estimate to judge a trained round by"
    score, number = max(trained)
    if min_gain < 0:
        return (f"no trained round came within {_points(-min_gain)} of round 0's held-out estimate "
                f"{100 * scores[0]:.1f} (round {number}: {100 * score:.1f}; --min-keep-gain {min_gain:g})")
    if score <= scores[0]:
        return f"no trained round raised the held-out estimate above round 0's {100 * scores[0]:.1f}"
    return (f"round {number} raised the held-out estimate by {100 * (score - scores[0]):.1f} points, "
            f"less than --min-keep-gain {min_gain:g} ({100 * min_gain:g} points)")


def _points(share: float) -> str:
    return f"{100 * share:g} point" + ("" if round(100 * share, 9) == 1 else "s")


def check_pools(pools: tuple[Pool, Pool], k: int) -> None:
    for pool in pools:
        if len(pool) <= k:
            raise BitextmineError(f"{len(pool)} distinct sentences: mining with -k {k} needs more",
                                  path=pool.sources[0])


__all__ = ["STOPS", "adapt", "keep_message", "stop_message"]
