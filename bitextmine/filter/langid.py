"""Language identification for the filter, with the model bundled in its package.

The detector is py3langid (Lui & Baldwin's langid.py, numpy port; 97 languages, model
inside the wheel, nothing downloaded). It was chosen over lingua and pycld2 by
``benchmarks/langid_compare.py`` on the Tatoeba test files (benchmarks/RESULTS.md).

Languages are ISO 639 codes compared by their key (``bitextmine.languages``): a language
counts as its macrolanguage, so Mandarin, Cantonese and Wu are all ``zh`` and Bokmål is
``no``, both for what is asked and for what is detected.

Speed: the naive Bayes model is a byte automaton (one feature per byte) followed by a
product of the feature counts with a table. Both run here on many texts at once with
numpy: the automaton advances one byte of every text per step, and the counts of a whole
batch meet the table in one product. The scores are py3langid's own, which
``tests/test_filter.py`` checks text by text.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache

from bitextmine import defaults
from bitextmine.filter.text import normalise
from bitextmine.languages import iso_language, key_of, language_key

log = logging.getLogger(__name__)
_WARNED: set[str] = set()  # languages named in a warning already: once a process, not once a round

_BATCH = 1024  # texts advanced together through the automaton; bounds the padding memory
_MIN_BATCH = 256  # fewer texts a step would cost more in numpy calls than the padding saves


@lru_cache(maxsize=1)
def _model():
    from py3langid.langid import MODEL_FILE  # py3langid: 0.22 s, when language ID runs
    from py3langid.langid import LanguageIdentifier as _Identifier  # py3langid: 0.22 s, when language ID runs

    return _Identifier.from_model_file(MODEL_FILE)


@lru_cache(maxsize=1)
def detector_keys() -> frozenset[str]:
    """The languages the detector knows, as language keys."""
    return frozenset(_label_keys(_model().nb_classes))


def _label_keys(labels: Iterable[str]) -> list[str]:
    keys = []
    for label in labels:
        lang = iso_language(label)
        keys.append(key_of(lang) if lang is not None else label)
    return keys


def lid_text(text: str) -> str:
    """What the detector reads: the text as py3langid prepares it (lower case when all
    upper case, NFC)."""
    if text.isupper():
        text = text.lower()
    return text if text.isascii() else unicodedata.normalize("NFC", text)


def _batches(lengths) -> Iterator[tuple[int, int]]:
    """(start, end) of batches of texts sorted by decreasing byte length: up to ``_BATCH``
    texts, cut early (past ``_MIN_BATCH``) where a text is under 3/4 of the batch's first, so
    that a few long texts do not pad many short ones."""
    import numpy as np  # numpy: 0.19 s, when language ID runs

    start = 0
    while start < len(lengths):
        end = min(start + _BATCH, len(lengths))
        shorter = np.flatnonzero(4 * lengths[start + _MIN_BATCH:end] < 3 * lengths[start])
        if len(shorter):
            end = start + _MIN_BATCH + int(shorter[0])
        yield start, end
        start = end


class LanguageIdentifier:
    """Naive Bayes language ID restricted to ``candidates`` (language keys).

    Restricting the labels is what keeps short clean sentences: with all 142 labels of the
    model, a short French sentence is as likely to come out Occitan, Latin or Shona as
    French, languages nobody mines against. The candidates are the languages asked for plus
    the widely written ones (``defaults.FILTER_LID_CANDIDATES``), so that a sentence in
    another major language, the usual wrong-language noise, is still recognised.
    """

    def __init__(self, candidates: Iterable[str]):
        import numpy as np  # numpy: 0.19 s, when language ID runs
        import scipy.sparse  # noqa: F401  (loaded with the model, not on the first batch)

        model = _model()
        wanted = set(candidates)
        label_keys = _label_keys(model.nb_classes)
        columns = [i for i, key in enumerate(label_keys) if key in wanted]
        self.keys = sorted({label_keys[i] for i in columns})
        index = {key: i for i, key in enumerate(self.keys)}
        self._column_key = np.array([index[label_keys[i]] for i in columns], dtype=np.intp)
        self._table = np.ascontiguousarray(np.asarray(model.nb_ptc)[:, columns], dtype=np.float32)
        self._prior = np.asarray(model.nb_pc, dtype=np.float32)[columns]
        self._next = np.frombuffer(model.tk_nextmove, dtype=np.uint32)
        self._rowbase = np.asarray(model._rowbase, dtype=np.int64)
        self._output = np.asarray(model.tk_output, dtype=np.int32)

    def scores(self, texts: Sequence[str]):
        """(len(texts), len(self.keys)) log-likelihoods, the best label of each language,
        and the byte length of each text (what the detector read)."""
        import numpy as np  # numpy: 0.19 s, when language ID runs

        encoded = [lid_text(t).encode("utf-8", errors="surrogatepass") for t in texts]
        lengths = np.fromiter((len(b) for b in encoded), dtype=np.int64, count=len(encoded))
        out = np.empty((len(encoded), len(self.keys)), dtype=np.float32)
        order = np.argsort(-lengths, kind="stable")  # long first: a batch pads to its first
        for start, end in _batches(lengths[order]):
            rows = order[start:end]
            out[rows] = self._batch_scores([encoded[i] for i in rows], lengths[rows])
        return out, lengths

    def _batch_scores(self, encoded: list[bytes], lengths):
        """Scores of texts sorted by decreasing length."""
        import numpy as np  # numpy: 0.19 s, when language ID runs

        n, width = len(encoded), int(lengths[0]) if len(encoded) else 0
        column = np.zeros((width, n), dtype=np.uint8)  # byte t of every text in row t
        flat = np.frombuffer(b"".join(encoded), dtype=np.uint8)
        text_of_byte = np.repeat(np.arange(n), lengths)
        position = np.arange(len(flat)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        column[position, text_of_byte] = flat
        active = np.searchsorted(-lengths, -np.arange(width), side="right")  # texts longer than t
        state = np.zeros(n, dtype=np.int64)
        features = np.full((width, n), -1, dtype=np.int32)
        for t in range(width):
            k = active[t]
            state[:k] = self._next[self._rowbase[state[:k]] + column[t, :k]]
            features[t, :k] = self._output[state[:k]]
        return self._naive_bayes(features, n)

    def _naive_bayes(self, features, n: int):
        """log1p(feature counts) . table + prior, per text, reduced to one score per language.

        Counting sorts each text's features in its own row (short sorts, in cache) rather
        than the features of the whole batch at once: on news-length lines this step took
        two thirds of the time with one global sort."""
        import numpy as np  # numpy: 0.19 s, when language ID runs
        from scipy.sparse import csr_matrix  # scipy: 0.44 s, when language ID runs

        width = features.shape[0]
        rows = np.sort(features.T, axis=1)  # the padding (-1) first, then a text's features in order
        flat = rows.ravel()
        starts = np.flatnonzero(flat >= 0)
        new_run = np.ones(len(starts), dtype=bool)  # a feature differs from the one before, or starts a row
        new_run[1:] = (flat[starts[1:]] != flat[starts[1:] - 1]) | (starts[1:] % width == 0)
        starts = starts[new_run]
        ends = np.minimum(np.append(starts[1:], len(flat)), (starts // width + 1) * width)
        per_text = np.bincount(starts // width, minlength=n)
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(per_text, out=indptr[1:])
        weights = csr_matrix((np.log1p((ends - starts).astype(np.float32)), flat[starts], indptr),
                             shape=(n, self._table.shape[0]))
        label_scores = weights @ self._table + self._prior
        label_scores[per_text == 0] = np.finfo(np.float32).min  # no feature: no evidence
        out = np.full((n, len(self.keys)), np.finfo(np.float32).min, dtype=np.float32)
        for column, key in enumerate(self._column_key):  # a language scores as its best label
            np.maximum(out[:, key], label_scores[:, column], out=out[:, key])
        return out

    def clearly_other(self, texts: Sequence[str], want: str) -> list[bool]:
        """Whether another candidate is ``FILTER_LID_MARGIN`` nats more likely than ``want``
        for each text: a verdict the evidence, not the argmax, makes (a short sentence or
        one full of names tips the argmax without saying much)."""
        scores, _ = self.scores(texts)
        margin = scores.max(axis=1) - scores[:, self.keys.index(want)]
        return (margin > defaults.FILTER_LID_MARGIN).tolist()


_ASCII_DIGITS = b"0123456789"


def lid_key(text: str) -> bytes:
    """The text in UTF-8 without its ASCII digits: what language ID decides on and caches by.
    Digits say nothing about the language, and without them the same sentence with another
    number, frequent in mined data, is decided once. (UTF-8 holds ASCII bytes only for
    ASCII characters, so deleting the digit bytes is safe in any script; bytes, because only
    the texts not yet decided need decoding.)"""
    return text.encode().translate(None, _ASCII_DIGITS)


_WORD = re.compile(r"\w+")
# lower-case parts of names: von der Leyen, van Gogh, de Gaulle, bin Salman
_NAME_PARTICLES = frozenset("al bin ben da das de del della den der des di dos du ibn la le ter van von zu".split())


def without_names(text: str, other: str) -> str:
    """``text`` without the words it shares with ``other``, capitalised words and the particles
    before them: names, numbers and borrowed terms, which say little about the language of a
    side and mislead the detector on short lines ("Erdoğan visits Vienna" reads as Turkish)."""
    shared = set(normalise(text).split()) & set(normalise(other).split())
    words = list(_WORD.finditer(text))
    drop = [w.group()[0].isupper() or normalise(w.group()) in shared for w in words]
    for i in range(len(words) - 2, -1, -1):  # a particle is part of the name that follows it
        drop[i] = drop[i] or (drop[i + 1] and words[i].group() in _NAME_PARTICLES)
    kept, end = [], 0
    for word, dropped in zip(words, drop, strict=True):
        if dropped:
            kept.append(text[end:word.start()])
            end = word.end()
    return "".join(kept) + text[end:]


class PairLanguages:
    """Language ID of both sides of pairs. A side fails when another language is clearly
    more likely, both for its text and for its text without names (``without_names``).
    Decisions are cached by ``lid_key`` and made for many texts at a time."""

    def __init__(self, src_lang: str | None, tgt_lang: str | None):
        known = detector_keys()
        wanted = [language_key(lang, option) if lang is not None else None
                  for option, lang in (("--src-lang", src_lang), ("--tgt-lang", tgt_lang))]
        # a side whose language the detector does not know passes (and is counted)
        self.unsupported_sides = sum(want is not None and want not in known for want in wanted)
        for lang, want in zip((src_lang, tgt_lang), wanted, strict=True):
            if want is not None and want not in known and want not in _WARNED:
                _WARNED.add(want)
                log.warning("the language detector does not know %s: language ID passes that side", lang)
        self._wanted = [want if want in known else None for want in wanted]
        candidates = (set(defaults.FILTER_LID_CANDIDATES) & known) | {w for w in self._wanted if w}
        self._identifier = LanguageIdentifier(candidates)
        self._other: list[dict[bytes, bool]] = [{}, {}]  # per side: lid_key -> clearly another language

    def _clearly_other(self, side: int, keys: list[bytes]) -> list[bool]:
        decided = self._other[side]
        new = [key for key in set(keys) if key not in decided]
        if new:
            verdicts = self._identifier.clearly_other([key.decode() for key in new], self._wanted[side])
            decided.update(zip(new, verdicts, strict=True))
        return [decided[key] for key in keys]

    def matches(self, pairs) -> list[bool]:
        """Whether each pair has both sides in their languages."""
        ok = [True] * len(pairs)
        for side, want in enumerate(self._wanted):
            if want is None:
                continue
            texts = [p.src for p in pairs] if side == 0 else [p.tgt for p in pairs]
            failing = [i for i, other in enumerate(self._clearly_other(side, list(map(lid_key, texts)))) if other]
            if not failing:
                continue
            partners = [p.tgt for p in pairs] if side == 0 else [p.src for p in pairs]
            reduced = [lid_key(without_names(texts[i], partners[i])) for i in failing]
            for i, other in zip(failing, self._clearly_other(side, reduced), strict=True):
                ok[i] = ok[i] and not other
        return ok
