"""What ``index`` is asked to build: ``IndexConfig``, and the ``auto`` index type by size."""

from __future__ import annotations

from dataclasses import dataclass

from bitextmine import defaults


@dataclass(frozen=True)
class IndexConfig:
    index_type: str = defaults.INDEX_TYPE  # or any FAISS factory string, e.g. "IVF4096,PQ64x4fs"
    nprobe: int = defaults.NPROBE
    candidates: int = defaults.INDEX_CANDIDATES  # proposed per query by the index, re-ranked exactly by mine
    train_sample: int | None = None  # None: TRAIN_SAMPLES_PER_LIST x lists
    seed: int = defaults.SEED
    device: str = defaults.DEVICE  # auto: faiss-gpu when installed and a GPU is visible
    trained_from: str | None = None  # reuse the training of this index (so results can be merged)


def choose_index_type(rows: int, dim: int) -> str:
    """The ``auto`` factory string for a database of ``rows`` vectors."""
    if rows <= defaults.FLAT_MAX_ROWS:
        return "Flat"
    lists = next(n for more_than, n in defaults.IVF_LISTS_BY_SIZE if rows > more_than)
    codes = _largest_divisor(dim, max(1, dim // defaults.PQ_DIMS_PER_CODE))
    return f"IVF{lists},PQ{codes}x4fs"


def default_train_sample(lists: int) -> int:
    """Training vectors for an index of ``lists`` IVF lists (when not given)."""
    return max(defaults.TRAIN_SAMPLES_PER_LIST * lists, defaults.PQ_MIN_TRAIN_ROWS)


def _largest_divisor(n: int, at_most: int) -> int:
    return max(m for m in range(1, at_most + 1) if n % m == 0)
