"""What `prepare` does to a document's text and its sentences: normalisation, then the rules.

Normalisation (of the whole document, before segmentation): Unicode NFC (not NFKC, which
would rewrite the full-width punctuation of Chinese and Japanese); line and paragraph
separators (``\\r``, U+2028, U+2029, U+0085) become line breaks, every other white space
(tabs, no-break and thin spaces) a plain space; control and format characters go (zero-width
spaces, soft hyphens, byte order marks, bidirectional marks), except the zero-width joiner
and non-joiner that Indic and Persian spelling needs. Each sentence's runs of spaces become
one, and its ends are trimmed.

The rules, in order; a sentence is charged to the first it fails:

- ``length``: under ``min_chars`` or over ``max_chars`` characters, a CJK, kana or Hangul
  character counting three (the filter's ``text_length``, so the bounds mean about the
  same in every script);
- ``letters``: under ``min_letters`` of its visible characters are letters (the filter's
  ``letter_share``): numbers, prices, dates, tables;
- ``boilerplate``: the marks of web pages rather than prose: code (``{``, ``}``, ``</``,
  ``=>``, ``function(``), "lorem ipsum", "javascript", navigation (three or more ``|``,
  ``»``, ``›``, ``•`` or ``·`` separators), or URLs and e-mail addresses making up half of it;
- ``lid``: the language detector (the filter's py3langid, restricted to the filter's
  candidate languages and L) gives L a probability under ``min_lang_prob``;
- ``dedup``: the same text was written before in this run (``dedup.py``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from bitextmine import defaults
from bitextmine.filter import letter_share, text_length
from bitextmine.filter.langid import LanguageIdentifier, detector_keys
from bitextmine.languages import language_key

_LINE_BREAKS = re.compile("\r\n|[\r\u2028\u2029\u0085]")
_ODD_SPACES = re.compile(r"[^\S\n ]")  # white space other than the line break and the plain space
# Cc and Cf characters other than tab, line feed, ZWNJ and ZWJ (Indic and Persian spelling)
_INVISIBLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b\u200e\u200f\u202a-\u202e"
                        "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]")


def normalise_document(text: str) -> str:
    """NFC, line breaks unified, white space made plain, invisible characters removed (see above)."""
    if not text.isascii():
        text = unicodedata.normalize("NFC", text)
    if _INVISIBLE.search(text) is not None:
        text = _INVISIBLE.sub("", text)
    if "\r" in text or not text.isascii():
        text = _LINE_BREAKS.sub("\n", text)
    return _ODD_SPACES.sub(" ", text)  # runs of spaces are joined sentence by sentence (tidy_sentence)


def tidy_sentence(sentence: str) -> str:
    """One space between words, none at the ends."""
    return " ".join(sentence.split()) if "  " in sentence or "\n" in sentence else sentence.strip()


_CODE = re.compile(r"[{}]|</|=>|function\s*\(|lorem ipsum|javascript", re.IGNORECASE)
# what any of the marks below needs (most sentences have none: one search settles them)
_MAYBE = re.compile(r"[{}|»›•·@]|</|=>|[Ii]psum|IPSUM|[Jj]ava[Ss]cript|JAVASCRIPT|function|://|www\.")
_NAVIGATION = re.compile(r"(?:^|\s)[|»›•·](?=\s|$)")
_LINKS = re.compile(r"(?:https?://|www\.)\S+|[\w.+-]+@[\w-]+\.[\w.-]+", re.IGNORECASE)


def is_boilerplate(sentence: str) -> bool:
    """Code, navigation, or links taking half the sentence (see the module docs)."""
    if _MAYBE.search(sentence) is None:
        return False
    if _CODE.search(sentence) is not None or len(_NAVIGATION.findall(sentence)) >= 3:
        return True
    if ("://" in sentence or "www." in sentence or "@" in sentence) \
            and 2 * sum(len(m) for m in _LINKS.findall(sentence)) >= len(sentence):
        return True
    return False


@dataclass(frozen=True)
class SentenceRules:
    """The settings of the rules that judge a sentence by itself."""

    min_chars: int = defaults.PREPARE_MIN_CHARS
    max_chars: int = defaults.PREPARE_MAX_CHARS
    min_letters: float = defaults.PREPARE_MIN_LETTER_SHARE
    skip: tuple[str, ...] = ()

    def first_failed(self, sentence: str) -> str | None:
        """The first rule ``sentence`` fails among length, letters and boilerplate, or None."""
        if "length" not in self.skip and not self.min_chars <= text_length(sentence) <= self.max_chars:
            return "length"
        if "letters" not in self.skip and letter_share(sentence) < self.min_letters:
            return "letters"
        if "boilerplate" not in self.skip and is_boilerplate(sentence):
            return "boilerplate"
        return None


class LanguageCheck:
    """Whether sentences are in ``lang``: the probability the detector gives it among the
    candidate languages, against ``min_prob``. A language the detector does not know passes
    every sentence (``supported`` is False)."""

    def __init__(self, lang: str, min_prob: float):
        self.key = language_key(lang, "--lang")
        self.supported = self.key in detector_keys()
        self.min_prob = min_prob
        self._identifier = None
        if self.supported:
            candidates = (set(defaults.FILTER_LID_CANDIDATES) & detector_keys()) | {self.key}
            self._identifier = LanguageIdentifier(candidates)
            self._column = self._identifier.keys.index(self.key)

    def probabilities(self, sentences: Sequence[str]):
        """P(lang | sentence) among the candidates, for each sentence (numpy array)."""
        import numpy as np  # numpy: 0.19 s, when language ID runs (prepare runs without it)

        if self._identifier is None or not sentences:
            return np.ones(len(sentences))
        scores, _ = self._identifier.scores(sentences)
        scores -= scores.max(axis=1, keepdims=True)
        likelihood = np.exp(scores, dtype=np.float64)
        return likelihood[:, self._column] / likelihood.sum(axis=1)

    def keeps(self, sentences: Sequence[str]) -> list[bool]:
        return (self.probabilities(sentences) >= self.min_prob).tolist()
