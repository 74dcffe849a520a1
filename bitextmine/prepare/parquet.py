"""Documents from Parquet files (pyarrow): a text column, and optional id and url columns."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator

from bitextmine.errors import BitextmineError
from bitextmine.io.text import STDIN, open_binary
from bitextmine.prepare.documents import Document, ReadOptions

PARQUET_BATCH_ROWS = 8192  # rows read at once: a batch of long documents stays a few MB


def _seekable(path: str):
    """A seekable source for pyarrow: the file itself, or the decompressed bytes in memory."""
    if path != STDIN and not path.endswith((".gz", ".zst", ".xz")):
        return path
    with open_binary(path) as stream:
        try:
            return io.BytesIO(stream.read())
        except Exception as e:  # a damaged archive: gzip, lzma and zstd each raise their own
            raise BitextmineError(f"cannot decompress (truncated or damaged file?): {e}", path=path) from None


def parquet_documents(path: str, options: ReadOptions, bad: Callable[[BitextmineError], None]) -> Iterator[Document]:
    import pyarrow as pa  # pyarrow: 0.29 s, for Parquet input only
    import pyarrow.parquet as pq  # pyarrow: 0.29 s, for Parquet input only

    try:
        parquet = pq.ParquetFile(_seekable(path))
    except (pa.ArrowException, OSError) as e:
        bad(BitextmineError(f"not a readable Parquet file: {e}", path=path))
        return
    names = parquet.schema_arrow.names
    if options.field not in names:
        bad(BitextmineError(f"no column {options.field!r} (columns: {', '.join(names[:8])}); choose it with "
                            "--column", path=path))
        return
    extra = [name for name in (options.id_field, options.url_field) if name and name in names and name != options.field]
    row = 0
    try:
        for batch in parquet.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=[options.field, *extra]):
            columns = {name: batch.column(name).to_pylist() for name in batch.schema.names}
            texts = columns[options.field]
            ids = columns.get(options.id_field) if options.id_field else None
            urls = columns.get(options.url_field) if options.url_field else None
            for i, text in enumerate(texts):
                row += 1
                if isinstance(text, bytes):
                    try:
                        text = text.decode("utf-8")
                    except UnicodeDecodeError:
                        bad(BitextmineError(f"row {row}: invalid UTF-8 in column {options.field!r}", path=path))
                        continue
                if text is None:
                    continue
                if not isinstance(text, str):
                    bad(BitextmineError(f"row {row}: column {options.field!r} holds {type(text).__name__}, not text",
                                        path=path))
                    continue
                doc_id = ids[i] if ids is not None and ids[i] is not None else row
                url = urls[i] if urls is not None and urls[i] is not None else ""
                yield Document(text, str(doc_id), str(url), row)
    except (pa.ArrowException, OSError) as e:
        bad(BitextmineError(f"row {row + 1}: cannot read the Parquet file (damaged?): {e}", path=path))
