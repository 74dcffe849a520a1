"""Documents from input files: plain text, JSONL, Parquet, WARC/WET.

Every reader yields ``Document``s in the order of the input and never holds more than a
record (a Parquet batch) in memory. Bad input (a malformed JSONL line, invalid UTF-8, a
Parquet file without the column, a truncated WARC record, a damaged archive) is an error
naming the file and the line (row, record), or with ``errors="skip"`` it is counted in
``ReadCounts`` and left out. Compression (.gz, .zst, .xz) follows the file name.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from bitextmine.errors import BitextmineError
from bitextmine.io.text import binary_lines
from bitextmine.prepare.documents import Document, ReadCounts, ReadOptions
from bitextmine.prepare.parquet import parquet_documents
from bitextmine.prepare.warc import warc_documents

_FORMAT_SUFFIXES = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".parquet": "parquet",
                    ".warc": "warc", ".wet": "warc", ".arc": "warc"}


def input_format(path: str, chosen: str = "auto") -> str:
    """The format of an input: as chosen, or by its name (compression suffixes aside)."""
    if chosen != "auto":
        return chosen
    name = path.lower()
    for suffix in (".gz", ".zst", ".xz"):
        name = name.removesuffix(suffix)
    return next((fmt for suffix, fmt in _FORMAT_SUFFIXES.items() if name.endswith(suffix)), "text")


def read_documents(path: str, options: ReadOptions, counts: ReadCounts) -> Iterator[Document]:
    """The documents of one input, counted in ``counts``."""
    fmt = input_format(path, options.format)
    reader = {"text": _text_documents, "jsonl": _jsonl_documents, "parquet": _parquet_documents,
              "warc": _warc_documents}[fmt]
    for document in reader(path, options, counts):
        counts.documents += 1
        yield document


def _bad(error: BitextmineError, options: ReadOptions, counts: ReadCounts) -> None:
    """Raise ``error``, or count it (errors=skip)."""
    if options.errors != "skip":
        raise error
    counts.bad += 1
    if len(counts.bad_examples) < 5:
        counts.bad_examples.append(str(error))


def _decoded(raw: bytes, path: str, number: int) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BitextmineError(f"invalid UTF-8 (bytes {raw[e.start:e.start + 4]!r}); --errors skip leaves such "
                              "documents out", path=path, line=number) from None
    if "\x00" in text:
        raise BitextmineError("NUL byte in text (a binary file?)", path=path, line=number)
    return text


def _lines(path: str, options: ReadOptions, counts: ReadCounts) -> Iterator[tuple[int, bytes]]:
    """The lines of a file; a damaged archive ends them (with errors=skip: what came before
    it is kept, the damage counted as bad input)."""
    lines = binary_lines(path)
    while True:
        try:
            line = next(lines)
        except StopIteration:
            return
        except BitextmineError as e:
            _bad(e, options, counts)
            return
        yield line


def _text_documents(path: str, options: ReadOptions, counts: ReadCounts) -> Iterator[Document]:
    """One document per line, or per paragraph (lines between blank lines, joined by spaces:
    plain text wraps its lines anywhere)."""
    paragraph: list[str] = []
    start, damaged = 0, False
    for number, raw in _lines(path, options, counts):
        try:
            line = _decoded(raw, path, number).rstrip("\r\n")
        except BitextmineError as e:
            _bad(e, options, counts)
            line, damaged = "", options.text_documents == "paragraph"
            if not damaged:
                continue
        if options.text_documents == "line":
            if line.strip():
                yield Document(line, str(number), "", number)
            continue
        if line.strip():
            if not paragraph:
                start = number
            paragraph.append(line.strip())
        elif paragraph or damaged:
            if not damaged:
                yield Document(" ".join(paragraph), str(start), "", start)
            paragraph, damaged = [], False
    if paragraph and not damaged:
        yield Document(" ".join(paragraph), str(start), "", start)


def _jsonl_documents(path: str, options: ReadOptions, counts: ReadCounts) -> Iterator[Document]:
    for number, raw in _lines(path, options, counts):
        if not raw.strip():
            continue
        try:
            document = _json_document(raw, path, number, options)
        except BitextmineError as e:
            _bad(e, options, counts)
            continue
        if document is not None:
            yield document


def _json_document(raw: bytes, path: str, number: int, options: ReadOptions) -> Document | None:
    line = _decoded(raw, path, number)
    try:
        record = json.loads(line)
    except json.JSONDecodeError as e:
        raise BitextmineError(f"not valid JSON: {e.msg} (column {e.colno})", path=path, line=number) from None
    if not isinstance(record, dict):
        raise BitextmineError(f"expected a JSON object, not {type(record).__name__}", path=path, line=number)
    if options.field not in record:
        known = ", ".join(sorted(map(str, record))[:8]) or "none"
        raise BitextmineError(f"no field {options.field!r} (fields: {known}); choose it with --field", path=path,
                              line=number)
    text = record[options.field]
    if text is None:
        return None
    if not isinstance(text, str):
        raise BitextmineError(f"field {options.field!r} is a {type(text).__name__}, not a string", path=path,
                              line=number)
    return Document(text, _value(record, options.id_field) or str(number), _value(record, options.url_field),
                    number)


def _value(record: dict, name: str | None) -> str:
    value = record.get(name) if name else None
    return "" if value is None else str(value)


def _parquet_documents(path: str, options: ReadOptions, counts: ReadCounts) -> Iterator[Document]:
    yield from parquet_documents(path, options, lambda error: _bad(error, options, counts))


def _warc_documents(path: str, options: ReadOptions, counts: ReadCounts) -> Iterator[Document]:
    yield from warc_documents(path, options, counts, lambda error: _bad(error, options, counts))

