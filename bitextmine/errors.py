"""The one error type that library code raises for bad input or state."""

from __future__ import annotations

from pathlib import Path


class BitextmineError(Exception):
    """A problem the user can fix, reported as ``FILE:LINE: message``.

    Library code raises this and never exits; the CLI prints it on one line to stderr
    and exits 1.
    """

    def __init__(self, message: str, path: str | Path | None = None, line: int | None = None):
        super().__init__(message)
        self.message = message
        self.path = None if path is None else str(path)
        self.line = line

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = f"{self.path}:{self.line}: " if self.line is not None else f"{self.path}: "
        return where + self.message
