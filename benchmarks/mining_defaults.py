"""Does `mine` without --threshold hold on pools that look like real mining?

    python -m benchmarks.mining_defaults [--encoder usem3] [--cache /tmp/bitextmine-bench-cache]
                                             [--only m30k-de] [--score ratio]

Pools are built from parallel data the defaults were never tuned on, made to look like
mining rather than Tatoeba retrieval: long sentences (Multi30k captions, manythings
sentences of 8 words or more), "paragraph" lines of 2-4 sentences joined (about the
length of news sentences), translation shares of 1 %, 5 % and 15 %, pools of 5k-15k
a side, some of unequal sizes (as BUCC's). Each pool side is shuffled; the sentences
without a translation have theirs left out of the other side.

For each setting, `mine_vectors` (what `mine` runs) is called with no threshold; the
table gives precision / recall / F1 at the default threshold (however `mine` chooses
it when no --threshold is given) and at the F1-best threshold, and both thresholds.
Embeddings are cached on disk (keyed by encoder and texts), so reruns only mine.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

SHARED = Path(os.environ.get("BITEXTMINE_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
TRAIN = SHARED / "train"
SHARES = (0.01, 0.05, 0.15)
NEAR_DUPLICATE_COSINE = 0.85  # two English sides this close say the same thing (see prepare)
SUPERSET = 1.4  # items read before removing near-duplicates, per item needed


@dataclass
class Source:
    """Where pools of one kind come from: parallel sentences (foreign, English) distinct on
    both sides, joined into lines of ``group`` sentences when given, and English-only
    filler sentences when the English side needs more than the pairs give.

    ``items`` and ``filler`` are filled by ``prepare``: the lines pools draw from.
    """

    name: str
    pair: str
    rows: list[tuple[str, str]]
    group: tuple[int, int] | None = None  # (fewest, most) sentences per line
    filler_rows: list[str] = field(default_factory=list)  # English sentences no foreign one translates
    items: list[tuple[str, str]] = field(default_factory=list)
    filler: list[str] = field(default_factory=list)


def distinct(rows) -> list[tuple[str, str]]:
    seen_f, seen_e, out = set(), set(), []
    for f, e in rows:
        f, e = f.strip(), e.strip()
        if f and e and f not in seen_f and e not in seen_e:
            seen_f.add(f)
            seen_e.add(e)
            out.append((f, e))
    return out


def paragraphs(rows: list[tuple[str, str]], seed: int, sizes=(2, 4)) -> list[tuple[str, str]]:
    """Shuffled rows joined into lines of sizes[0]..sizes[1] sentences (same grouping both sides)."""
    rng = random.Random(seed)
    rows = list(rows)
    rng.shuffle(rows)
    out, i = [], 0
    while i < len(rows):
        n = rng.randint(*sizes)
        group = rows[i:i + n]
        out.append((" ".join(f for f, _ in group), " ".join(e for _, e in group)))
        i += n
    return out


def multi30k(lang: str) -> list[tuple[str, str]]:
    def read(split, code):
        with gzip.open(TRAIN / "multi30k" / f"{split}.{code}.gz", "rt", encoding="utf-8") as f:
            return f.read().splitlines()

    return distinct(zip(read("train", lang) + read("val", lang), read("train", "en") + read("val", "en"),
                        strict=True))


def manythings(lang: str) -> list[tuple[str, str]]:
    path = TRAIN / f"tatoeba_manythings_{lang}-eng" / f"train.eng-{lang}.tsv"
    rows = [line.split("\t")[:2] for line in path.read_text(encoding="utf-8").splitlines()]
    return distinct((f, e) for e, f in rows)


def tatoeba_test(code: str) -> list[tuple[str, str]]:
    """The Tatoeba retrieval test set of ``code`` (1,000 pairs): the only Russian and Chinese here."""
    base = SHARED / "tatoeba" / f"tatoeba.{code}-eng"
    foreign = base.with_name(f"{base.name}.{code}").read_text(encoding="utf-8").splitlines()
    english = base.with_name(f"{base.name}.eng").read_text(encoding="utf-8").splitlines()
    return distinct(zip(foreign, english, strict=True))


def english_filler(english: set[str], min_words: int = 1) -> list[str]:
    """manythings English sentences (shuffled) that are not among ``english``."""
    filler = [e for _, e in manythings("deu") if e not in english and words(e) >= min_words]
    random.Random(5).shuffle(filler)
    return filler


def words(text: str) -> int:
    return len(text.split())


def sources() -> dict[str, Source]:
    """Every source of pools, by short name (``prepare`` makes their lines)."""
    out = {}
    for lang in ("de", "fr"):
        rows = multi30k(lang)
        random.Random(1).shuffle(rows)
        out[f"m30k-{lang}"] = Source("Multi30k captions", f"{lang}-en", rows)
        out[f"m30k-{lang}-para"] = Source("Multi30k captions, 2-3 joined", f"{lang}-en", rows, (2, 3))
    for lang, code in (("deu", "de"), ("fra", "fr")):
        rows = manythings(lang)
        random.Random(2).shuffle(rows)
        out[f"mt-{code}-long"] = Source("manythings, >= 8 words", f"{code}-en", [r for r in rows if words(r[1]) >= 8])
        out[f"mt-{code}-para"] = Source("manythings, 2-4 joined", f"{code}-en",
                                        [r for r in rows if 4 <= words(r[1]) < 8], (2, 4))
    # Indonesian: too few sentences for joined lines, so sentences of 4 words or more, and
    # English filler from the German file, none of it in the Indonesian file (so none of it
    # translates an Indonesian line)
    ind = TRAIN / "tatoeba_more" / "train.eng-ind.tsv"
    rows = distinct((f, e) for e, f in (line.split("\t")[:2] for line in ind.read_text(encoding="utf-8").splitlines()))
    rows = [r for r in rows if words(r[1]) >= 4]
    random.Random(4).shuffle(rows)
    out["tt-id"] = Source("Tatoeba, >= 4 words", "id-en", rows, filler_rows=english_filler({e for _, e in rows}, 4))
    # Russian and Chinese: only the 1,000 pairs of each Tatoeba test set, so small pools;
    # English filler from manythings, and lines of 2-4 joined sentences for length
    for code, lang in (("rus", "ru"), ("cmn", "zh")):
        rows = tatoeba_test(code)
        random.Random(6).shuffle(rows)
        filler = english_filler({e for _, e in rows})
        out[f"tt-{lang}"] = Source("Tatoeba test set", f"{lang}-en", rows, filler_rows=filler)
        out[f"tt-{lang}-para"] = Source("Tatoeba test set, 2-4 joined", f"{lang}-en", rows, (2, 4), filler)
    return out


def needed(name: str, source: Source, filler: bool = False) -> int:
    """How many lines (or filler lines) the settings of source ``name`` draw from."""
    most = 0
    for s in SETTINGS:
        if s.source == name:
            pairs = int(round(s.share * s.n_src))
            if filler:
                most = max(most, s.n_tgt - pairs)
            else:
                most = max(most, s.n_src if source.filler_rows else s.n_src + s.n_tgt - pairs)
    return most


def prepare(sources_: dict[str, Source], cache: Path, wanted: set[str] | None = None) -> None:
    """Make each source's lines: near-paraphrases removed, joined when asked, cut to need.

    Tatoeba holds many translations of one meaning under different English strings ("This
    restaurant is famous for its excellent cuisine." / "... known for its good food."), and
    Multi30k many near-identical captions: pools built from them have true translations
    that their gold calls wrong. Two English sentences with cosine >= NEAR_DUPLICATE_COSINE
    under the default encoder count as one meaning and the later is dropped, before lines
    are joined. The same pools serve every --encoder measured.
    """
    from bitextmine.encoders import load_encoder

    usem3 = load_encoder("usem3", device="cpu")
    for name, source in sources_.items():
        if wanted and name not in wanted:
            continue
        n_items, n_filler = needed(name, source), needed(name, source, True)
        per_line = sum(source.group) / 2 if source.group else 1
        rows = source.rows[:int(SUPERSET * per_line * n_items)]
        english = embed_cached(usem3, [e for _, e in rows], cache).astype(np.float32)
        rows = [rows[i] for i in without_near_duplicates(english)]
        source.items = (paragraphs(rows, 3, source.group) if source.group else rows)[:n_items]
        if source.filler_rows:
            candidates = source.filler_rows[:int(SUPERSET * per_line * n_filler)]
            filler = embed_cached(usem3, candidates, cache).astype(np.float32)
            near = (filler @ english.T).max(axis=1) >= NEAR_DUPLICATE_COSINE
            kept = [candidates[i] for i in without_near_duplicates(filler) if not near[i]]
            if source.group:  # filler lines as long as the others
                kept = [e for _, e in paragraphs([(e, e) for e in kept], 7, source.group)]
            source.filler = kept[:n_filler]
        if len(source.items) < n_items or len(source.filler) < (n_filler if source.filler_rows else 0):
            print(f"{name}: {len(source.items)} lines after removing near-duplicates, {n_items} needed: the "
                  "settings that need more are left out", flush=True)


def without_near_duplicates(english: np.ndarray) -> list[int]:
    """Rows, in order, whose cosine to every earlier kept row is below NEAR_DUPLICATE_COSINE."""
    from bitextmine.mine.knn import exact_knn_both_ways

    fwd, _ = exact_knn_both_ways(english, english, 16, device="cpu")
    kept = np.zeros(len(english), dtype=bool)
    for i in range(len(english)):
        close = fwd.ids[i][(fwd.sims[i] >= NEAR_DUPLICATE_COSINE) & (fwd.ids[i] != i)]
        kept[i] = not kept[close[close < i]].any()
    return np.flatnonzero(kept).tolist()


@dataclass
class Setting:
    source: str
    n_src: int
    n_tgt: int
    share: float  # translations / source pool size

    @property
    def label(self) -> str:
        return f"{self.source} {self.n_src // 1000}k x {self.n_tgt // 1000}k {100 * self.share:g}%"


SETTINGS = [
    # lines of 2-4 sentences, about the length of news sentences: gold is clean
    *(Setting("m30k-de-para", 5000, 5000, s) for s in SHARES),
    *(Setting("m30k-fr-para", 5000, 5000, s) for s in SHARES),
    *(Setting("mt-de-para", 6500, 6500, s) for s in SHARES),
    *(Setting("mt-fr-para", 6500, 6500, s) for s in SHARES),
    Setting("mt-de-para", 7000, 11000, 0.02),  # BUCC-shaped: unequal sides, 2 % of the smaller
    Setting("mt-fr-para", 5500, 9000, 0.02),
    # single sentences: short and generic, many near-paraphrases left in what gold calls wrong
    *(Setting("m30k-de", 8000, 8000, s) for s in SHARES),
    *(Setting("mt-de-long", 10000, 10000, s) for s in SHARES),
    *(Setting("tt-id", 5000, 5000, s) for s in SHARES),
    # Russian and Chinese: 900 sentences a side at most, or 280 lines of 2-4 sentences;
    # the English side made larger with filler, as BUCC's
    *(Setting(f"tt-{lang}", 900, 900, s) for lang in ("ru", "zh") for s in (0.05, 0.15)),
    *(Setting(f"tt-{lang}", 900, 4000, 0.15) for lang in ("ru", "zh")),
    *(Setting(f"tt-{lang}-para", 280, 1400, 0.15) for lang in ("ru", "zh")),
]


@dataclass
class Pool:
    src: list[int]  # item numbers (foreign side)
    tgt: list[int]  # item numbers (English side); negative: filler number -1-i
    gold: set[tuple[int, int]]  # (row in src, row in tgt)


def make_pool(source: Source, setting: Setting, seed: int = 0) -> Pool | None:
    """Translations planted on both sides; the rest of each side has no translation opposite.

    None when the source has too few lines for the setting."""
    n_pairs = int(round(setting.share * setting.n_src))
    rng = random.Random(seed)
    order = list(range(len(source.items)))
    rng.shuffle(order)
    pairs, rest = order[:n_pairs], order[n_pairs:]
    src_only = rest[:setting.n_src - n_pairs]
    n_tgt_only = setting.n_tgt - n_pairs
    if source.filler_rows:
        if len(source.filler) < n_tgt_only:
            return None
        tgt_only = [-1 - i for i in rng.sample(range(len(source.filler)), n_tgt_only)]
    else:
        tgt_only = rest[setting.n_src - n_pairs:setting.n_src - n_pairs + n_tgt_only]
    if len(src_only) < setting.n_src - n_pairs or len(tgt_only) < n_tgt_only:
        return None
    src, tgt = pairs + src_only, pairs + tgt_only
    rng.shuffle(src)
    rng.shuffle(tgt)
    where = {item: j for j, item in enumerate(tgt) if item >= 0}
    gold = {(i, where[item]) for i, item in enumerate(src) if item in where}
    return Pool(src, tgt, gold)


def embed_cached(encoder, texts: list[str], cache: Path) -> np.ndarray:
    """``encoder.encode(texts)`` as float16; sentences embedded before are read from ``cache``.

    Each call's vectors are kept as ``KEY.npy`` beside its sentences ``KEY.txt``; a later
    call embeds only the sentences no earlier file of the same encoder holds.
    """
    encoder_key = encoder.identity.weights_sha256
    digest = hashlib.sha256(encoder_key.encode())
    for text in texts:
        digest.update(text.encode("utf-8") + b"\n")
    path = cache / f"{digest.hexdigest()[:24]}.npy"
    if path.is_file():
        return np.load(path)
    known: dict[str, tuple[Path, int]] = {}
    for listing in sorted(cache.glob("*.txt")) if cache.is_dir() else []:
        header, *lines = listing.read_text(encoding="utf-8").split("\n")[:-1]
        if header == encoder_key:
            known.update({line: (listing.with_suffix(".npy"), i) for i, line in enumerate(lines)})
    missing = sorted({t for t in texts if t not in known})
    fresh = dict(zip(missing, encoder.encode(missing).astype(np.float16), strict=True)) if missing else {}
    opened: dict[Path, np.ndarray] = {}
    vectors = np.empty((len(texts), encoder.dim), dtype=np.float16)
    for i, text in enumerate(texts):
        if text in fresh:
            vectors[i] = fresh[text]
        else:
            npy, row = known[text]
            vectors[i] = opened.setdefault(npy, np.load(npy, mmap_mode="r"))[row]
    cache.mkdir(parents=True, exist_ok=True)
    np.save(path.with_suffix(".tmp.npy"), vectors)
    path.with_suffix(".tmp.npy").rename(path)
    path.with_suffix(".txt").write_text("".join(f"{line}\n" for line in [encoder_key, *texts]), encoding="utf-8")
    return vectors


def source_vectors(encoder, source: Source, cache: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    foreign = embed_cached(encoder, [f for f, _ in source.items], cache)
    english = embed_cached(encoder, [e for _, e in source.items], cache)
    filler = embed_cached(encoder, source.filler, cache) if source.filler else english[:0]
    return foreign, english, filler


def pool_vectors(vectors, pool: Pool) -> tuple[np.ndarray, np.ndarray]:
    foreign, english, filler = vectors
    x = foreign[pool.src]
    y = np.stack([english[i] if i >= 0 else filler[-1 - i] for i in pool.tgt])
    return x, y


def correct_flags(pairs, gold: set[tuple[int, int]]) -> np.ndarray:
    return np.array([(s, t) in gold for s, t in zip(pairs.src.tolist(), pairs.tgt.tolist(), strict=True)], dtype=bool)


def prf(correct: np.ndarray, keep: np.ndarray, n_gold: int) -> tuple[float, float, float]:
    tp = int(correct[keep].sum())
    p = tp / max(int(keep.sum()), 1)
    r = tp / max(n_gold, 1)
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def run_setting(encoder, source: Source, setting: Setting, score: str, cache: Path, seed: int) -> dict | None:
    """Mine one setting with no threshold; P/R/F1 at the default, the best and the fixed threshold."""
    from bitextmine.evaluate import best_threshold
    from bitextmine.mine import MineConfig
    from bitextmine.mine.knn import exact_knn_both_ways
    from bitextmine.mine.scoring import candidates, retrieve
    from bitextmine.mine.thresholds import choose_threshold, fixed_threshold

    pool = make_pool(source, setting, seed)
    if pool is None:
        return None
    x, y = pool_vectors(source_vectors(encoder, source, cache), pool)
    cfg = MineConfig(score=score)
    started = time.time()
    fwd, bwd = exact_knn_both_ways(x, y, cfg.k)
    every = retrieve(*candidates(fwd, bwd, score), cfg.retrieval, -np.inf)
    mine_seconds = time.time() - started
    started = time.time()
    chosen = choose_threshold(every, x, y, cfg, (encoder.identity,), fwd, bwd)
    choose_seconds = time.time() - started
    correct = correct_flags(every, pool.gold)
    fixed, _ = fixed_threshold(score, encoder.identity)
    return {"gold": len(pool.gold), "chosen": chosen, "best": best_threshold(every.score, correct, len(pool.gold)),
            "default": prf(correct, every.score >= chosen.threshold, len(pool.gold)),
            "fixed": (fixed, *prf(correct, every.score >= fixed, len(pool.gold))),
            "error": estimate_error(chosen.estimate, every.score, correct),
            "seconds": (mine_seconds, choose_seconds)}


def estimate_error(estimate, scores: np.ndarray, correct: np.ndarray) -> tuple[float, float]:
    """Mean |estimated - true| precision in points over the thresholds that keep >= 20 pairs
    at a true precision >= 50 %, and the error at the recommended (90 %) threshold."""
    if estimate is None or estimate.warning:
        return (np.nan, np.nan)
    errors = []
    for t, est in zip(estimate.thresholds, estimate.precision, strict=True):
        keep = scores >= t
        if keep.sum() >= 20 and correct[keep].mean() >= 0.5:
            errors.append(est - correct[keep].mean())
    ok = np.flatnonzero(estimate.precision >= 0.9)
    at = np.nan
    if len(ok):  # the lowest threshold from which the estimate stays >= 90 % (calibrate's recommendation)
        first = ok[-1]
        while first - 1 in ok:
            first -= 1
        keep = scores >= estimate.thresholds[first]
        at = estimate.precision[first] - correct[keep].mean()
    return (100 * float(np.mean(np.abs(errors))) if errors else np.nan, 100 * float(at))


def percent(*values: float) -> str:
    return " / ".join(f"{100 * v:.1f}" for v in values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--encoder", default="usem3")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/bitextmine-bench-cache"))
    parser.add_argument("--score", default="ratio")
    parser.add_argument("--only", default="", help="comma-separated source names")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from bitextmine.encoders import load_encoder

    encoder = load_encoder(args.encoder, device="cpu")
    all_sources = sources()
    wanted = set(filter(None, args.only.split(","))) or {s.source for s in SETTINGS}
    prepare(all_sources, args.cache, wanted)
    print(f"encoder {args.encoder}, {args.score} score, k=4, max retrieval; default = mine without --threshold\n")
    print("| pools | pair | gold | best t: P / R / F1 | default t: P / R / F1 (how) | F1 gap | "
          "est. P error: mean / at 90 % | fixed t: P / R / F1 |")
    print("|---|---|---:|---|---|---:|---:|---|")
    worst_p, worst_gap, seconds = 1.0, 0.0, np.zeros(2)
    for setting in SETTINGS:
        if setting.source not in wanted:
            continue
        source = all_sources[setting.source]
        out = run_setting(encoder, source, setting, args.score, args.cache, args.seed)
        if out is None:
            print(f"| {setting.label}: too few lines, left out |", flush=True)
            continue
        best, chosen, (p, r, f1), fixed = out["best"], out["chosen"], out["default"], out["fixed"]
        gap = 100 * (best["f1"] - f1)
        worst_p, worst_gap, seconds = min(worst_p, p), max(worst_gap, gap), seconds + out["seconds"]
        print(f"| {source.name}, {setting.n_src / 1000:g}k x {setting.n_tgt / 1000:g}k, {100 * setting.share:g} % | "
              f"{source.pair} | {out['gold']} | {best['threshold']:.3f}: "
              f"{percent(best['precision'], best['recall'], best['f1'])} | {chosen.threshold:.3f}: "
              f"{percent(p, r, f1)} ({chosen.source}) | {gap:.1f} | {out['error'][0]:.1f} / {out['error'][1]:+.1f} | "
              f"{fixed[0]:.3f}: {percent(*fixed[1:])} |", flush=True)
    print(f"\nlowest precision at the default: {100 * worst_p:.1f} %; largest F1 gap to the best: {worst_gap:.1f} "
          f"points; mining (kNN + retrieval) {seconds[0]:.0f} s, choosing the threshold {seconds[1]:.0f} s")


if __name__ == "__main__":
    main()
