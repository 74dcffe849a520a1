"""One progress helper for every stage: a tqdm bar on stderr, with rate and ETA."""

from __future__ import annotations

import sys

from bitextmine import defaults


def progress_bar(total: int | None, desc: str, unit: str, disable: bool = False):
    """A tqdm bar on stderr showing rate and ETA.

    On a terminal it redraws twice a second; in a log file (stderr not a TTY) it writes
    a line every 30 s, so batch-job logs stay readable.
    """
    from tqdm import tqdm

    interactive = sys.stderr.isatty()
    return tqdm(total=total, desc=desc, unit=unit, unit_scale=True, disable=disable, file=sys.stderr,
                mininterval=0.5 if interactive else 30, dynamic_ncols=interactive, leave=True)


def encode_with_progress(encoder, texts: list[str], desc: str = "encode", progress: bool = False):
    """``encoder.encode(texts)``, chunk by chunk under a progress bar."""
    import numpy as np

    out = np.empty((len(texts), encoder.dim), dtype=np.float32)
    with progress_bar(total=len(texts), desc=desc, unit="sent", disable=not progress) as bar:
        for start in range(0, len(texts), defaults.ENCODE_CHUNK_LINES):
            chunk = texts[start : start + defaults.ENCODE_CHUNK_LINES]
            out[start : start + len(chunk)] = encoder.encode(chunk)
            bar.update(len(chunk))
    return out
