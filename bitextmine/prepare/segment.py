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
- words the library lists as abbreviations though they end sentences (German ``mich``, ``mag``,
  English ``May``).

A lone short abbreviation cut off by the library (``M.``, ``Dr.``, ``डॉ.``) is joined to what
follows, and so is a cut after an ordinal (``ze 16. října``; ``im 19. Jahrhundert``, told by the
word before the number) or an initial before a capital (``que M. Dupont``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import sentencex

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
_WORDS_NOT_ABBREVIATIONS = {"de": ("mich", "mag", "Bart", "Art"), "cs": ("tu", "slov"), "fr": ("vol", "art"),
                            "en": ("May",)}


def _capital_next(text: str, position: int) -> bool:
    """Whether the next letter (after an opening quote) is a capital, or of a script without case."""
    for char in text[position:position + 3]:
        if char.isalpha():
            return char.isupper() or not char.islower()
    return False


def _word_before(text: str, end: int) -> str:
    """The letters right before ``end``."""
    start = end
    while start > 0 and text[start - 1].isalpha():
        start -= 1
    return text[start:end]


# where a sentence may end: ., ! or ? (a closing quote), then white space
_PUNCTUATION_SPACE = re.compile(r"[.!?][\"”’»]?\s+")


def _cut_after_word(text: str, match: re.Match, not_abbreviations: frozenset[str]) -> bool:
    """Whether a ``.`` (``!``, ``?``) and the space after it end a sentence that the library ran on:

    - a digit follows a word of two letters or more (ordinals "3. 10. 2013" follow numbers),
      other than an abbreviation written before numbers ("ca. 20", "Nr. 5");
    - a capital follows an abbreviation that ends sentences ("etc."), a word of the language
      the library takes for an abbreviation ("mich."), or an acronym ("ODS."; not a Roman
      numeral: "Karel IV. Praha")."""
    word = _word_before(text, match.start())
    if len(word) < 2:
        return False
    after = match.end()
    if text[after].isdigit():
        return word.lower() not in _BEFORE_NUMBERS
    if text[match.start()] != "." or not _capital_next(text, after):
        return False
    return word.lower() in _FINAL_ABBREVIATIONS or word in not_abbreviations \
        or (word.isupper() and word.strip("IVXLCDM") != "")


# (strings one of which must be in the text for the pattern to be worth running, pattern): a
# cut at the end of each match
_SCRIPT_BOUNDARIES = [
    # 。！？ then a digit or a Latin letter, which the library takes for the same sentence
    (("。", "！", "？"), re.compile(rf"(?<=[。！？])[{re.escape(_CLOSING)}]*(?=[0-9A-Za-z０-９])")),
    # an ellipsis after a CJK character, before another
    (("…", "..."), re.compile(rf"(?<=[{_WIDE}])(?:……|…|\.\.\.)(?=\s*[{_WIDE}\w])")),
    # the danda written as | or I
    (("|", " I "), re.compile(rf"(?<=[{_DEVANAGARI}])\s?(?:\||\s[I])(?=\s+[\"“‘'{_DEVANAGARI}])")),
]


class Segmenter:
    """Sentences of a text in one language (an ISO 639-1 code where there is one: ``de``, ``zh``)."""

    def __init__(self, lang: str):
        self.lang = lang
        self._split = sentencex.segment
        self._not_abbreviations = frozenset(_WORDS_NOT_ABBREVIATIONS.get(lang, ()))

    def sentences(self, text: str) -> list[str]:
        """The sentences of ``text``, stripped, in order; each line a paragraph of its own."""
        out: list[str] = []
        for paragraph in text.split("\n"):
            if paragraph.strip():
                out.extend(self._paragraph(paragraph))
        return out

    def _paragraph(self, text: str) -> Iterator[str]:
        cuts = set(self._library_cuts(text))
        for match in _PUNCTUATION_SPACE.finditer(text):
            if match.end() not in cuts and match.end() < len(text) \
                    and _cut_after_word(text, match, self._not_abbreviations):
                cuts.add(match.end())
        for triggers, pattern in _SCRIPT_BOUNDARIES:
            if any(trigger in text for trigger in triggers):
                cuts.update(m.end() for m in pattern.finditer(text))
        cuts.discard(0)
        cuts.discard(len(text))
        pieces, start, pending = [], 0, ""
        for cut in sorted(cuts) + [len(text)]:
            piece = pending + text[start:cut]
            start = cut
            if cut < len(text) and (_lone_abbreviation(piece) or self._runs_on(piece, text, cut)):
                pending = piece  # "M.", "Dr.", "im 19." cut off: it belongs to what follows
                continue
            pending = ""
            pieces.append(piece)
        for piece in pieces:
            piece = piece.strip()
            if piece:
                yield piece

    def _runs_on(self, piece: str, text: str, cut: int) -> bool:
        """Whether a sentence cut after ``piece`` runs on: after a number and ``.`` (an ordinal)
        before a lower-case letter ("ze 16. října"), or where the word before the number says
        it is one ("im 19. Jahrhundert"); after an initial before a capital ("M. Dupont")."""
        tail = piece.rstrip()
        if not tail.endswith(".") or len(tail) < 2 or not tail[-2].isalnum():
            return False
        ending = _ORDINAL_OR_INITIAL.search(tail[-40:])
        if ending is None:
            return False
        following = text[cut:].lstrip()[:1]
        if not following.isalpha():
            return False
        if ending.group("initial"):
            return ending.group("initial").isupper() and following.isupper()
        return following.islower() or ending.group("word").lower() in _BEFORE_ORDINALS.get(self.lang, ())

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
# Devanagari's: a letter and a vowel sign is as often a word (हाँ.) as an abbreviation
_DEVANAGARI_ABBREVIATION = re.compile(r"\s*(?:डॉ|प्रो|श्री|श्रीमती|सुश्री|मि|ई|पू|सं|क्र|कु)\.\s*")
# a piece's end that a sentence may run on past: "word 19." (an ordinal) or " M." (an initial)
_ORDINAL_OR_INITIAL = re.compile(r"(?:(?P<word>\w+)\s+\d{1,3}|(?:^|\s)(?P<initial>[^\W\d_]))\.$")
# words before a number that make it an ordinal in the languages that write one with a period
_BEFORE_ORDINALS = {
    "de": frozenset("am im zum vom beim zur ins der die das den dem des seit bis ab vor nach jeden jede "
                    "jedes ihr ihre ihrem ihren sein seine seinem seinen".split()),
    "cs": frozenset("ze od do v ve na k ke po před dne až o s se".split()),
}


def _lone_abbreviation(piece: str) -> bool:
    """A piece that is one word of at most three letters and a period (``M.``, ``Dr.``)."""
    if _DEVANAGARI_ABBREVIATION.fullmatch(piece):  # its vowel signs are not \w in Python
        return True
    return _LONE_ABBREVIATION.fullmatch(piece) is not None and not piece.strip()[0].islower()
