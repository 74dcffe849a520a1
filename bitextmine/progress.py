"""One progress helper for every stage: a tqdm bar on stderr, with rate and ETA; and the
native libraries' own messages on stderr silenced where ``-q`` asks for quiet."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

from tqdm import tqdm

from bitextmine import defaults


def progress_bar(total: int | None, desc: str, unit: str, disable: bool = False):
    """A tqdm bar on stderr showing rate and ETA.

    On a terminal it redraws twice a second; in a log file (stderr not a TTY) it writes
    a line every 30 s, so batch-job logs stay readable.
    """

    interactive = sys.stderr.isatty()
    # scaled (1.2M) where counts are large; small counts as they are (2/2, not 2.00/2.00)
    scaled = total is None or total >= 10_000
    return tqdm(total=total, desc=desc, unit=unit, unit_scale=scaled, disable=disable, file=sys.stderr,
                mininterval=0.5 if interactive else 30, dynamic_ncols=interactive, leave=True)


def encode_with_progress(encoder, texts: list[str], desc: str = "encode", progress: bool = False):
    """``encoder.encode(texts)``, chunk by chunk under a progress bar."""
    import numpy as np  # numpy: 0.19 s; prepare imports this module and runs without it

    out = np.empty((len(texts), encoder.dim), dtype=np.float32)
    with progress_bar(total=len(texts), desc=desc, unit="sent", disable=not progress) as bar:
        for start in range(0, len(texts), defaults.ENCODE_CHUNK_LINES):
            chunk = texts[start : start + defaults.ENCODE_CHUNK_LINES]
            out[start : start + len(chunk)] = encoder.encode(chunk)
            bar.update(len(chunk))
    return out


@contextlib.contextmanager
def native_stderr_silenced(silenced: bool = True) -> Iterator[None]:
    """Standard error's file descriptor to /dev/null for the block, when ``silenced``.

    FAISS writes its warnings ("WARNING clustering 500 points to 256 centroids") from C++
    straight to descriptor 2, past Python's logging, so ``-q`` reaches them only this way.
    """
    if not silenced:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
