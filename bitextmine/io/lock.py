"""One writer at a time: an exclusive ``flock`` on a lock file per output.

A directory output (an embedding set, an index, a pipeline's output) is locked through
``DIR/.bitextmine.lock``, a file output through ``OUTPUT.lock`` beside it. The second
writer fails at once, naming the output and the holder (its pid and command line).
The kernel releases a ``flock`` when its holder dies, so a killed run never leaves a
stale lock: the file may stay behind, but the next writer takes it over.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from bitextmine.errors import BitextmineError
from bitextmine.io.atomic import STDOUT, output_kind, write_error

DIRECTORY_LOCK = ".bitextmine.lock"


def lock_file_for(output: str | Path, directory: bool) -> Path | None:
    """The lock file of an output; None for outputs that are never replaced (stdout, devices)."""
    if directory:
        return Path(output) / DIRECTORY_LOCK
    if str(output) == STDOUT or output_kind(output) != "replace":
        return None
    real = Path(os.path.realpath(output))
    return real.with_name(real.name + ".lock")


def _holder(lock: Path) -> str:
    with contextlib.suppress(OSError, UnicodeDecodeError):
        text = lock.read_text(encoding="utf-8").strip()
        if text:
            return text
    return "a process that has not written its name yet"


def _acquire(lock: Path, output: str | Path) -> int:
    """An open descriptor holding the lock on ``lock``."""
    while True:
        try:
            # O_NOFOLLOW: a link planted at the lock's name must not have its target truncated
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise BitextmineError(f"the lock file {lock} is a link, not a lock; remove it", path=output) from None
            raise write_error(e, output) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise BitextmineError(f"another bitextmine process is writing this output ({_holder(lock)}; "
                                  f"lock {lock}); wait for it to finish or choose another output",
                                  path=output) from None
        # The previous holder removes the file on release: when it did so between our
        # open and our flock, we hold a lock on a file nobody else can see; try again.
        opened = os.fstat(fd)
        try:
            current = os.stat(lock)
        except FileNotFoundError:
            current = None
        if current is not None and (current.st_dev, current.st_ino) == (opened.st_dev, opened.st_ino):
            return fd
        os.close(fd)


def _remove_stale_temporaries(path: Path) -> None:
    """``.NAME.PID.tmp`` beside ``path``: the temporaries ``atomic_path`` writes for it."""

    own = re.compile(rf"\.{re.escape(path.name)}\.\d+\.tmp")
    with contextlib.suppress(OSError):
        for entry in os.scandir(path.parent):
            if own.fullmatch(entry.name):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)


@contextlib.contextmanager
def output_lock(output: str | Path | None, directory: bool = False) -> Iterator[None]:
    """Hold the lock of ``output`` for the block (the directory must exist for ``directory``; a
    file's folder is made, as ``write_json`` makes it: every verb treats a new folder alike)."""
    lock = None if output is None else lock_file_for(output, directory)
    if lock is None:
        yield
        return
    if not directory:
        try:
            lock.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise write_error(e, output) from None
    fd = _acquire(lock, output)
    if not directory:  # what a killed writer of this file left beside it: only the holder writes there
        _remove_stale_temporaries(lock.with_name(lock.name[: -len(".lock")]))
    try:
        os.ftruncate(fd, 0)
        command = " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv))[:200]
        os.write(fd, f"pid {os.getpid()}: {command}\n".encode())
    except OSError:
        pass  # the holder's name is a courtesy; the lock itself is held
    try:
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            lock.unlink()
        os.close(fd)


@contextlib.contextmanager
def output_locks(outputs: list[str | Path | None]) -> Iterator[None]:
    """Locks on several file outputs at once (stdout, devices and None are skipped)."""
    with contextlib.ExitStack() as stack:
        for output in outputs:
            stack.enter_context(output_lock(output))
        yield
