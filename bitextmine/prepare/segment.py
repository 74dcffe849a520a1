"""Sentence segmentation: sentencex, with a thin layer for the boundaries it was measured to miss.

sentencex (Wikimedia's rule-based segmenter, ~300 languages, compiled) was chosen by
``benchmarks/prepare_segmentation.py`` over pysbd, sentence-splitter and blingfire
(benchmarks/RESULTS.md). A paragraph (a line of the document) is never joined with the
next: crawl text puts block elements on lines of their own. Within a paragraph the layer
adds the boundaries that the library's own errors on news and Tatoeba text showed it misses,
and no others:

- a straight quote that opens the next sentence (``… friends. "It is …``) is left
  dangling at the end of the previous one when the quotation runs on past the sentence,
  and an unbalanced quote hides every boundary up to the next quote: quotes are read as
  neutral characters, and the quote goes with the sentence it opens or closes;
- a sentence that starts with a digit after ``.`` (German, Czech) or after ``。！？``;
- ``……`` ending a Chinese or Japanese sentence;
- ``|`` and a lone Latin ``I`` written for the danda in Hindi (``।`` itself is the library's);
- ``etc.``-like abbreviations that end sentences (``usw.``, ``atd.``) before a capital;
- German words the library lists as abbreviations though they end sentences (``mich``, ``mag``).

A lone short abbreviation cut off by the library (``M.``, ``डॉ.``) is joined to what follows.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

# a straight quote, whose direction only its neighbours tell; read as a neutral letter-like mark
_STRAIGHT_QUOTE = '"'
_NEUTRAL_QUOTE = "\u2033"  # double prime: the library ignores it, and it has the quote's length
_OPENING = "\"„“«‘'(["  # a quote or bracket after white space at a piece's end opens the next sentence
_CLOSING = "\"”’»)]」』）"

_WIDE = r"\u2e80-\u9fff\uf900-\ufaff\u3000-\u303f"  # CJK and their punctuation
_DEVANAGARI = r"\u0900-\u097f"
# abbreviations that precede a number (so "word. 20" after them is no boundary), lower case
_BEFORE_NUMBERS = frozenset(
    "abb abs approx art bzw ca cca čís č env fig ggf inkl jan kap max min mil mio mld mrd no nr okt ok pp p resp "
    "roč s str sv tel tis tys vgl vol zzgl".split())
# abbreviations that often end a sentence: followed by a capital, they do
_FINAL_ABBREVIATIONS = ("etc", "usw", "atd", "apod", "aj", "ecc", "itd", "itp")
# words the library takes for abbreviations, measured to end sentences (language -> words)
_WORDS_NOT_ABBREVIATIONS = {"de": ("mich", "mag"), "cs": ("tu", "slov"), "fr": ("vol", "art")}


def _capital_next(text: str, match: re.Match) -> bool:
    """Whether the next letter (after an opening quote) is a capital, or of a script without case."""
    for char in text[match.end():match.end() + 3]:
        if char.isalpha():
            return char.isupper() or not char.islower()
    return False


def _word_before_number(text: str, match: re.Match) -> bool:
    """"word. 20": a word that is not an abbreviation of those written before numbers."""
    return match.group(1).lower() not in _BEFORE_NUMBERS


def _acronym_before_capital(text: str, match: re.Match) -> bool:
    """"… for ODS. Then": an acronym (not a Roman numeral: "Karel IV. Praha") then a capital."""
    word = match.group(1)
    return word.isupper() and word.strip("IVXLCDM") != "" and _capital_next(text, match)


def _always(text: str, match: re.Match) -> bool:
    return True


# (pattern, check of each match): a cut at the end of each match that passes its check
_EXTRA_BOUNDARIES = [
    # a digit after the end of a word (ordinals "3. 10. 2013" are numbers, not words)
    (re.compile(r"([^\W\d_]{2,})[.!?][\"”’»]?\s+(?=\d)"), _word_before_number),
    # 。！？ then a digit or a Latin letter, which the library takes for the same sentence
    (re.compile(rf"(?<=[。！？])[{re.escape(_CLOSING)}]*(?=[0-9A-Za-z０-９])"), _always),
    # …… after a CJK character, before another
    (re.compile(rf"(?<=[{_WIDE}])(?:……|\.\.\.|…)(?=\s*[{_WIDE}\w])"), _always),
    # the danda written as | or I
    (re.compile(rf"(?<=[{_DEVANAGARI}])\s?(?:\||\s[I])(?=\s+[\"“‘'{_DEVANAGARI}])"), _always),
    (re.compile(r"\b(?:" + "|".join(_FINAL_ABBREVIATIONS) + r")\.\s+", re.IGNORECASE), _capital_next),
    # (lower-case Latin, Cyrillic and Greek letters left out of the match: most words never try)
    (re.compile(r"\b([^\W\d_a-zß-ÿа-яёα-ω]{2,})\.\s+"), _acronym_before_capital),
]


def _word_boundaries(lang: str) -> re.Pattern | None:
    words = _WORDS_NOT_ABBREVIATIONS.get(lang)
    return re.compile(r"\b(?:" + "|".join(words) + r")\.\s+") if words else None


class Segmenter:
    """Sentences of a text in one language (an ISO 639-1 code where there is one: ``de``, ``zh``)."""

    def __init__(self, lang: str):
        import sentencex

        self.lang = lang
        self._split = sentencex.segment
        words = _word_boundaries(lang)
        self._patterns = _EXTRA_BOUNDARIES + ([(words, _capital_next)] if words is not None else [])

    def sentences(self, text: str) -> list[str]:
        """The sentences of ``text``, stripped, in order; each line a paragraph of its own."""
        out: list[str] = []
        for paragraph in text.split("\n"):
            if paragraph.strip():
                out.extend(self._paragraph(paragraph))
        return out

    def _paragraph(self, text: str) -> Iterator[str]:
        cuts = set(self._library_cuts(text))
        for pattern, check in self._patterns:
            cuts.update(m.end() for m in pattern.finditer(text) if check(text, m))
        cuts.discard(0)
        cuts.discard(len(text))
        pieces, start, pending = [], 0, ""
        for cut in sorted(cuts) + [len(text)]:
            piece = pending + text[start:cut]
            start = cut
            if _lone_abbreviation(piece) and cut < len(text):
                pending = piece  # "M." or "डॉ." cut off: it belongs to what follows
                continue
            pending = ""
            pieces.append(piece)
        for piece in pieces:
            piece = piece.strip()
            if piece:
                yield piece

    def _library_cuts(self, text: str) -> Iterator[int]:
        """Where the library ends sentences, read with straight quotes as neutral marks; each cut
        then moved past a closing quote, or before an opening one."""
        neutral = text.replace(_STRAIGHT_QUOTE, _NEUTRAL_QUOTE) if _STRAIGHT_QUOTE in text else text
        position = 0
        for piece in self._split(self.lang, neutral):
            position += len(piece)
            yield _place_quote(text, position)


def _place_quote(text: str, cut: int) -> int:
    """A cut before ``"`` that closes the sentence (``no." Then``: right after it and before a
    space; in unspaced scripts, while a quote is open) moves past it; a cut after white space
    and an opening quote (``no. "Then``) moves before the quote."""
    if 0 < cut < len(text) and text[cut] == _STRAIGHT_QUOTE and not text[cut - 1].isspace():
        if cut + 1 == len(text) or text[cut + 1].isspace() or text.count(_STRAIGHT_QUOTE, 0, cut) % 2:
            return cut + 1  # right after the sentence, then a space or the end (or, unspaced, a quote open)
    back = cut
    while back > 0 and text[back - 1] in _OPENING:
        back -= 1
    if back < cut and back > 0 and text[back - 1].isspace():
        return back
    return cut


_LONE_ABBREVIATION = re.compile(r"\s*[^\W\d_]{1,3}\.\s*")


def _lone_abbreviation(piece: str) -> bool:
    """A piece that is one word of at most three letters and a period (``M.``, ``Dr.``, ``डॉ.``)."""
    return _LONE_ABBREVIATION.fullmatch(piece) is not None and not piece.strip()[0].islower()
