"""Outputs: the one place that decides how a path given for writing is written.

- ``-`` is standard output.
- A regular file, or a path that does not exist yet, is written under a temporary name
  beside it and renamed into place: a reader sees the old file or the complete new
  one, never half. A symbolic link to a regular file keeps the link; its target is
  replaced that way.
- Anything else that exists (a character device such as ``/dev/null``, a FIFO, a
  socket, or a link through ``/proc`` or ``/dev/fd`` such as ``/dev/stdout``) is
  written through: opened and written, never replaced, and no sidecar file is put
  beside it.

Write failures (disk full, permission denied, a file where a directory should be)
become one ``BitextmineError`` naming the output, and the temporary file is removed.
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import io
import json
import lzma
import math
import os
import stat
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

import zstandard

from bitextmine.errors import BitextmineError

STDOUT = "-"

# errno values that mean "this output cannot be written", whoever raised them
_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOTDIR,
                 errno.ENOENT, errno.EISDIR, errno.EIO}
_DISK_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO}


def write_error(error: OSError, path: str | Path) -> BitextmineError:
    """An OSError met while writing ``path`` -> the one-line error the CLI prints."""
    reason = {
        errno.ENOSPC: "no space left on the device",
        errno.EDQUOT: "disk quota exceeded",
        errno.EROFS: "the file system is read-only",
        errno.EACCES: "permission denied",
        errno.EPERM: "operation not permitted",
        errno.ENOTDIR: "a part of the path is a file, not a directory",
        errno.ENOENT: "its directory does not exist",
        errno.EISDIR: "is a directory",
    }.get(error.errno, (error.strerror or str(error)).lower())
    return BitextmineError(f"cannot write: {reason}", path=path)


@contextlib.contextmanager
def _disk_errors_named(path: str | Path, errnos: set[int] = _DISK_ERRNOS) -> Iterator[None]:
    """Turn a disk-full kind of OSError raised inside the block into an error naming ``path``."""
    try:
        yield
    except OSError as e:
        if e.errno in errnos:
            raise write_error(e, path) from None
        raise


def standard_output_errors_named():
    """A disk-full kind of error writing standard output (``> /dev/full``), which has no file
    name of its own, named as standard output."""
    return _disk_errors_named("standard output")


# --- what kind of output ----------------------------------------------------------------

def _link_goes_through_proc(path: str) -> bool:
    """True for links such as /dev/stdout -> /proc/self/fd/1: they name an open file, not a path."""
    current = path
    if os.path.normpath(os.path.abspath(current)).startswith(("/proc/", "/dev/fd/")):
        return True
    for _ in range(40):  # the kernel's own limit on link chains
        if not os.path.islink(current):
            return False
        target = os.readlink(current)
        current = os.path.join(os.path.dirname(current), target)
        if os.path.normpath(current).startswith(("/proc/", "/dev/fd/")):
            return True
    return False


def output_kind(path: str | Path) -> str:
    """``stdout``, ``replace`` (temp-and-rename) or ``through`` (opened and written in place)."""
    name = str(path)
    if name == STDOUT:
        return "stdout"
    if os.path.islink(name) and _link_goes_through_proc(name):
        return "through"
    try:
        mode = os.stat(name).st_mode
    except FileNotFoundError:
        return "replace"  # a new file (or a dangling link, whose target is created)
    except OSError as e:
        raise write_error(e, name) from None
    if stat.S_ISDIR(mode):
        raise BitextmineError("is a directory; give a file name", path=name)
    return "replace" if stat.S_ISREG(mode) else "through"


def is_regular_output(path: str | Path | None) -> bool:
    """Whether ``path`` is written as a file of its own (so that files may sit beside it)."""
    return path is not None and output_kind(path) == "replace"


def sidecar_path(output: str | Path, suffix: str) -> Path | None:
    """``OUTPUT + suffix`` for a regular output; None for stdout, devices and FIFOs."""
    return Path(str(output) + suffix) if is_regular_output(output) else None


def _replaced_path(path: str | Path) -> Path:
    """The file a temp-and-rename replaces: the target of a link, the path otherwise."""
    return Path(os.path.realpath(path)) if os.path.islink(path) else Path(path)


def remove_written(path: str | Path | None) -> None:
    """Remove a regular output that was written (the file a link names, as it was replaced);
    standard output, devices and FIFOs hold nothing to take back."""
    if path is not None and is_regular_output(path):
        _replaced_path(path).unlink(missing_ok=True)


# --- writing ----------------------------------------------------------------------------

def new_file_mode() -> int:
    """The mode a new file gets under the process's umask (0644 under the usual 022)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it over ``path`` on success.

    For the files inside sets and index directories, and for regular outputs. A link
    at ``path`` is replaced itself, never followed (a link planted in an artifact
    directory cannot redirect a write). On an exception the temporary file is removed
    and ``path`` is left as it was. The temporary name starts with ``.`` and ends with
    ``.tmp`` so that it is easy to tell apart from finished outputs (and to clean up
    after a killed run).
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            tmp.unlink()  # left by a killed process with our pid
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))  # O_EXCL: never through a link
    except OSError as e:  # fails here, naming the output, when the place is not writable
        raise write_error(e, path) from None
    try:
        with _disk_errors_named(path):
            yield tmp
            with open(tmp, "rb+") as f:  # the data reaches the disk before the rename does
                os.fsync(f.fileno())
        try:
            os.replace(tmp, path)
        except OSError as e:
            raise write_error(e, path) from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


@contextlib.contextmanager
def _binary_output(path: str | Path) -> Iterator:
    """A binary stream to ``path`` as ``output_kind`` says (the caller compresses)."""
    kind = output_kind(path)
    if kind == "stdout":
        with standard_output_errors_named():
            sys.stdout.flush()  # text already printed comes first
            try:
                yield sys.stdout.buffer
            finally:
                sys.stdout.buffer.flush()
        return
    if kind == "through":
        try:
            stream = open(path, "wb")
        except OSError as e:
            raise write_error(e, path) from None
        with _disk_errors_named(path), stream:
            yield stream
        return
    with atomic_path(_replaced_path(path)) as tmp, open(tmp, "wb") as stream:
        yield stream


def _compressed(raw, name: str):
    """``raw`` wrapped in the compressor that the file name's extension asks for."""
    if name.endswith(".gz"):
        return gzip.GzipFile(fileobj=raw, mode="wb", filename="", mtime=0)
    if name.endswith(".xz"):
        return lzma.LZMAFile(raw, "wb")
    if name.endswith(".zst"):
        return zstandard.ZstdCompressor().stream_writer(raw, closefd=False)
    return None


@contextlib.contextmanager
def atomic_text_writer(path: str | Path) -> Iterator:
    """A UTF-8 text stream to ``path`` (compressed by extension), written as ``output_kind`` says.

    ``-`` writes to standard output, uncompressed (the reader sees the stream).
    """

    with _binary_output(path) as raw:
        packed = None if str(path) == STDOUT else _compressed(raw, str(path))
        stream = io.TextIOWrapper(packed or raw, encoding="utf-8", newline="\n", write_through=True)
        detached = False
        try:
            yield stream
            stream.detach()  # the raw stream belongs to _binary_output
            detached = True
            if packed is not None:
                packed.close()  # writes the compressed stream's trailer
        except BaseException:
            with contextlib.suppress(Exception):
                if not detached:
                    stream.detach()
                if packed is not None:
                    packed.close()
            raise


def write_bytes(path: str | Path, data: bytes) -> None:
    with _binary_output(path) as out:
        out.write(data)


def write_text(path: str | Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def _finite(value):
    """NaN and infinities as null: JSON has no such numbers (``json`` would write invalid JSON)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _json_text(data: dict) -> str:
    return json.dumps(_finite(data), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def write_json(path: str | Path, data: dict) -> None:
    """JSON to an output named by the user: a file (atomically, its folder created), a device,
    or ``-`` (standard output)."""
    if is_regular_output(path):
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise write_error(e, path) from None
    write_text(path, _json_text(data))


def save_json(path: str | Path, data: dict) -> None:
    """JSON to a file inside an artifact directory (a manifest, index.json, a marker), atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(_json_text(data), encoding="utf-8")


def remove_stale_temporaries(directory: str | Path) -> int:
    """Delete ``.*.tmp`` files left in ``directory`` by a killed run; return how many.

    Only the holder of the directory's lock may call this (another writer's
    temporaries would go too).
    """
    removed = 0
    for tmp in Path(directory).glob(".*.tmp"):
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
            removed += 1
    return removed


# --- directories, and outputs against inputs ------------------------------------------------

def prepare_output_dir(path: str | Path) -> bool:
    """Create the output directory ``path`` (and its parents); True when it was created.

    Fails with one line when ``path`` is ``-``, a file, or under a file, or when the
    place is not writable.
    """
    if str(path) == STDOUT:
        raise BitextmineError("this output is a directory; standard output (-) cannot hold it")
    path = Path(path)
    if path.is_dir():
        return False
    if path.exists() or path.is_symlink():
        raise BitextmineError("exists and is not a directory", path=path)
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise BitextmineError(f"cannot create: {parent} is a file, not a directory", path=path)
            break
    try:
        path.mkdir(parents=True)
    except OSError as e:
        raise write_error(e, path) from None
    return True


def refuse_other_files(directory: str | Path, holds: str, advice: str, ignore: tuple[str, ...] = ()) -> None:
    """Refuse a folder that holds files (not hidden ones, not ``ignore``) but no ``holds``: a
    command writes into an empty folder or its own, never among another tool's files."""
    others = sorted(p.name for p in Path(directory).iterdir() if not p.name.startswith(".") and p.name not in ignore)
    if others:
        listed = ", ".join(others[:3]) + (", ..." if len(others) > 3 else "")
        raise BitextmineError(f"holds files but no {holds} ({listed}); {advice}", path=directory)


def check_writable(path: str | Path) -> None:
    """Refuse, before any work, a regular output whose place cannot be written: under a file,
    on a read-only file system, without permission. A missing folder is fine where its nearest
    existing one is writable (``write_json`` creates it). Probed as ``atomic_path`` writes: a
    temporary file made and removed."""
    if output_kind(path) != "replace":
        return
    parent = _replaced_path(path).parent
    existing = next(p for p in (parent, *parent.parents) if p.exists())
    if not existing.is_dir():
        raise write_error(OSError(errno.ENOTDIR, "not a directory"), path)
    probe = existing / f".{Path(path).name}.{os.getpid()}.probe.tmp"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        probe.unlink()
    except FileExistsError:
        pass  # a probe of ours left by a killed process: the place was writable then
    except OSError as e:
        raise write_error(e, path) from None


def _within(inner: str, outer: str) -> bool:
    return inner == outer or inner.startswith(outer.rstrip(os.sep) + os.sep)


def refuse_overwriting_inputs(outputs: Iterable[str | Path | None], inputs: Iterable[str | Path | None]) -> None:
    """Refuse, before any work, an output that is an input, lies inside one or holds one.

    Paths are compared after resolving links. ``-``, devices and FIFOs are never
    replaced, so they are not checked; two outputs on standard output are refused.
    """
    wanted = [str(o) for o in outputs if o is not None]
    if wanted.count(STDOUT) > 1:
        raise BitextmineError("only one output can go to standard output (-)")
    sources = [(str(i), os.path.realpath(i)) for i in inputs if i is not None and str(i) != STDOUT]
    seen: dict[str, str] = {}
    for output in wanted:
        if output == STDOUT or (os.path.exists(output) and not os.path.isdir(output)
                                and output_kind(output) == "through"):
            continue
        real = os.path.realpath(output)
        if real in seen:
            raise BitextmineError(f"given for two outputs (also as {seen[real]})", path=output)
        seen[real] = output
        for given, source in sources:
            if real == source:
                raise BitextmineError(f"is also an input ({given}); write the output elsewhere", path=output)
            if _within(real, source) or _within(source, real):
                raise BitextmineError(f"overlaps {given}, an input or output of this command; write it elsewhere",
                                      path=output)
