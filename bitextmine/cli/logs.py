"""Messages to standard error: ``bitextmine: MESSAGE``, names printed with their control characters escaped."""

from __future__ import annotations

import logging
import sys

from bitextmine.errors import printable


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time (it may be redirected later)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):
        pass


class _PrintableFormatter(logging.Formatter):
    """Messages name files; a control character in a name is printed as an escape."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record))


def setup_logging(quiet: bool) -> None:
    """Messages to stderr; --quiet keeps warnings and errors only."""
    logger = logging.getLogger("bitextmine")
    if not any(isinstance(h, _StderrHandler) for h in logger.handlers):
        handler = _StderrHandler()
        handler.setFormatter(_PrintableFormatter("bitextmine: %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(logging.WARNING if quiet else logging.INFO)
