"""A mined TSV's JSON sidecar, read and checked against the TSV it describes.

Apart from mining (``mine/output.py`` writes them) so that a stage that only reads pairs, the
pipeline's filter, starts without the mining code and its scipy (2 s a task).
"""

from __future__ import annotations

import json
from pathlib import Path

from bitextmine.errors import BitextmineError
from bitextmine.io.text import file_sha256

SIDECAR_SUFFIX = ".json"


def read_sidecar(path: str | Path) -> dict:
    """A mining sidecar (or any JSON object file), with one-line errors."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BitextmineError("no such file", path=path) from None
    except (ValueError, RecursionError) as e:  # bad JSON or UTF-8, a 5000-digit number, deep nesting
        raise BitextmineError(f"not valid JSON: {e}", path=path) from None
    except OSError as e:
        raise BitextmineError(f"cannot read: {(e.strerror or str(e)).lower()}", path=path) from None
    if not isinstance(data, dict):
        raise BitextmineError(f"a JSON object is expected, not a {type(data).__name__}", path=path)
    return data


def check_sidecar(tsv: str | Path, sidecar: dict, sidecar_path: str | Path, rows: int | None = None,
                  advice: str = "mine again, or give the matching sidecar") -> None:
    """Refuse a sidecar that does not describe ``tsv`` (by checksum, and by row count when given).

    Sidecars written before the checksum was recorded have none and are taken as they are.
    """

    expected = sidecar.get("output_sha256")
    if expected is None:
        return
    if file_sha256(tsv) != expected:
        raise BitextmineError(f"{sidecar_path} does not describe this file (its checksum differs: the pairs were "
                              f"rewritten after it, or it belongs to another run); {advice}", path=tsv)
    recorded = sidecar.get("output_rows")
    if rows is not None and recorded is not None and rows != recorded:
        raise BitextmineError(f"has {rows} pairs, its sidecar {sidecar_path} says {recorded!r}", path=tsv)
