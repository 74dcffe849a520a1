"""Text shards: naming, decompression, line splitting and bad input."""

import gzip
import lzma

import pytest
import zstandard

from bitextmine.errors import BitextmineError
from bitextmine.io.text import count_lines, expand_shards, read_shard


def write(path, data: bytes):
    path.write_bytes(data)
    return str(path)


def test_expand_shards_keeps_order_and_sorts_globs(tmp_path):
    for name in ("b.txt", "a.txt", "c.txt"):
        (tmp_path / name).write_text("x\n")
    shards = expand_shards([str(tmp_path / "c.txt"), str(tmp_path / "[ab].txt"), "-"])
    assert shards == [str(tmp_path / "c.txt"), str(tmp_path / "a.txt"), str(tmp_path / "b.txt"), "-"]


@pytest.mark.parametrize("arg, message", [("missing.txt", "no such file"), ("*.nothing", "no file matches")])
def test_expand_shards_names_what_is_missing(tmp_path, arg, message):
    with pytest.raises(BitextmineError, match=message) as e:
        expand_shards([str(tmp_path / arg)])
    assert e.value.path == str(tmp_path / arg)


def test_expand_shards_rejects_directories_and_double_stdin(tmp_path):
    with pytest.raises(BitextmineError, match="directory"):
        expand_shards([str(tmp_path)])
    with pytest.raises(BitextmineError, match="only once"):
        expand_shards(["-", "-"])


def test_lines_split_on_newline_only_and_keep_blank_rows(tmp_path):
    # CRLF, a U+2028 inside a line, a form feed, a blank line, and no final newline
    data = "eins\r\nzwei\u2028drei\n\n  \nvier\x0cfünf\nsechs".encode()
    shard = read_shard(write(tmp_path / "a.txt", data))
    assert shard.lines == ["eins", "zwei\u2028drei", "", "  ", "vier\x0cfünf", "sechs"]
    assert shard.blank == [False, False, True, True, False, False]
    assert shard.blank_count == 2
    assert count_lines(str(tmp_path / "a.txt")) == 6


def test_byte_order_mark_is_dropped(tmp_path):
    shard = read_shard(write(tmp_path / "bom.txt", "\ufeffHallo\nWelt\n".encode()))
    assert shard.lines == ["Hallo", "Welt"]


@pytest.mark.parametrize("suffix, compress", [
    (".gz", gzip.compress), (".xz", lzma.compress), (".zst", lambda b: zstandard.ZstdCompressor().compress(b))])
def test_compression_by_extension(tmp_path, suffix, compress):
    raw = b"Guten Morgen.\nGute Nacht.\n"
    path = write(tmp_path / f"a.txt{suffix}", compress(raw))
    shard = read_shard(path)
    assert shard.lines == ["Guten Morgen.", "Gute Nacht."]
    assert shard.source_size == (tmp_path / f"a.txt{suffix}").stat().st_size
    assert count_lines(path) == 2


def test_corrupt_archive_is_a_clear_error(tmp_path):
    path = write(tmp_path / "a.txt.gz", gzip.compress(b"x\n" * 1000)[:30])
    with pytest.raises(BitextmineError, match="cannot decompress") as e:
        read_shard(path)
    assert e.value.path == path


def test_invalid_utf8_names_file_and_line(tmp_path):
    path = write(tmp_path / "bad.txt", b"ok\nalso ok\nbroken \xff here\n")
    with pytest.raises(BitextmineError, match="invalid UTF-8") as e:
        read_shard(path)
    assert (e.value.path, e.value.line) == (path, 3)
    assert str(e.value).startswith(f"{path}:3: ")
    replaced = read_shard(path, errors="replace")
    assert replaced.lines[2] == "broken \ufffd here"


def test_nul_bytes_are_an_error_unless_replaced(tmp_path):
    path = write(tmp_path / "nul.txt", b"one\ntw\x00o\n")
    with pytest.raises(BitextmineError, match="NUL") as e:
        read_shard(path)
    assert e.value.line == 2
    assert read_shard(path, errors="replace").lines == ["one", "tw o"]


@pytest.mark.parametrize("data, message", [(b"", "empty file"), (b"\n  \n\t\n", "only blank lines")])
def test_empty_and_blank_only_shards_are_errors(tmp_path, data, message):
    path = write(tmp_path / "x.txt", data)
    with pytest.raises(BitextmineError, match=message) as e:
        read_shard(path)
    assert e.value.path == path


def test_checksum_is_of_the_stored_bytes(tmp_path):
    import hashlib

    data = gzip.compress(b"a\nb\n")
    shard = read_shard(write(tmp_path / "a.gz", data))
    assert shard.source_sha256 == hashlib.sha256(data).hexdigest()
    assert shard.source_size == len(data)
