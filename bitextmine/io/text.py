"""Text shards: naming them on the command line, opening them, reading their lines.

A shard is UTF-8 text, one sentence per line, optionally compressed (.gz, .zst, .xz,
chosen by extension), or ``-`` for standard input. Line *i* of a shard is row *i* of
everything derived from it, so lines are split on ``\\n`` only (``str.splitlines`` would
also split on U+2028, form feeds and other separators, and shift every later row), a
trailing ``\\r`` is dropped, and blank lines keep their row.
"""

from __future__ import annotations

import glob
import gzip
import hashlib
import io
import lzma
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import zstandard

from bitextmine.choices import TEXT_ERROR_MODES
from bitextmine.errors import BitextmineError

STDIN = "-"
COMPRESSED_SUFFIXES = (".gz", ".zst", ".xz")
# the first bytes of each compressed format: standard input has no name to tell it by
MAGIC = {b"\x1f\x8b": ".gz", b"\x28\xb5\x2f\xfd": ".zst", b"\xfd7zXZ\x00": ".xz"}


def expand_shards(args: list[str], verb: str = "embed") -> list[str]:
    """Paths, globs and ``-`` as given on the command line -> an ordered list of shards.

    A name that exists is that file, even when it holds glob characters (``de[1].txt``);
    otherwise a glob expands in sorted order. A name that is neither an existing file nor
    a glob that matches one is an error, raised before any work starts. ``verb`` is the command
    the messages name.
    """
    shards: list[str] = []
    for arg in args:
        if arg == STDIN:
            shards.append(STDIN)
        elif not os.path.lexists(arg) and glob.has_magic(arg):
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


class ZstdFrames(io.RawIOBase):
    """The decompressed bytes of a zstd stream, frame after frame, refusing a truncated one.

    zstandard's ``stream_reader`` ends quietly where the data ends, inside a frame or not,
    so a file cut in its last frame read as complete; here every frame must reach its end.
    """

    def __init__(self, raw: BinaryIO, block: int = 1 << 20):
        self._raw, self._block, self._new = raw, block, zstandard.ZstdDecompressor().decompressobj
        self._frame = self._new()
        self._started = False  # whether the current frame has been fed any bytes
        self._pending = b""

    def readable(self) -> bool:
        return True

    def _more(self) -> bytes:
        """The next decompressed bytes; b"" at the end of the stream."""
        while True:
            data = self._raw.read(self._block)
            if not data:
                if self._started and not self._frame.eof:
                    raise EOFError("the zstd stream ends inside a frame")
                return b""
            out = []
            while data:
                self._started = True
                out.append(self._frame.decompress(data))
                data = b""
                if self._frame.eof:  # another frame may follow in the same block
                    data, self._frame, self._started = self._frame.unused_data, self._new(), False
            if any(out):
                return b"".join(out)

    def readinto(self, buffer) -> int:
        if not self._pending:
            self._pending = self._more()
        n = min(len(buffer), len(self._pending))
        buffer[:n], self._pending = self._pending[:n], self._pending[n:]
        return n

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


def _decompressing(raw: BinaryIO, kind: str) -> BinaryIO:
    """``raw`` (compressed as ``kind``: .gz, .xz or .zst) as a stream of its decompressed bytes."""
    if kind == ".gz":
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if kind == ".xz":
        return lzma.LZMAFile(raw, "rb")
    return io.BufferedReader(ZstdFrames(raw))


def compression_of(head: bytes) -> str | None:
    """The compression whose magic bytes ``head`` starts with (``.gz``, ``.zst``, ``.xz``), or None."""
    return next((kind for magic, kind in MAGIC.items() if head.startswith(magic)), None)


def open_binary(path: str) -> BinaryIO:
    """The decompressed byte stream of a shard (compression chosen by extension; on standard
    input, where there is no name, by the stream's first bytes)."""
    if path == STDIN:
        stdin = sys.stdin.buffer
        kind = compression_of(stdin.peek(8)[:8]) if hasattr(stdin, "peek") else None
        return _decompressing(stdin, kind) if kind else stdin
    try:
        raw = open(path, "rb")
    except OSError as e:
        raise BitextmineError(e.strerror or str(e), path=path) from e
    kind = next((suffix for suffix in COMPRESSED_SUFFIXES if path.endswith(suffix)), None)
    return _decompressing(raw, kind) if kind else raw


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


def _blocks(f, path: str, size: int = 1 << 20):
    """The decompressed blocks of an open shard; a damaged archive is an error naming it. A block
    is what one read of the stream gives (``read1``): the decompressors raise only on a read
    that has nothing left to give, so every byte before the damage of a cut file comes out."""
    while True:
        try:
            block = (f.read1 if size > 0 and hasattr(f, "read1") else f.read)(size)
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


def _decode(data: bytes, path: str, errors: str, replace_option: str | None) -> str:
    """UTF-8 bytes -> str, naming the first bad line in the error, and the way out: the
    caller's option for ``replace`` where it has one, else converting the file."""
    nul = data.find(b"\x00")
    if nul >= 0:
        if errors == "strict":
            line = data.count(b"\n", 0, nul) + 1
            way_out = f"; use {replace_option} to map it to a space" if replace_option else ""
            raise BitextmineError(f"NUL byte in text (a binary file?){way_out}", path=path, line=line)
        data = data.replace(b"\x00", b" ")
    try:
        return data.decode("utf-8", errors=errors)
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        bad = data[e.start : e.start + 4]
        way_out = (f"use {replace_option} to substitute U+FFFD" if replace_option
                   else "convert the file to UTF-8 first (iconv -f ENCODING -t UTF-8)")
        raise BitextmineError(f"invalid UTF-8 (bytes {bad!r}); {way_out}", path=path, line=line) from None


def _read_lines(path: str, errors: str, replace_option: str | None = None) -> tuple[list[str], int, str]:
    """(lines, stored size, SHA-256 of the stored bytes) of a text file, stdin or a pipe."""
    if errors not in TEXT_ERROR_MODES:
        raise BitextmineError(f"unknown --errors mode {errors!r}: use strict or replace")
    if path != STDIN and os.path.isdir(path):
        raise BitextmineError("is a directory: give a file", path=path)
    if path != STDIN and not os.path.exists(path):
        raise BitextmineError("no such file", path=path)
    if path == STDIN or not os.path.isfile(path):  # stdin, a FIFO, <(...): read once, as it comes
        if path == STDIN:
            data = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as stream:
                data = stream.read()
        size, digest = len(data), hashlib.sha256(data).hexdigest()
        kind = compression_of(data[:8])
        if kind is not None:  # `cat x.gz | bitextmine embed -`: decompressed, not taken for text
            with _decompressing(io.BytesIO(data), kind) as f:
                data = next(_blocks(f, path, size=-1), b"")
    else:
        digest = file_sha256(path)
        size = os.path.getsize(path)
        with open_binary(path) as f:
            data = next(_blocks(f, path, size=-1), b"")  # one read: no second copy of a large shard
    text = _decode(data, path, errors, replace_option)
    if text.startswith("\ufeff"):  # a UTF-8 byte order mark is not part of line 1
        text = text[1:]
    lines = text.split("\n")
    if lines and lines[-1] == "":  # the final newline ends the last line, it does not start one
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines], size, digest


def read_lines(path: str, errors: str = "strict") -> list[str]:
    """The lines of a text file (or ``-``), decompressed; an empty file has none."""
    return _read_lines(path, errors)[0]


def read_shard(path: str, errors: str = "strict", replace_option: str | None = None) -> Shard:
    """Read a whole shard: lines without their newline, a blank flag per line.

    ``errors``: ``strict`` raises on invalid UTF-8 or NUL bytes, naming file and line;
    ``replace`` maps invalid bytes to U+FFFD and NUL to a space; ``replace_option``: the
    caller's option that asks for it, which the error then names. A shard must hold at
    least one non-blank line.
    """
    lines, size, digest = _read_lines(path, errors, replace_option)
    if not lines:
        raise BitextmineError("empty file: it needs at least one line", path=path)
    blank = [not line.strip() for line in lines]
    if all(blank):
        raise BitextmineError("only blank lines: nothing to read", path=path)
    return Shard(source=path, lines=lines, blank=blank, source_size=size, source_sha256=digest)


def texts_digest(texts: list[str]) -> str:
    """The SHA-256 of ``texts``, one a line: what tells a pool of sentences again."""
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8", "surrogatepass") + b"\n")
    return digest.hexdigest()
