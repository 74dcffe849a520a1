"""Tatoeba figures of an encoder taught new languages: the 28 languages of the add-language
data, the 14 languages the default encoder knows, and the English cosine to the default.

    python -m benchmarks.add_languages ckpt:DIR          # a student (or a bare checkpoint DIR)
    python -m benchmarks.add_languages usem3             # the default encoder itself
    python -m benchmarks.add_languages DIR --json out.json --device cuda

Per new language: its training pairs in ../shared/data/train, the share of <unk> pieces
in its Tatoeba sentences under the encoder's vocabulary, and P@1 (mean of both
directions) measured two ways: the encoder on both sides ("both"), and the language
through the encoder against English through the default encoder ("vs usem3": what
mining a new language against English embedded by the default encoder sees). The
anchors are the published figures quoted with the data (xxx->eng accuracy, MTEB).
Skips (exit 0) when the shared data is absent.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

# the shared data beside the checkout, or where BITEXTMINE_SHARED_DATA points
SHARED = Path(os.environ.get("BITEXTMINE_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
TATOEBA = SHARED / "tatoeba"
TRAIN = SHARED / "train"
MORE = ["ber", "bul", "cor", "dan", "ell", "epo", "fin", "heb", "hin", "hun", "ina", "ind", "kab", "lat", "lfn",
        "lit", "mar", "mkd", "nob", "pes", "ron", "srp", "swe", "uig", "ukr", "vie"]
NEW = sorted(["ces", "isl", *MORE])
KNOWN = ["ara", "cmn", "deu", "fra", "ita", "jpn", "kor", "nld", "pol", "por", "rus", "spa", "tha", "tur"]
# Published anchors quoted with the data (per language only where quoted; means over the 28 / 14)
ANCHORS = {
    "LaBSE": {"mean_new": 85.8, "mean_known": 96.2, "ber": 10.7, "kab": 6.1, "cor": 13.4, "lfn": 72.7},
    "LASER2": {"mean_new": 84.9, "ber": 82.0, "kab": 70.9},
    "SONAR": {"mean_new": 88.1},
    "multilingual-e5-large-instruct": {"mean_new": 89.6},
}
UNK_ID = 0  # <unk> of the default encoder's SentencePiece model, and of students built on it


def training_files(lang: str) -> list[Path]:
    if lang == "ces":
        return [TRAIN / f"{d}_ces-eng" / "train.eng-ces.tsv" for d in ("tatoeba_manythings", "tatoeba_challenge_test")]
    if lang == "isl":
        return [TRAIN / "tatoeba_manythings_isl-eng" / "train.eng-isl.tsv"]
    return [TRAIN / "tatoeba_more" / f"train.eng-{lang}.tsv"]


def training_pairs(lang: str) -> int | None:
    files = training_files(lang)
    if not all(f.is_file() for f in files):
        return None
    return sum(sum(1 for line in f.open(encoding="utf-8") if line.strip()) for f in files)


def read_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def p_at_1(x: np.ndarray, y: np.ndarray) -> float:
    from bitextmine.evaluate.tatoeba import evaluate_aligned

    return 100 * evaluate_aligned(x, y, "t")["t_p@1_mean"]  # in %, as the tables print it


def measure(spec: str, device: str) -> dict:
    """Per language: P@1 both ways (encoder on both sides, and against usem3's English)
    and the <unk> share; the English cosine to usem3. A checkpoint that routes the
    teacher's languages to the teacher (``--route-known``) is measured as ``embed --lang``
    uses it, and its student network alone on both sides too ("unrouted")."""
    from bitextmine.encoders import load_encoder

    if spec != "usem3" and ":" not in spec:
        spec = f"ckpt:{spec}"
    encoder = load_encoder(spec, device=device)
    default = encoder if spec == "usem3" else load_encoder("usem3", device=device)
    routes = encoder.for_language("eng") is not encoder
    rows, english, english_unrouted = {}, {}, {}
    for lang in NEW + KNOWN:
        foreign = read_lines(TATOEBA / f"tatoeba.{lang}-eng.{lang}")
        eng = read_lines(TATOEBA / f"tatoeba.{lang}-eng.eng")
        x, y = encoder.for_language(lang).encode(foreign), encoder.for_language("eng").encode(eng)
        y_default = default.encode(eng)
        ids = encoder.tokenize(foreign)
        rows[lang] = {"both": p_at_1(x, y), "vs_usem3": p_at_1(x, y_default),
                      "unk_pieces_%": 100 * sum(i.count(UNK_ID) for i in ids) / max(1, sum(map(len, ids)))}
        english.update({s: float(a @ b) for s, a, b in zip(eng, y, y_default, strict=True)})
        if routes:  # the student network on both sides, languages not routed
            x_student, y_student = encoder.encode(foreign), encoder.encode(eng)
            rows[lang]["unrouted"] = p_at_1(x_student, y_student)
            english_unrouted.update({s: float(a @ b) for s, a, b in zip(eng, y_student, y_default, strict=True)})
        print(f"{lang}: {rows[lang]['both']:.2f} / {rows[lang]['vs_usem3']:.2f}", file=sys.stderr, flush=True)
    result = {"encoder": spec, "routes_known": routes, "languages": rows,
              "english_cosine": float(np.mean(list(english.values()))), "english_sentences": len(english)}
    if routes:
        result["english_cosine_unrouted"] = float(np.mean(list(english_unrouted.values())))
    return result


def print_tables(result: dict) -> None:
    rows = result["languages"]
    mean = lambda langs, key: float(np.mean([rows[x][key] for x in langs]))  # noqa: E731
    anchor = lambda name, lang: f"{ANCHORS[name][lang]:.1f}" if lang in ANCHORS[name] else "–"  # noqa: E731
    print(f"\n{result['encoder']}: Tatoeba P@1 (mean of both directions)\n")
    print("| language | training pairs | <unk> pieces % | both sides | vs usem3 English | LaBSE | LASER2 |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for lang in NEW:
        r, pairs = rows[lang], training_pairs(lang)
        print(f"| {lang} | {'–' if pairs is None else f'{pairs:,}'} | {r['unk_pieces_%']:.2f} | {r['both']:.2f} | "
              f"{r['vs_usem3']:.2f} | {anchor('LaBSE', lang)} | {anchor('LASER2', lang)} |")
    print(f"| **mean of 28** | | | **{mean(NEW, 'both'):.2f}** | **{mean(NEW, 'vs_usem3'):.2f}** | "
          f"{ANCHORS['LaBSE']['mean_new']} | {ANCHORS['LASER2']['mean_new']} |")
    big = [x for x in NEW if (training_pairs(x) or 0) >= 5000]
    if big:
        worst = min(big, key=lambda x: rows[x]["both"])
        print(f"\nLanguages with >= 5k training pairs: {len(big)}, lowest {worst} {rows[worst]['both']:.2f}")
    routes = result.get("routes_known", False)
    print("\n| known language | both sides | vs usem3 English |" + (" student unrouted |\n|---|---:|---:|---:|"
                                                                 if routes else "\n|---|---:|---:|"))
    for lang in KNOWN:
        extra = f" {rows[lang]['unrouted']:.2f} |" if routes else ""
        print(f"| {lang} | {rows[lang]['both']:.2f} | {rows[lang]['vs_usem3']:.2f} |{extra}")
    extra = f" **{mean(KNOWN, 'unrouted'):.2f}** |" if routes else ""
    print(f"| **mean of 14** | **{mean(KNOWN, 'both'):.2f}** | **{mean(KNOWN, 'vs_usem3'):.2f}** |{extra}")
    if routes:
        print(f"\nRouted: English and the 14 known languages are embedded by usem3 (embed --lang); the student "
              f"network alone: mean of 28 {mean(NEW, 'unrouted'):.2f}, of 14 {mean(KNOWN, 'unrouted'):.2f}, "
              f"English cosine to usem3 {result['english_cosine_unrouted']:.4f}")
    print(f"\nEnglish cosine to usem3 ({result['english_sentences']:,} Tatoeba English sentences): "
          f"{result['english_cosine']:.4f}")
    others = ", ".join(f"{name} {a['mean_new']}" for name, a in ANCHORS.items())
    print(f"Anchors, mean of the 28: {others}; LaBSE on the 14: {ANCHORS['LaBSE']['mean_known']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("encoder", help="usem3, ckpt:DIR or a checkpoint DIR")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    missing = [x for x in NEW + KNOWN if not (TATOEBA / f"tatoeba.{x}-eng.{x}").is_file()]
    if missing:
        print(f"skipped: Tatoeba test files not found under {TATOEBA} ({', '.join(missing[:3])}...)")
        return
    result = measure(args.encoder, args.device)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1), encoding="utf-8")
    print_tables(result)


if __name__ == "__main__":
    main()
