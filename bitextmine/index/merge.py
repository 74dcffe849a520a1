"""Indexes filled from one trained index, merged into one."""

from __future__ import annotations

import os
from pathlib import Path

from bitextmine.encoders.base import EncoderIdentity
from bitextmine.errors import BitextmineError
from bitextmine.index.build import locked_output
from bitextmine.index.faiss_index import ivf_of
from bitextmine.index.files import load_index, save_index


def merge_indexes(index_dirs: list[str | Path], out_dir: str | Path) -> dict:
    """Merge IVF indexes filled from the same trained index (``--trained-from``).

    Row ids of the second index onwards are shifted by the rows before them, so the
    merged index addresses the concatenation of their embedding sets.
    """
    if len(index_dirs) < 2:
        raise BitextmineError("merging needs at least two indexes")
    seen: dict[str, str | Path] = {}
    for directory in index_dirs:  # the same rows twice would be found twice, under two ids
        real = os.path.realpath(directory)
        if real in seen:
            raise BitextmineError(f"given twice (also as {seen[real]}): each part can be merged once", path=directory)
        seen[real] = directory
    with locked_output(out_dir, index_dirs):
        return _merge_indexes(index_dirs, out_dir)


def _merge_indexes(index_dirs: list[str | Path], out_dir: str | Path) -> dict:
    merged, meta = load_index(index_dirs[0])
    merged_ivf = _extract_ivf(merged, index_dirs[0])
    sets, offsets, labels = list(meta["embedding_sets"]), list(meta["shard_offsets"]), list(meta["shard_labels"])
    for directory in index_dirs[1:]:
        index, other = load_index(directory)
        if other["trained_sha256"] != meta["trained_sha256"]:
            raise BitextmineError("trained separately from the first index; build the parts with "
                                  f"--trained-from {index_dirs[0]} to merge them", path=directory)
        spaces = [EncoderIdentity.from_dict(m["encoder"]).space() if isinstance(m.get("encoder"), dict) else None
                  for m in (meta, other)]
        if spaces[0] != spaces[1]:  # one index of two encoders' vectors: their cosines mean nothing together
            raise BitextmineError("holds vectors of another encoder than the first index's", path=directory)
        shared = {s["fingerprint"] for s in sets} & {s["fingerprint"] for s in other["embedding_sets"]}
        if shared:
            raise BitextmineError("holds embeddings another part holds already (the same set indexed twice): each "
                                  "set can be merged once", path=directory)
        shift = offsets[-1]
        merged_ivf.merge_from(_extract_ivf(index, directory), shift)
        sets += other["embedding_sets"]
        offsets += [o + shift for o in other["shard_offsets"][1:]]
        labels += other["shard_labels"]
    merged.ntotal = merged_ivf.ntotal
    meta = {**meta, "ntotal": int(merged.ntotal), "embedding_sets": sets, "shard_offsets": offsets,
            "shard_labels": labels, "merged_from": [str(Path(d).resolve()) for d in index_dirs]}
    return save_index(merged, meta, out_dir)


def _extract_ivf(index, path):
    ivf = ivf_of(index)
    if ivf is None:
        raise BitextmineError("only IVF indexes can be merged", path=path)
    return ivf
