"""Write the replay pairs `bitextmine adapt` ships for the default encoder's languages.

    python scripts/bundle_replay.py ../shared/data/train

For each language of the default encoder that has Tatoeba training pairs (manythings.org
exports, CC BY 2.0 FR, the Tatoeba test sentences removed), the seeded sample that
``adapt --replay FILE`` draws from the file (``adapt.sides.replay_pairs``: the same pairs, in
the same order), gzipped without a timestamp into ``bitextmine/adapt/replay/train.eng-XXX.tsv.gz``:
``adapt`` run without ``--replay`` on these languages then trains on exactly what was measured
with the file (benchmarks/RESULTS.md, "Adapt, every layer").
"""

from __future__ import annotations

import argparse
import gzip
from pathlib import Path

from bitextmine.adapt.config import AdaptConfig
from bitextmine.adapt.sides import replay_pairs

# the default encoder's languages with training pairs in the data folder
FILES = {
    "deu": "tatoeba_manythings_deu-eng/train.eng-deu.tsv",
    "fra": "tatoeba_manythings_fra-eng/train.eng-fra.tsv",
    "ara": "tatoeba_known/train.eng-ara.tsv",
    "cmn": "tatoeba_known/train.eng-cmn.tsv",
    "jpn": "tatoeba_known/train.eng-jpn.tsv",
    "nld": "tatoeba_known/train.eng-nld.tsv",
    "pol": "tatoeba_known/train.eng-pol.tsv",
}
OUT = Path(__file__).resolve().parent.parent / "bitextmine" / "adapt" / "replay"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path, help="the training data folder (../shared/data/train)")
    args = parser.parse_args()
    cfg = AdaptConfig(trainable="network")  # its replay_pairs and seed, as adapt draws them
    OUT.mkdir(parents=True, exist_ok=True)
    for code, name in FILES.items():
        english, other = replay_pairs(str(args.data / name), cfg, 0)  # the first (only) --replay file
        target = OUT / f"train.eng-{code}.tsv.gz"
        with open(target, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as out:
            out.write("".join(f"{e}\t{o}\n" for e, o in zip(english, other, strict=True)).encode("utf-8"))
        print(f"{target}: {len(english)} pairs")


if __name__ == "__main__":
    main()
