"""Paths read from artifacts stay inside the artifact's own directory.

A manifest, an index.json or a pipeline file is data that may come from elsewhere; the
file names in it are resolved inside their folder, or refused, so that a crafted file
cannot make a run read, overwrite or delete anything outside it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath

from bitextmine.errors import BitextmineError

# A language key names directories and files of a pipeline's output: a plain name.
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_+-]*(\.[A-Za-z0-9_+-]+)*")


def confined(root: str | Path, name: str, what: str, artifact: str | Path) -> Path:
    """``root/name`` for a relative ``name`` that stays inside ``root``, links resolved.

    ``what`` names the field in the error (``shard file``); ``artifact`` is the file
    the name was read from.
    """
    if not isinstance(name, str) or not name or "\x00" in name:
        raise BitextmineError(f"{what} must be a file name, not {name!r}", path=artifact)
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if os.path.isabs(name) or name.startswith(("/", "\\")) or ".." in parts or (parts and ":" in parts[0]):
        raise BitextmineError(f"{what} {name!r} must be a name inside {root}, not a path out of it", path=artifact)
    root = Path(root)
    path = root / name
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    if real != real_root and not real.startswith(real_root.rstrip(os.sep) + os.sep):
        raise BitextmineError(f"{what} {name!r} leads out of {root} (through a link to {real})", path=artifact)
    return path


def plain_file_name(root: str | Path, name: str, suffix: str, what: str, artifact: str | Path) -> Path:
    """``root/name`` for a file name of the artifact's own kind: one path part, not hidden, ending in ``suffix``.

    Stricter than ``confined``: an artifact's own files never live in subdirectories,
    and a name such as ``manifest.json`` or ``.`` must not be taken for a shard file.
    """
    if not isinstance(name, str) or "/" in name or "\\" in name or name.startswith(".") \
            or not name.endswith(suffix) or len(name) == len(suffix):
        raise BitextmineError(f"{what} must be a plain file name ending in {suffix}, not {name!r}", path=artifact)
    return confined(root, name, what, artifact)


def check_name(name: str, what: str, artifact: str | Path) -> str:
    """A key that becomes a file or directory name: letters, digits, ``_ + - .``; no ``..``."""
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise BitextmineError(f"{what} {name!r} must be a plain name (letters, digits, _ + - .)", path=artifact)
    return name


DATA_SUFFIXES = ("gz", "xz", "zst", "bz2", "tsv", "txt", "csv")  # compression and text formats


def data_stem(name: str | Path) -> str:
    """A data file's name without its directory and its compression and format suffixes
    (``/d/train.eng-ces.tsv.gz`` -> ``train.eng-ces``, ``news.de.txt`` -> ``news.de``)."""
    parts = Path(name).name.split(".")
    while len(parts) > 1 and parts[-1].lower() in DATA_SUFFIXES:
        parts.pop()
    return ".".join(parts)
