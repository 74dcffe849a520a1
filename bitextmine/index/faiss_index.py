"""FAISS objects: the IVF part inside an index and its lists, an index moved to the GPUs and back.

FAISS is imported by the functions that use it (0.19 s, ``python -X importtime``): a
command that only reads ``index.json`` or plans an index starts without it.
"""

from __future__ import annotations

import logging
import re

from bitextmine.errors import BitextmineError

log = logging.getLogger(__name__)


def new_index(dim: int, factory: str):
    """An empty FAISS index of ``factory`` for ``dim``-d vectors, inner product; a string FAISS
    cannot parse (or cannot build for this width) is one line."""
    import faiss  # faiss: 0.27 s, loaded where used (ARCHITECTURE.md, start-up)

    try:
        index = faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as e:
        raise BitextmineError(f"FAISS cannot build index type {factory!r} for {dim}-d vectors: "
                              f"{faiss_words(e)}") from None
    if ivf_lists(index) == 0:  # FAISS builds it, then fails on the first search
        raise BitextmineError(f"index type {factory!r} has no lists: give IVFn with n >= 1")
    return index


def rotation_rows(index) -> int:
    """Training vectors an OPQ rotation in ``index`` needs at least (its output width; 0 without
    one): trained on fewer, FAISS's OPQ crashes the process rather than raise."""
    import faiss

    if not isinstance(index, faiss.IndexPreTransform):
        return 0
    transforms = (faiss.downcast_VectorTransform(index.chain.at(i)) for i in range(index.chain.size()))
    return max((t.d_out for t in transforms if isinstance(t, faiss.OPQMatrix)), default=0)


def faiss_words(error: RuntimeError) -> str:
    """What a FAISS error says, without its C++ frames."""
    return re.sub(r"^.*\.cpp:\d+: ", "", str(error).strip().splitlines()[-1])


def ivf_of(index):
    """The IVF part of a FAISS index (inside OPQ, id maps, ...), or None for an index without lists."""
    import faiss  # faiss: 0.27 s, loaded where used (ARCHITECTURE.md, start-up)

    try:
        return faiss.extract_index_ivf(index)
    except RuntimeError:
        return None


def ivf_lists(index) -> int | None:
    ivf = ivf_of(index)
    return None if ivf is None else ivf.nlist


def faiss_gpu_available() -> bool:
    import faiss  # faiss: 0.27 s, loaded where used (ARCHITECTURE.md, start-up)

    return hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0


def on_gpu(index, device: str):
    """The index on all GPUs when faiss-gpu and a GPU are there (and wanted), else itself."""
    if device == "cpu" or not faiss_gpu_available():
        return index
    import faiss  # faiss: 0.27 s, loaded where used (ARCHITECTURE.md, start-up)

    log.info("using faiss-gpu on %d GPU(s)", faiss.get_num_gpus())
    try:
        return faiss.index_cpu_to_all_gpus(index)
    except RuntimeError as e:  # e.g. a type without a GPU implementation
        log.warning("staying on CPU: %s", str(e).splitlines()[0])
        return index


def to_cpu(index):
    import faiss  # faiss: 0.27 s, loaded where used (ARCHITECTURE.md, start-up)

    placed = type(index).__name__.startswith(("Gpu", "IndexReplicas", "IndexShards"))
    if placed and hasattr(faiss, "index_gpu_to_cpu"):
        return faiss.index_gpu_to_cpu(index)
    return index
