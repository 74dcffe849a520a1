"""Provenance sidecars: where each line of a prepared text shard came from.

``prepare`` writes beside each shard ``NAME.txt`` a sidecar ``NAME.prov.tsv``: line *i*
of the sidecar describes line *i* of the shard, in four tab-separated columns (no header):

    input<TAB>document<TAB>url<TAB>sentence

- ``input``: the input file as it was given (``-`` for standard input);
- ``document``: the document's id (the JSONL/Parquet id field, the WARC-Record-ID), or,
  where the input has none, the line (row, record) of the input the document starts on;
- ``url``: the document's URL (the url field, WARC-Target-URI), or empty;
- ``sentence``: the sentence's place among the sentences of its document, from 1 (before
  the rules dropped any, so gaps show what was dropped).

Tabs and line breaks inside a value are written as spaces. ``mine --docs`` reads the rows
of the pairs it writes, to name both sentences' documents.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from bitextmine.errors import BitextmineError

SIDECAR_SUFFIX = ".prov.tsv"
COLUMNS = ("input", "document", "url", "sentence")


@dataclass(frozen=True, slots=True)
class Origin:
    input: str
    document: str
    url: str
    sentence: int

    def row(self) -> str:
        return "\t".join((_clean(self.input), _clean(self.document), _clean(self.url), str(self.sentence))) + "\n"

    def reference(self) -> str:
        """What names the document for a reader: its URL, else ``input:document``."""
        return self.url or f"{self.input}:{self.document}"


def _clean(value: str) -> str:
    if "\t" in value or "\n" in value or "\r" in value:
        return value.replace("\t", " ").replace("\r", " ").replace("\n", " ")
    return value


def sidecar_of(shard: str | Path) -> Path:
    """``DIR/NAME.txt`` (or ``.txt.gz`` ...) -> ``DIR/NAME.prov.tsv``."""
    path = Path(shard)
    name = path.name
    for suffix in (".gz", ".zst", ".xz"):
        name = name.removesuffix(suffix)
    return path.with_name(name.removesuffix(".txt") + SIDECAR_SUFFIX)


def has_sidecar(shard: str | Path) -> bool:
    return str(shard) != "-" and os.path.isfile(sidecar_of(shard))


def parse_row(line: str, path: str | Path, number: int) -> Origin:
    parts = line.rstrip("\n").split("\t")
    if len(parts) != len(COLUMNS) or not parts[3].isdigit():
        raise BitextmineError(f"expected {len(COLUMNS)} tab-separated columns ({', '.join(COLUMNS)})",
                              path=path, line=number)
    return Origin(parts[0], parts[1], parts[2], int(parts[3]))


def read_rows(shard: str | Path, lines: Iterable[int], expected_rows: int) -> dict[int, Origin]:
    """The origins of the shard's ``lines`` (counted from 1), read from its sidecar.

    The sidecar must have one row per line of the shard (``expected_rows``): a sidecar
    of another shard, or one cut short, is refused."""
    path = sidecar_of(shard)
    wanted = set(lines)
    found: dict[int, Origin] = {}
    count = 0
    try:
        with open(path, encoding="utf-8") as rows:
            for count, line in enumerate(rows, 1):
                if count in wanted:
                    found[count] = parse_row(line, path, count)
    except OSError as e:
        raise BitextmineError(f"cannot read: {(e.strerror or str(e)).lower()}", path=path) from None
    except UnicodeDecodeError as e:
        raise BitextmineError(f"not UTF-8 text: {e}", path=path) from None
    if count != expected_rows:
        raise BitextmineError(f"has {count} rows, but its shard {shard} has {expected_rows} lines: "
                              "the sidecar does not belong to this shard", path=path)
    return found
