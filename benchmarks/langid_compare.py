"""Language identifiers compared on the Tatoeba test files: accuracy and sentences/s.

    python -m benchmarks.langid_compare [--data ../shared/data/tatoeba]

Candidates (all ship their models inside the package; nothing is downloaded):
lingua-language-detector (all languages, high and low accuracy mode), pycld2, py3langid.
Each sentence's detected language is compared with the file's language (ISO 639-3). The
first row is py3langid as the filter runs it (bitextmine.filter.langid).
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
    """The detectors that are installed (lingua and pycld2 are not dependencies)."""
    import py3langid

    found = {}
    try:
        from lingua import LanguageDetectorBuilder

        def lingua_code(detector):
            def detect(text):
                lang = detector.detect_language_of(text)
                return lang.iso_code_639_1.name.lower() if lang is not None else None
            return detect

        found["lingua (high accuracy)"] = lingua_code(LanguageDetectorBuilder.from_all_languages().build())
        found["lingua (low accuracy)"] = lingua_code(
            LanguageDetectorBuilder.from_all_languages().with_low_accuracy_mode().build())
    except ImportError:
        print("(lingua-language-detector not installed: skipped)")
    try:
        import pycld2

        def cld2(text):
            try:
                code = pycld2.detect(text)[2][0][1]
            except pycld2.error:
                return None
            return {"zh-Hant": "zh", "iw": "he"}.get(code, code)

        found["pycld2"] = cld2
    except ImportError:
        print("(pycld2 not installed: skipped)")
    found["py3langid"] = lambda text: py3langid.classify(text)[0]
    return found


def filter_detector(languages):
    """The filter's own use of py3langid: all texts at once, among its candidate languages
    (bitextmine.defaults.FILTER_LID_CANDIDATES and ``languages``), by language key
    (Indonesian counts as Malay, its macrolanguage). A function: texts -> detected keys."""
    from bitextmine import defaults
    from bitextmine.filter.langid import LanguageIdentifier
    from bitextmine.languages import language_key

    identifier = LanguageIdentifier(set(defaults.FILTER_LID_CANDIDATES) | {language_key(c) for c in languages})

    def detect_all(texts):
        scores, _ = identifier.scores(texts)
        return [identifier.keys[i] for i in scores.argmax(axis=1)]

    return detect_all


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
    from bitextmine.languages import language_key

    detect_all = filter_detector({code for _, code in samples})  # loads the model: not timed
    start = time.perf_counter()
    found = detect_all([text for text, _ in samples])
    seconds = time.perf_counter() - start
    report("py3langid as the filter uses it (batched, among its candidates)", found,
           [language_key(code) for _, code in samples], seconds)
    for name, detect in detectors().items():
        detect(samples[0][0])  # load models before timing
        start = time.perf_counter()
        found = [detect(text) for text, _ in samples]
        seconds = time.perf_counter() - start
        report(name, found, [want for _, want in samples], seconds)


def report(name: str, found: list, wanted: list, seconds: float) -> None:
    per_lang: dict[str, list[bool]] = {}
    for want, got in zip(wanted, found, strict=True):
        per_lang.setdefault(want, []).append(got == want)
    accuracy = sum(sum(v) for v in per_lang.values()) / len(found)
    worst = sorted(per_lang, key=lambda k: sum(per_lang[k]) / len(per_lang[k]))[:3]
    worst_text = ", ".join(f"{k} {100 * sum(per_lang[k]) / len(per_lang[k]):.0f}%" for k in worst)
    print(f"| {name} | {100 * accuracy:.1f}% | {len(found) / seconds:,.0f} | {worst_text} |", flush=True)


if __name__ == "__main__":
    main()
