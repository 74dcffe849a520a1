"""Embedding sets -> a FAISS index: trained on a seeded sample, then filled shard by shard."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from bitextmine import __version__, defaults
from bitextmine.embed.corpus import EmbeddingCorpus, release_pages
from bitextmine.embed.embedding_set import row_is_blank
from bitextmine.encoders.base import EncoderIdentity
from bitextmine.errors import BitextmineError
from bitextmine.index.config import IndexConfig, choose_index_type, default_train_sample
from bitextmine.index.faiss_index import faiss_words, ivf_lists, new_index, on_gpu, rotation_rows, to_cpu
from bitextmine.index.files import FORMAT_NAME, FORMAT_VERSION, META_FILE, load_index, save_index
from bitextmine.io.atomic import prepare_output_dir, refuse_other_files, refuse_overwriting_inputs
from bitextmine.io.lock import output_lock
from bitextmine.progress import native_stderr_silenced

log = logging.getLogger(__name__)

SAMPLE_BLOCK_ROWS = 16_384  # sampled rows gathered at once: with their pages, tens of MB


def _training_sample(corpus: EmbeddingCorpus, size: int, seed: int) -> np.ndarray:
    """A seeded uniform sample of non-blank rows, read without loading the corpus."""
    rng = np.random.default_rng(seed)
    total = corpus.total_rows
    picked = np.sort(rng.choice(total, size=min(total, size), replace=False))
    offsets = corpus.shard_offsets()
    shard_of = np.searchsorted(offsets, picked, side="right") - 1
    sample = np.empty((len(picked), corpus.dim), dtype=np.float32)
    for s in np.unique(shard_of):
        where = np.flatnonzero(shard_of == s)
        shard = corpus.open_shard(s)
        # a block of rows at a time, its mapped pages released: a sample of a fifth of the
        # rows touches most pages of the shard, which would otherwise all count as resident
        for block in range(0, len(where), SAMPLE_BLOCK_ROWS):
            at = where[block : block + SAMPLE_BLOCK_ROWS]
            sample[at] = shard[picked[at] - offsets[s]]
            release_pages(shard)
    blank = row_is_blank(sample)
    return sample if not blank.any() else np.ascontiguousarray(sample[~blank])


def _trained_sha256(index) -> str:
    """Digest of the trained, empty index: equal digests mean compatible codebooks."""
    import faiss  # faiss: 0.27 s, loaded where used (ARCHITECTURE.md, start-up)

    empty = faiss.clone_index(index)
    empty.reset()
    return hashlib.sha256(faiss.serialize_index(empty).tobytes()).hexdigest()


def build_index(emb_dirs: list[str | Path], out_dir: str | Path, cfg: IndexConfig = IndexConfig(),
                quiet: bool = False) -> dict:
    """Build the index of the corpus made of ``emb_dirs``; return its metadata.

    The output directory is locked for the build: one writer at a time. ``quiet``: FAISS's
    own warnings (too few training points) are silenced too.
    """
    with locked_output(out_dir, [*emb_dirs, cfg.trained_from]):
        return _build_index(emb_dirs, out_dir, cfg, quiet)


@contextlib.contextmanager
def locked_output(out_dir: str | Path, inputs: list) -> Iterator[None]:
    """Checks and the lock of an index directory being written; an empty new one is removed on failure."""
    refuse_overwriting_inputs([out_dir], inputs)
    created = prepare_output_dir(out_dir)
    try:
        with output_lock(out_dir, directory=True):
            if not (Path(out_dir) / META_FILE).is_file():  # an embedding set, a folder of text...
                refuse_other_files(out_dir, "index", "give an empty or new -o, or an index's own folder to replace it")
            yield
    except BaseException:
        if created and not any(Path(out_dir).iterdir()):
            Path(out_dir).rmdir()
        raise


def _build_index(emb_dirs: list[str | Path], out_dir: str | Path, cfg: IndexConfig, quiet: bool) -> dict:
    import faiss  # faiss: 0.27 s, loaded where used (ARCHITECTURE.md, start-up)

    started = time.time()
    corpus = EmbeddingCorpus.load(emb_dirs, verify=True)
    rows = corpus.total_rows - sum(e.blank_lines for e in corpus.shards)
    if rows == 0:
        raise BitextmineError("nothing to index: every line is blank", path=emb_dirs[0])
    if cfg.trained_from:
        index, trained_meta = load_index(cfg.trained_from)
        if trained_meta["dim"] != corpus.dim:
            raise BitextmineError(f"dimension {trained_meta['dim']} differs from the embeddings' {corpus.dim}",
                                  path=cfg.trained_from)
        trained_by = trained_meta.get("encoder")
        if isinstance(trained_by, dict) and EncoderIdentity.from_dict(trained_by).space() != corpus.encoder.space():
            # codebooks of another encoder's space: every search would quietly lose recall
            raise BitextmineError(f"trained on vectors of another encoder ({trained_by.get('name')}) than the "
                                  f"embeddings' ({corpus.encoder.name})", path=cfg.trained_from)
        index.reset()
        factory = trained_meta["factory"]
        sample_size = trained_meta["train_sample"]
    else:
        factory = choose_index_type(rows, corpus.dim) if cfg.index_type == "auto" else cfg.index_type
        index = new_index(corpus.dim, factory)
        lists = ivf_lists(index)
        sample_size = 0
        if not index.is_trained:
            wanted = cfg.train_sample or default_train_sample(lists or 1)
            sample = _training_sample(corpus, wanted, cfg.seed)
            sample_size = len(sample)
            needed = defaults.FAISS_MIN_POINTS_PER_CENTROID * (lists or 0)
            if sample_size < needed:
                raise BitextmineError(f"{factory} needs at least {needed} training vectors ({lists} lists x "
                                      f"FAISS's {defaults.FAISS_MIN_POINTS_PER_CENTROID}), the embeddings have "
                                      f"{sample_size}; use fewer lists or a Flat index", path=emb_dirs[0])
            rotation = rotation_rows(index)
            if sample_size < rotation:
                raise BitextmineError(f"{factory} needs at least {rotation} training vectors (its OPQ "
                                      f"rotation is {rotation} wide), the embeddings have {sample_size}; "
                                      "use a narrower rotation (OPQM_D), no OPQ, or a Flat index", path=emb_dirs[0])
            log.info("training %s on %d vectors", factory, sample_size)
            index = on_gpu(index, cfg.device)
            faiss.omp_set_num_threads(faiss.omp_get_max_threads())
            with native_stderr_silenced(quiet):
                try:
                    index.train(sample)
                except RuntimeError as e:  # too few vectors for the codebooks, say: deterministic, one line
                    raise BitextmineError(f"FAISS cannot train {factory} on {sample_size} vectors: "
                                          f"{faiss_words(e)}", path=emb_dirs[0]) from None
            del sample  # not held while every row is added: the peak is the larger of the two phases
            index = to_cpu(index)
    if ivf_lists(index) is None and not isinstance(index, faiss.IndexIDMap):
        index = faiss.IndexIDMap2(index)  # flat-like indexes need an id map for global ids
    trained = _trained_sha256(index)
    device_index = on_gpu(index, cfg.device)
    for ids, block in corpus.non_blank_blocks():
        device_index.add_with_ids(np.ascontiguousarray(block, dtype=np.float32), ids.astype(np.int64))
    index = to_cpu(device_index)
    if index.ntotal != rows:
        raise BitextmineError(f"index holds {index.ntotal} vectors, expected {rows}")
    meta = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "factory": factory,
        "metric": "inner_product",
        "dim": corpus.dim,
        "ntotal": int(index.ntotal),
        "nprobe": cfg.nprobe,
        "candidates": cfg.candidates,
        "train_sample": sample_size,
        "seed": trained_meta.get("seed", cfg.seed) if cfg.trained_from else cfg.seed,
        "trained_sha256": trained,
        "encoder": corpus.encoder.to_dict(),
        "embedding_sets": corpus.describe(),
        "shard_offsets": corpus.shard_offsets().tolist(),
        "shard_labels": corpus.labels,
        "bitextmine_version": __version__,
        "seconds": round(time.time() - started, 2),
    }
    return save_index(index, meta, out_dir)
