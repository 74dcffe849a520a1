"""Language identifiers compared on the Tatoeba test files: accuracy and sentences/s.

    python benchmarks/langid_compare.py [--data ../shared/data/tatoeba]

Candidates (all ship their models inside the package; nothing is downloaded):
lingua-language-detector (all languages, high and low accuracy mode), pycld2, py3langid.
Each sentence's detected language is compared with the file's language (ISO 639-3).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "tatoeba"
# Tatoeba languages with an ISO 639-1 code, as the detectors report them
LANGS = {"deu": "de", "fra": "fr", "spa": "es", "ita": "it", "por": "pt", "nld": "nl", "rus": "ru", "pol": "pl",
         "tur": "tr", "ara": "ar", "cmn": "zh", "jpn": "ja", "kor": "ko", "tha": "th", "ces": "cs", "ukr": "uk",
         "swe": "sv", "fin": "fi", "hun": "hu", "ell": "el", "heb": "he", "hin": "hi", "vie": "vi", "ind": "id"}


def detectors():
    import py3langid
    import pycld2
    from lingua import LanguageDetectorBuilder

    high = LanguageDetectorBuilder.from_all_languages().build()
    low = LanguageDetectorBuilder.from_all_languages().with_low_accuracy_mode().build()

    def lingua_code(detector):
        def detect(text):
            lang = detector.detect_language_of(text)
            return lang.iso_code_639_1.name.lower() if lang is not None else None
        return detect

    def cld2(text):
        try:
            code = pycld2.detect(text)[2][0][1]
        except pycld2.error:
            return None
        return {"zh-Hant": "zh", "iw": "he"}.get(code, code)

    return {
        "lingua (high accuracy)": lingua_code(high),
        "lingua (low accuracy)": lingua_code(low),
        "pycld2": cld2,
        "py3langid": lambda text: py3langid.classify(text)[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--per-lang", type=int, default=500)
    args = parser.parse_args()
    samples = []
    for iso3, iso1 in LANGS.items():
        path = args.data / f"tatoeba.{iso3}-eng.{iso3}"
        if path.exists():
            samples += [(line, iso1) for line in path.read_text(encoding="utf-8").split("\n")[: args.per_lang]
                        if line.strip()]
    english = (args.data / "tatoeba.deu-eng.eng").read_text(encoding="utf-8").split("\n")[: args.per_lang]
    samples += [(line, "en") for line in english if line.strip()]
    print(f"{len(samples)} Tatoeba sentences, {len(LANGS) + 1} languages\n")
    print("| detector | accuracy | sentences/s | worst languages |")
    print("|---|---:|---:|---|")
    for name, detect in detectors().items():
        detect(samples[0][0])  # load models before timing
        start = time.perf_counter()
        found = [detect(text) for text, _ in samples]
        seconds = time.perf_counter() - start
        per_lang: dict[str, list[bool]] = {}
        for (_, want), got in zip(samples, found, strict=True):
            per_lang.setdefault(want, []).append(got == want)
        accuracy = sum(sum(v) for v in per_lang.values()) / len(samples)
        worst = sorted(per_lang, key=lambda k: sum(per_lang[k]) / len(per_lang[k]))[:3]
        worst_text = ", ".join(f"{k} {100 * sum(per_lang[k]) / len(per_lang[k]):.0f}%" for k in worst)
        print(f"| {name} | {100 * accuracy:.1f}% | {len(samples) / seconds:,.0f} | {worst_text} |", flush=True)


if __name__ == "__main__":
    main()
