"""`bitextmine prepare` end to end on JSONL documents with English and repeated documents mixed in.

    python -m benchmarks.prepare_quality [--n 2000] [--english 0.1] [--repeated 0.05] [--data ../shared/data]
        [--min-lang-prob P] [--min-chars N]

Per language, documents of 2-10 reference lines (tests/support/prepare_sets.py; Chinese
joined without spaces) become a JSONL file with ``--english`` as many English news
documents and ``--repeated`` of the documents repeated; ``prepare`` runs on it with the
default settings. Measured on its output, through the provenance sidecars:

- recovered: the share of reference lines (of the documents' first occurrences) that come
  out as a whole number of consecutive kept sentences of their document; lines that
  repeat an earlier line are left out of the count (dedup drops them, as it should), and
  so is nothing else: a line lost to a rule (too short, taken for another language) counts
  as not recovered;
- segmentation alone: the same measure for the segmenter and for sentencex alone on the
  same documents, before any rule;
- English: the share of kept sentences that come from the English documents;
- written twice: output lines equal to an earlier output line (must be 0).

Then language ID alone, line by line, at several thresholds: the share of the language's own
reference lines it drops and of English news lines it keeps.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from pathlib import Path

from tests.support.prepare_sets import DEFAULT_DATA, Recovery, documents, recovery, sample, sources

LANGS = ("deu", "rus", "zho", "hin", "ces", "fra")


def make_documents(lang: str, n: int, english: float, repeated: float, data: Path) -> list[dict]:
    """The JSONL records: the language's documents, English ones and repeats, shuffled."""
    rows = []
    for source, lines in sources(lang, data).items():
        for i, doc in enumerate(documents(sample(lines, n))):
            rows.append({"id": f"{lang}-{source}-{i}", "url": f"https://example.org/{lang}/{source}/{i}",
                         "lines": doc})
    english_lines = sample(sources("eng", data)["news"], 10**9, seed=3)
    english_docs = documents(english_lines, seed=4)[:max(1, int(english * len(rows)))]
    rows += [{"id": f"eng-{i}", "url": f"https://example.org/en/{i}", "lines": doc}
             for i, doc in enumerate(english_docs)]
    rng = random.Random(5)
    rows += rng.sample(rows, int(repeated * len(rows)))
    rng.shuffle(rows)
    separator = "" if lang == "zho" else " "
    return [{"id": r["id"], "url": r["url"], "text": separator.join(r["lines"]), "lines": r["lines"]} for r in rows]


def kept_by_document(directory: Path) -> tuple[dict[str, list[tuple[int, str]]], list[str]]:
    """document id -> [(sentence number, sentence)] from the shards and sidecars; every output line."""
    from bitextmine.io.provenance import parse_row
    from bitextmine.prepare import load_manifest

    manifest = load_manifest(directory)
    by_document: dict[str, list[tuple[int, str]]] = {}
    lines = []
    for shard in manifest.shards:
        texts = (directory / shard["file"]).read_text(encoding="utf-8").split("\n")[:-1]
        rows = (directory / shard["provenance"]).read_text(encoding="utf-8").split("\n")[:-1]
        for number, (text, row) in enumerate(zip(texts, rows, strict=True), 1):
            origin = parse_row(row, shard["provenance"], number)
            by_document.setdefault(origin.document, []).append((origin.sentence, text))
            lines.append(text)
    return by_document, lines


def measure(lang: str, n: int, english: float, repeated: float, data: Path, workers: int | None,
            settings: dict) -> dict:
    from benchmarks.prepare_segmentation import ISO1, sentencex_alone
    from bitextmine.prepare import PrepareConfig, prepare_inputs
    from bitextmine.prepare.rules import normalise_document, tidy_sentence
    from bitextmine.prepare.segment import Segmenter

    rows = make_documents(lang, n, english, repeated, data)
    separator = "" if lang == "zho" else " "
    with tempfile.TemporaryDirectory() as tmp:
        inputs = Path(tmp) / "docs.jsonl"
        inputs.write_text("".join(json.dumps({k: r[k] for k in ("id", "url", "text")}, ensure_ascii=False) + "\n"
                                  for r in rows), encoding="utf-8")
        report = prepare_inputs([str(inputs)], Path(tmp) / "out", PrepareConfig(lang=lang, workers=workers,
                                                                                   **settings))
        by_document, lines = kept_by_document(Path(tmp) / "out")
    seen_docs, seen_lines = set(), set()
    full, alone, library = Recovery(), Recovery(), Recovery()
    segmenter, sentencex = Segmenter(ISO1[lang]).sentences, sentencex_alone(lang)
    repeats = 0
    for row in rows:
        if row["id"].startswith("eng-") or row["id"] in seen_docs:
            continue
        seen_docs.add(row["id"])
        doc = [tidy_sentence(normalise_document(line)) for line in row["lines"]]
        kept = [s for _, s in sorted(by_document.get(row["id"], []))]
        result = _recovered_lines(doc, kept, separator)
        for line, ok in zip(doc, result, strict=True):
            if line in seen_lines:
                repeats += 1
            else:
                full.lines += 1
                full.recovered += ok
            seen_lines.add(line)
        alone.add(recovery(doc, segmenter(separator.join(doc)), separator))
        library.add(recovery(doc, sentencex(separator.join(doc)), separator))
    english_kept = sum(len(v) for k, v in by_document.items() if k.startswith("eng-"))
    return {"lang": lang, "documents": len(rows), "lines": full.lines, "recovered": full.share,
            "repeated_lines": repeats, "segmenter": alone.share, "sentencex": library.share,
            "kept": len(lines), "english": english_kept / max(1, len(lines)),
            "written_twice": len(lines) - len(set(lines)), "rejected": report["rejected"]}


def _recovered_lines(doc: list[str], kept: list[str], separator: str) -> list[bool]:
    """Per line of ``doc``: whether it is exactly a run of consecutive kept sentences."""
    text = separator.join(doc)
    starts, ends, covered, position = set(), set(), set(), 0
    for sentence in kept:
        found = text.find(sentence, position)
        if found < 0:
            raise ValueError(f"kept sentence not in its document: {sentence[:60]!r}")
        starts.add(found)
        ends.add(found + len(sentence))
        covered.update(range(found, found + len(sentence)))
        position = found + len(sentence)
    out, start = [], 0
    for line in doc:
        end = start + len(line)
        whole = all(i in covered or text[i].isspace() for i in range(start, end))
        out.append(start in starts and end in ends and whole)
        start = end + len(separator)
    return out


THRESHOLDS = (0.01, 0.02, 0.05, 0.1, 0.5)


def language_id_table(langs, n: int, data: Path) -> None:
    """Per language and threshold: its own reference lines dropped, English news lines kept
    (the language ID of `prepare` alone, line by line)."""
    from bitextmine.prepare.rules import LanguageCheck

    english = sample(sources("eng", data)["news"], 3000)
    print("\nlanguage ID alone, per threshold (min_lang_prob): own lines dropped % / English news lines kept %\n")
    print("| language | lines | " + " | ".join(f"{t:g}" for t in THRESHOLDS) + " |")
    print("|---|---:|" + "---:|" * len(THRESHOLDS))
    for lang in langs:
        check = LanguageCheck(lang, 0.0)
        own = check.probabilities([line for lines in sources(lang, data).values() for line in sample(lines, n)])
        other = check.probabilities(english)
        cells = [f"{100 * (own < t).mean():.1f} / {100 * (other >= t).mean():.2f}" for t in THRESHOLDS]
        print(f"| {lang} | {len(own)} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=2000, help="reference lines per source (a seeded sample)")
    parser.add_argument("--english", type=float, default=0.1, help="English documents, per document of the language")
    parser.add_argument("--repeated", type=float, default=0.05, help="documents repeated, per document")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--langs", nargs="*", default=list(LANGS))
    parser.add_argument("--min-lang-prob", type=float, help="instead of the default")
    parser.add_argument("--min-chars", type=int, help="instead of the default")
    args = parser.parse_args()
    given = (("min_lang_prob", args.min_lang_prob), ("min_chars", args.min_chars))
    settings = {k: v for k, v in given if v is not None}
    print("| language | documents | lines | recovered % | segmenter alone % | sentencex alone % | kept | "
          "English % of kept | written twice | dropped by rule |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    results = []
    for lang in args.langs:
        r = measure(lang, args.n, args.english, args.repeated, args.data, args.workers, settings)
        results.append(r)
        dropped = ", ".join(f"{k} {v}" for k, v in r["rejected"].items() if v)
        print(f"| {lang} | {r['documents']} | {r['lines']} | {100 * r['recovered']:.1f} | {100 * r['segmenter']:.1f} | "
              f"{100 * r['sentencex']:.1f} | {r['kept']} | {100 * r['english']:.2f} | {r['written_twice']} | "
              f"{dropped} |", flush=True)
    for key in ("recovered", "segmenter", "sentencex"):
        values = [r[key] for r in results]
        print(f"\n{key}: mean {100 * sum(values) / len(values):.1f} %, lowest {100 * min(values):.1f} %", end="")
    print()
    language_id_table(args.langs, args.n, args.data)


if __name__ == "__main__":
    main()
