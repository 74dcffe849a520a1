"""Embedding sets -> a FAISS index (``index.faiss`` + ``index.json``).

The index holds every non-blank row under its global row id (rows numbered over the
sets' shards in order), with inner product as the metric. ``auto`` picks exact search
for small databases and IVF + fast-scan PQ beyond (``defaults.IVF_LISTS_BY_SIZE``). IVF
indexes are trained on a seeded sample, then filled shard by shard from the
memory-mapped fp16 shards. Indexes filled from one trained index can be merged.

The settings are ``config``; building is ``build``, the directory and its checks ``files``,
merging ``merge``, and the FAISS objects themselves ``faiss_index``.
"""

from bitextmine.index.build import build_index
from bitextmine.index.config import IndexConfig, choose_index_type, default_train_sample
from bitextmine.index.faiss_index import faiss_gpu_available, ivf_lists, ivf_of, new_index
from bitextmine.index.files import INDEX_FILE, META_FILE, load_index, read_meta, save_index, verify_index_file
from bitextmine.index.merge import merge_indexes

__all__ = ["INDEX_FILE", "META_FILE", "IndexConfig", "build_index", "choose_index_type", "default_train_sample",
           "faiss_gpu_available", "ivf_lists", "ivf_of", "load_index", "merge_indexes", "new_index", "read_meta",
           "save_index", "verify_index_file"]
