"""Sentence segmenters on our languages: which one `prepare` uses, and what its layer adds.

    python -m benchmarks.prepare_segmentation [--n 3000] [--data ../shared/data] [--errors FILE]

Documents are runs of reference lines (tests/support/prepare_sets.py); a line is recovered
when it comes out as a whole number of output sentences. Each segmenter is given the
language's ISO 639-1 code; where it does not know the language it is marked n/a (pysbd
has no Czech, sentence-splitter no Chinese or Hindi). ``extra cuts`` counts output
boundaries inside a reference line, per 100 lines: a segmenter that cut everywhere would
recover every line, so recovery alone does not rank them. ``--errors FILE`` writes the
lines the final segmenter does not recover, with the line after them.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

from tests.support.prepare_sets import DEFAULT_DATA, LANGS, SEPARATORS, Recovery, documents, recovery, sample, sources

ISO1 = {"deu": "de", "rus": "ru", "zho": "zh", "hin": "hi", "ces": "cs", "fra": "fr", "eng": "en"}


def sentencex_alone(lang: str) -> Callable[[str], list[str]]:
    import sentencex

    code = ISO1[lang]
    return lambda text: list(sentencex.segment(code, text))


def pysbd_splitter(lang: str) -> Callable[[str], list[str]] | None:
    import pysbd

    try:
        segmenter = pysbd.Segmenter(language=ISO1[lang], clean=False)
    except ValueError:
        return None
    return segmenter.segment


def sentence_splitter(lang: str) -> Callable[[str], list[str]] | None:
    from sentence_splitter import SentenceSplitter, SentenceSplitterException

    try:
        splitter = SentenceSplitter(language=ISO1[lang])
    except SentenceSplitterException:
        return None
    return splitter.split


def blingfire_splitter(lang: str) -> Callable[[str], list[str]]:
    import blingfire

    return lambda text: blingfire.text_to_sentences(text).split("\n")


def bitextmine_segmenter(lang: str) -> Callable[[str], list[str]]:
    from bitextmine.prepare.segment import Segmenter

    return Segmenter(ISO1[lang]).sentences


SEGMENTERS = {"sentencex": sentencex_alone, "pysbd": pysbd_splitter, "sentence-splitter": sentence_splitter,
              "blingfire": blingfire_splitter, "bitextmine (sentencex + layer)": bitextmine_segmenter}


def measure(split: Callable[[str], list[str]], docs: list[list[str]], separator: str,
            errors: list | None = None) -> tuple[Recovery, float]:
    total = Recovery()
    started = time.perf_counter()
    outputs = [split(separator.join(doc)) for doc in docs]
    seconds = time.perf_counter() - started
    for doc, sentences in zip(docs, outputs, strict=True):
        try:
            result = recovery(doc, sentences, separator)
        except ValueError:  # the segmenter rewrote the text: count the document as lost
            result = Recovery(lines=len(doc))
        total.add(result)
        if errors is not None and result.recovered < result.lines:
            errors.append((doc, sentences))
    return total, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=3000, help="reference lines per source (a seeded sample)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--errors", type=Path, help="write the documents the final segmenter gets wrong")
    parser.add_argument("--only", nargs="*", help="segmenters to run (default: all)")
    args = parser.parse_args()
    names = args.only or list(SEGMENTERS)
    per_lang: dict[str, dict[str, Recovery]] = {name: {} for name in names}
    errors: list = []
    print("| language | source | separator | lines | " + " | ".join(names) + " |")
    print("|---|---|---|---:|" + "---:|" * len(names))
    for lang in LANGS:
        found = sources(lang, args.data)
        if not found:
            continue
        splitters = {name: SEGMENTERS[name](lang) for name in names}
        for source, lines in found.items():
            docs = documents(sample(lines, args.n))
            for separator in SEPARATORS.get(lang, (" ",)):
                cells = []
                for name, split in splitters.items():
                    if split is None:
                        cells.append("n/a")
                        continue
                    collect = errors if name == names[-1] else None
                    result, seconds = measure(split, docs, separator, collect)
                    per_lang[name].setdefault(lang, Recovery()).add(result)
                    cuts = 100 * result.extra_cuts / result.lines
                    cells.append(f"{100 * result.share:.1f} ({cuts:.1f}; {result.pieces / seconds / 1000:.0f}k/s)")
                lines = sum(len(d) for d in docs)
                print(f"| {lang} | {source} | {separator!r} | {lines} | " + " | ".join(cells) + " |")
    print("\nper language, all sources: recovered % (extra cuts per 100 lines)\n")
    print("| segmenter | " + " | ".join(LANGS) + " | mean | lowest |")
    print("|---|" + "---:|" * (len(LANGS) + 2))
    for name in names:
        shares = {lang: r.share for lang, r in per_lang[name].items()}
        cells = [f"{100 * shares[lang]:.1f} ({100 * per_lang[name][lang].extra_cuts / per_lang[name][lang].lines:.1f})"
                 if lang in shares else "n/a" for lang in LANGS]
        known = list(shares.values())
        mean = f"{100 * sum(known) / len(known):.1f}" if len(known) == len(LANGS) else "n/a"
        lowest = f"{100 * min(known):.1f}" if len(known) == len(LANGS) else "n/a"
        print(f"| {name} | " + " | ".join(cells) + f" | {mean} | {lowest} |")
    if args.errors:
        with args.errors.open("w", encoding="utf-8") as out:
            for doc, sentences in errors:
                out.write("DOC " + " ‖ ".join(doc) + "\nOUT " + " ‖ ".join(sentences) + "\n\n")


if __name__ == "__main__":
    main()
