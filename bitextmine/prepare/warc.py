"""Documents from WARC and WET archives (warcio): the text records, with their URL and record id."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from bitextmine.errors import BitextmineError
from bitextmine.io.text import open_binary
from bitextmine.prepare.documents import Document, ReadCounts, ReadOptions

# WARC record types whose payload is the page's text: WET conversions, and resources and
# responses served as plain text
_TEXT_RECORDS = ("conversion", "resource", "response")


def warc_documents(path: str, options: ReadOptions, counts: ReadCounts,
                   bad: Callable[[BitextmineError], None]) -> Iterator[Document]:
    """The text records of a WARC or WET file. A record shorter than its Content-Length (a
    cut file) is bad input; records without text (requests, metadata, HTML responses, which
    need an HTML extractor: use the WET files) are counted in ``not_text``."""
    from warcio.archiveiterator import ArchiveIterator  # warcio: 0.15 s, for WARC input only
    from warcio.exceptions import ArchiveLoadFailed  # warcio: 0.15 s, for WARC input only

    number = 0
    stream = open_binary(path)
    try:
        records = iter(ArchiveIterator(stream))
        while True:
            try:
                record = next(records)
            except StopIteration:
                _check_the_end(stream, path, number, bad)
                return
            except (ArchiveLoadFailed, EOFError, OSError, ValueError) as e:
                bad(BitextmineError(f"record {number + 1}: not a readable WARC record (truncated or damaged "
                                    f"file?): {e}", path=path))
                return
            number += 1
            text = _record_text(record, path, number, counts, bad)
            if text is not None:
                headers = record.rec_headers
                yield Document(text, headers.get_header("WARC-Record-ID") or str(number),
                               headers.get_header("WARC-Target-URI") or "", number)
    finally:
        stream.close()


def _check_the_end(stream, path: str, number: int, bad: Callable[[BitextmineError], None]) -> None:
    """The archive ends where its records do: warcio ends quietly on a damaged compressed stream,
    which reading on past it tells."""
    try:
        rest = stream.read(1 << 16)
    except Exception as e:  # gzip, lzma and zstd each raise their own
        bad(BitextmineError(f"after record {number}: cannot decompress (truncated or damaged file?): {e}", path=path))
        return
    if rest.strip():
        bad(BitextmineError(f"after record {number}: {len(rest)} bytes that are no WARC record (truncated or damaged "
                            "file?)", path=path))


def _record_text(record, path: str, number: int, counts: ReadCounts,
                 bad: Callable[[BitextmineError], None]) -> str | None:
    headers = record.rec_headers
    content_type = (headers.get_header("Content-Type") or "").lower()
    if record.http_headers is not None:
        content_type = (record.http_headers.get_header("Content-Type") or content_type).lower()
    if record.rec_type not in _TEXT_RECORDS or (record.rec_type != "conversion" and "text/plain" not in content_type):
        record.content_stream().read()  # past its payload, so a cut one is still seen
        counts.not_text += 1
        return None
    try:
        payload = record.content_stream().read()
    except Exception as e:  # a damaged gzip member, a cut chunked payload: each library raises its own
        bad(BitextmineError(f"record {number}: cannot read its payload (truncated?): {e}", path=path))
        return None
    length = headers.get_header("Content-Length")
    if length is None or (record.http_headers is None and len(payload) < int(length)):
        bad(BitextmineError(f"record {number}: truncated (Content-Length {length}, {len(payload)} bytes read)",
                            path=path))
        return None
    try:
        return payload.decode("utf-8")
    except UnicodeDecodeError as e:
        bad(BitextmineError(f"record {number}: invalid UTF-8 (bytes {payload[e.start:e.start + 4]!r})", path=path))
        return None
