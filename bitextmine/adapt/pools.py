"""The two pools ``adapt`` learns from: their distinct sentences, as mining sees them.

A pool is a text file (one sentence a line, .gz welcome), several of them, or an
embedding set (``bitextmine embed``'s output), whose text shards are read back. Blank
lines are left out and identical sentences (after trimming) count once, as ``mine``
searches them. An embedding set names the text only: each round embeds the pool with
the encoder being trained, so the set's vectors are not used.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from bitextmine.errors import BitextmineError
from bitextmine.io.text import texts_digest


@dataclass
class Pool:
    """The distinct non-blank sentences of one side, in order of first occurrence."""

    sources: list[str]  # the paths as given
    texts: list[str]
    lines: int  # every line read, blank and repeated ones included

    def __len__(self) -> int:
        return len(self.texts)

    def digest(self) -> str:
        """The SHA-256 of the distinct sentences, one a line: what a resumed run must find again."""
        return texts_digest(self.texts)


def _lines_of(path: str) -> list[str]:
    """The lines of a text file, or of every text shard of an embedding set."""
    from bitextmine.embed.embedding_set import MANIFEST_NAME
    from bitextmine.io.text import read_shard

    if Path(path).is_dir():
        if not (Path(path) / MANIFEST_NAME).is_file():
            raise BitextmineError("a directory that is no embedding set: give a text file or an embedding set",
                                  path=path)
        from bitextmine.embed.corpus import EmbeddingCorpus

        corpus = EmbeddingCorpus.load([path])
        return [line for s in range(len(corpus.shards)) for line in corpus.read_lines(s)]
    if not Path(path).is_file() and path != "-":
        raise BitextmineError("no such file", path=path)
    return read_shard(path).lines


def read_pools(src: str | list[str], tgt: str | list[str]) -> tuple[Pool, Pool]:
    """Both pools; standard input (``-``) can be read for one of them only."""
    given = [str(p) for side in (src, tgt) for p in ([side] if isinstance(side, str | Path) else side)]
    if given.count("-") > 1:
        raise BitextmineError("standard input (-) can be read once: give the other pool as a file")
    return read_pool(src), read_pool(tgt)


def read_pool(paths: str | list[str]) -> Pool:
    """A pool from text files or embedding sets; an error when it holds fewer than two sentences."""
    sources = [paths] if isinstance(paths, str) else list(paths)
    seen: dict[str, None] = {}
    lines = 0
    for path in sources:
        read = _lines_of(str(path))
        lines += len(read)
        for line in read:
            text = line.strip()
            if text:
                seen.setdefault(text, None)
    if len(seen) < 2:
        raise BitextmineError(f"{len(seen)} distinct sentence(s): a pool to mine needs more", path=sources[0])
    return Pool([str(p) for p in sources], list(seen), lines)


__all__ = ["Pool", "read_pool", "texts_digest"]


def check_replay_files(paths) -> None:
    """Every ``--replay`` file read as a file of pairs, before any work: a missing or malformed
    one found only when a round trains would leave a run behind that cannot be continued."""
    from bitextmine.train.data import read_tsv_pairs

    for path in paths:
        read_tsv_pairs(str(path))


def check_not_the_encoder(encoder: str, out_dir) -> None:
    """``-o`` neither the checkpoint adapted from nor a folder holding it: it would be written over."""
    if not encoder.startswith("ckpt:"):
        return
    start, out = os.path.realpath(encoder[len("ckpt:"):]), os.path.realpath(out_dir)
    if start == out or start.startswith(out.rstrip(os.sep) + os.sep) or out.startswith(start.rstrip(os.sep) + os.sep):
        raise BitextmineError(f"overlaps the checkpoint adapted from ({encoder}): write the adapted encoder "
                              "elsewhere", path=out_dir)
