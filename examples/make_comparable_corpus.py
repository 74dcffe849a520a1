"""Rebuild examples/de-en from the Tatoeba/manythings German-English pairs.

    python examples/make_comparable_corpus.py ../shared/data/train/tatoeba_manythings_deu-eng/train.eng-deu.tsv

Draws 300 translation pairs plus 200 German-only and 200 English-only sentences (from
other pairs, so they have no translation on the other side), shuffles each side on its
own with a fixed seed, and writes de.txt, en.txt and gold.tsv (1-based line numbers of
the pairs that are translations of each other).
"""

import random
import sys
from pathlib import Path

PAIRS, DE_ONLY, EN_ONLY, SEED = 300, 200, 200, 13
MIN_WORDS, MAX_WORDS = 5, 25


def main(tsv: str, out_dir: str = str(Path(__file__).parent / "de-en")) -> None:
    rows = []
    for line in open(tsv, encoding="utf-8"):
        en, de = line.rstrip("\n").split("\t")
        if MIN_WORDS <= len(en.split()) <= MAX_WORDS:
            rows.append((en, de))
    rng = random.Random(SEED)
    rng.shuffle(rows)
    picked, seen_en, seen_de = [], set(), set()
    for en, de in rows:  # every sentence appears once, on one side only
        if en in seen_en or de in seen_de:
            continue
        seen_en.add(en)
        seen_de.add(de)
        picked.append((en, de))
        if len(picked) == PAIRS + DE_ONLY + EN_ONLY:
            break
    gold, de_only, en_only = picked[:PAIRS], picked[PAIRS:PAIRS + DE_ONLY], picked[PAIRS + DE_ONLY:]
    de_side = [(de, i) for i, (_, de) in enumerate(gold)] + [(de, None) for _, de in de_only]
    en_side = [(en, i) for i, (en, _) in enumerate(gold)] + [(en, None) for en, _ in en_only]
    rng.shuffle(de_side)
    rng.shuffle(en_side)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "de.txt").write_text("".join(s + "\n" for s, _ in de_side), encoding="utf-8")
    (out / "en.txt").write_text("".join(s + "\n" for s, _ in en_side), encoding="utf-8")
    en_line = {pair: n for n, (_, pair) in enumerate(en_side, 1) if pair is not None}
    gold_lines = sorted((n, en_line[pair]) for n, (_, pair) in enumerate(de_side, 1) if pair is not None)
    (out / "gold.tsv").write_text("".join(f"{d}\t{e}\n" for d, e in gold_lines), encoding="utf-8")


if __name__ == "__main__":
    main(*sys.argv[1:])
