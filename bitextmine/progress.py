"""One progress helper for every stage: a tqdm bar on stderr."""

from __future__ import annotations

import sys


def progress_bar(total: int | None, desc: str, unit: str, disable: bool = False):
    """A tqdm bar on stderr showing rate and ETA.

    On a terminal it redraws twice a second; in a log file (stderr not a TTY) it writes
    a line every 30 s, so batch-job logs stay readable.
    """
    from tqdm import tqdm

    interactive = sys.stderr.isatty()
    return tqdm(total=total, desc=desc, unit=unit, unit_scale=True, disable=disable, file=sys.stderr,
                mininterval=0.5 if interactive else 30, dynamic_ncols=interactive, leave=True)
