"""The one error type that library code raises for bad input or state, the one warning type
for input that is plausibly a mistake, and safe printing of what the user named."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

# C0 and C1 controls (ESC starts a terminal escape sequence), DEL, and the bidirectional
# overrides that reorder what a terminal shows
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` safe to print: control characters written as Python escapes (``\\x1b``, ``\\n``).

    A file name may hold an escape sequence or a newline; printed raw, it would recolour
    the terminal, move the cursor or forge a second message line.
    """
    return _UNPRINTABLE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


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
        return printable(where + self.message)


class Terminated(KeyboardInterrupt):
    """SIGTERM to a command that stops on it as on Ctrl-C (``run``): the same cleanup, and
    the exit status a shell expects of SIGTERM (143, not Ctrl-C's 130)."""


class BitextmineWarning(UserWarning):
    """Input that is plausibly a mistake (languages that look swapped, ...), reported as
    ``FILE: message``: a warning, or with the command line's ``--strict`` an error (exit 1).

    Library code calls ``warn``; a Python caller filters these like any warning
    (``warnings.simplefilter("error", BitextmineWarning)`` is ``--strict``).
    """

    def __init__(self, message: str, path: str | Path | None = None):
        super().__init__(message)
        self.message = message
        self.path = None if path is None else str(path)

    def __str__(self) -> str:
        return printable(self.message if self.path is None else f"{self.path}: {self.message}")


def warn(message: str, path: str | Path | None = None) -> None:
    """Warn of input that is plausibly a mistake; raises ``BitextmineWarning`` where warnings are errors."""

    warnings.warn(BitextmineWarning(message, path), stacklevel=2)
