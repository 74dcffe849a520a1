"""Text shards: naming them on the command line, opening them, reading their lines.

A shard is UTF-8 text, one sentence per line, optionally compressed (.gz, .zst, .xz,
chosen by extension), or ``-`` for standard input. Line *i* of a shard is row *i* of
everything derived from it, so lines are split on ``\\n`` only (``str.splitlines`` would
also split on U+2028, form feeds and other separators, and shift every later row), a
trailing ``\\r`` is dropped, and blank lines keep their row.
"""

from __future__ import annotations

import glob
import hashlib
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from bitextmine.choices import TEXT_ERROR_MODES
from bitextmine.errors import BitextmineError

STDIN = "-"
COMPRESSED_SUFFIXES = (".gz", ".zst", ".xz")


def expand_shards(args: list[str], verb: str = "embed") -> list[str]:
    """Paths, globs and ``-`` as given on the command line -> an ordered list of shards.

    A glob expands in sorted order; a name that is neither an existing file nor a glob
    that matches one is an error, raised before any work starts. ``verb`` is the command
    the messages name.
    """
    shards: list[str] = []
    for arg in args:
        if arg == STDIN:
            shards.append(STDIN)
        elif glob.has_magic(arg):
            matches = sorted(p for p in glob.glob(arg) if os.path.isfile(p))
            if not matches:
                raise BitextmineError("no file matches this pattern", path=arg)
            shards.extend(matches)
        elif os.path.isdir(arg):
            raise BitextmineError("is a directory, not a text shard", path=arg)
        elif os.path.exists(arg) and not os.path.isfile(arg):
            # a shard is read twice (checksum, then text): a pipe would be empty the second time
            raise BitextmineError("not a regular file (a pipe or a device?); pipe it to standard input: "
                                  f"... | bitextmine {verb} -", path=arg)
        elif not os.path.isfile(arg):
            raise BitextmineError("no such file", path=arg)
        else:
            shards.append(arg)
    if shards.count(STDIN) > 1:
        raise BitextmineError("standard input (-) can be read only once")
    seen: dict[str, str] = {}
    for shard in shards:
        real = os.path.realpath(shard) if shard != STDIN else STDIN
        if real in seen:
            named = "twice" if seen[real] == shard else f"twice (also as {seen[real]})"
            raise BitextmineError(f"given {named}: each input can be read once", path=shard)
        seen[real] = shard
    return shards


def open_binary(path: str) -> BinaryIO:
    """The decompressed byte stream of a shard (compression chosen by extension)."""
    if path == STDIN:
        return sys.stdin.buffer
    try:
        if path.endswith(".gz"):
            import gzip

            return gzip.open(path, "rb")
        if path.endswith(".xz"):
            import lzma

            return lzma.open(path, "rb")
        if path.endswith(".zst"):
            import zstandard

            return zstandard.ZstdDecompressor().stream_reader(open(path, "rb"), closefd=True)
        return open(path, "rb")
    except OSError as e:
        raise BitextmineError(e.strerror or str(e), path=path) from e


def file_sha256(*paths: str | Path) -> str:
    """The SHA-256 of a file's bytes (of several files' bytes, one after the other), read in blocks."""
    digest = hashlib.sha256()
    for path in paths:
        try:
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
        except OSError as e:
            raise BitextmineError(f"cannot read: {(e.strerror or str(e)).lower()}", path=path) from None
    return digest.hexdigest()


def _blocks(f, path: str, size: int = 1 << 22):
    """The decompressed blocks of an open shard; a damaged archive is an error naming it."""
    while True:
        try:
            block = f.read(size)
        except Exception as e:  # truncated or corrupt archive: gzip, lzma and zstd each raise their own
            raise BitextmineError(f"cannot decompress (truncated or damaged file?): {e}", path=path) from None
        if not block:
            return
        yield block


def binary_lines(path: str) -> Iterator[tuple[int, bytes]]:
    """(line number from 1, the line's bytes with its newline) of a file or ``-``, decompressed,
    read a block at a time (memory bounded whatever the file's size); a UTF-8 byte order
    mark is not part of line 1. A damaged archive is an error naming it."""
    number, rest = 0, b""
    with open_binary(path) as f:
        for block in _blocks(f, path):
            if number == 0 and not rest and block.startswith(b"\xef\xbb\xbf"):
                block = block[3:]
            lines = (rest + block).split(b"\n")
            rest = lines.pop()
            for line in lines:
                number += 1
                yield number, line + b"\n"
    if rest:
        yield number + 1, rest


def count_lines(path: str) -> int:
    """Number of lines (a last line without newline counts), without decoding."""
    count, last = 0, b"\n"
    with open_binary(path) as f:
        for block in _blocks(f, path):
            count += block.count(b"\n")
            last = block[-1:]
    return count + (last != b"\n")


@dataclass
class Shard:
    """A text shard read into memory, with what the manifest records about its source."""

    source: str  # the path as given, or "-"
    lines: list[str]
    blank: list[bool]
    source_size: int  # bytes as stored (compressed size for compressed shards)
    source_sha256: str  # of the bytes as stored

    @property
    def blank_count(self) -> int:
        return sum(self.blank)


def _decode(data: bytes, path: str, errors: str) -> str:
    """UTF-8 bytes -> str, naming the first bad line in the error."""
    nul = data.find(b"\x00")
    if nul >= 0:
        if errors == "strict":
            line = data.count(b"\n", 0, nul) + 1
            raise BitextmineError("NUL byte in text (a binary file?); use --errors replace to map it to a space",
                                  path=path, line=line)
        data = data.replace(b"\x00", b" ")
    try:
        return data.decode("utf-8", errors=errors)
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        bad = data[e.start : e.start + 4]
        raise BitextmineError(f"invalid UTF-8 (bytes {bad!r}); use --errors replace to substitute U+FFFD",
                              path=path, line=line) from None


def _read_lines(path: str, errors: str) -> tuple[list[str], int, str]:
    """(lines, stored size, SHA-256 of the stored bytes) of a text file or stdin."""
    if errors not in TEXT_ERROR_MODES:
        raise BitextmineError(f"unknown --errors mode {errors!r}: use strict or replace")
    if path != STDIN and not os.path.isfile(path):
        raise BitextmineError("no such file", path=path)
    if path == STDIN:
        data = sys.stdin.buffer.read()
        size, digest = len(data), hashlib.sha256(data).hexdigest()
    else:
        digest = file_sha256(path)
        size = os.path.getsize(path)
        with open_binary(path) as f:
            data = next(_blocks(f, path, size=-1), b"")  # one read: no second copy of a large shard
    text = _decode(data, path, errors)
    if text.startswith("\ufeff"):  # a UTF-8 byte order mark is not part of line 1
        text = text[1:]
    lines = text.split("\n")
    if lines and lines[-1] == "":  # the final newline ends the last line, it does not start one
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines], size, digest


def read_lines(path: str, errors: str = "strict") -> list[str]:
    """The lines of a text file (or ``-``), decompressed; an empty file has none."""
    return _read_lines(path, errors)[0]


def read_shard(path: str, errors: str = "strict") -> Shard:
    """Read a whole shard: lines without their newline, a blank flag per line.

    ``errors``: ``strict`` raises on invalid UTF-8 or NUL bytes, naming file and line;
    ``replace`` maps invalid bytes to U+FFFD and NUL to a space. A shard must hold at
    least one non-blank line.
    """
    lines, size, digest = _read_lines(path, errors)
    if not lines:
        raise BitextmineError("empty file: a shard needs at least one line", path=path)
    blank = [not line.strip() for line in lines]
    if all(blank):
        raise BitextmineError("only blank lines: nothing to embed", path=path)
    return Shard(source=path, lines=lines, blank=blank, source_size=size, source_sha256=digest)
