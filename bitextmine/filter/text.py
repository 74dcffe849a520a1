"""What the rules read of a text: its normal form, numbers, URLs, letters, length and tokens,
and the comparisons of two sides (near copies, the same numbers). Plain functions, most with
an ASCII fast path at C speed (``bytes.translate``): the filter calls them for every pair."""

from __future__ import annotations

import re
import unicodedata

from bitextmine.filter.numerals import SCALED_NUMBER, numbers_agree

_URL = re.compile(r"(?:https?://|www\.)[^\s<>\"'“”„«»‘’‚‹›]+|[\w.+-]+@[\w-]+\.[\w.-]+", re.IGNORECASE)
_NUMBER = re.compile(r"\d(?:[\d.,'\u00a0\u202f]*\d)?")  # 1,000 / 1.000 / 1 000 (narrow spaces)
_WORD = re.compile(r"\w+")


# ASCII characters that are not word characters (\w), mapped to spaces with bytes.translate
_ASCII_NOT_WORD = bytes(c for c in range(128) if not (chr(c).isalnum() or chr(c) == "_"))
_ASCII_NOT_WORD_TO_SPACE = bytes.maketrans(_ASCII_NOT_WORD, b" " * len(_ASCII_NOT_WORD))


def normalise(text: str) -> str:
    """For comparisons: NFKC, case-folded, word characters only, single spaces."""
    if text.isascii():  # the same at C speed: NFKC does nothing, casefold is lower
        return " ".join(text.lower().encode().translate(_ASCII_NOT_WORD_TO_SPACE).decode().split())
    return " ".join(_WORD.findall(unicodedata.normalize("NFKC", text).casefold()))


_NON_DIGIT = re.compile(r"\D")
_NOT_LETTER = re.compile(r"[\W\d_]")
# scripts written without spaces: CJK, kana, Hangul, Thai, Lao, Khmer, Myanmar
_UNSPACED = re.compile(r"[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def numbers(text: str) -> set[str]:
    """Digit runs with their separators dropped: 1,000 / 1.000 / 1 000 -> 1000."""
    return {n if n.isdigit() else _NON_DIGIT.sub("", n) for n in _NUMBER.findall(text)}


def urls(text: str) -> set[str]:
    if "://" not in text and "www." not in text and "@" not in text:
        return set()
    return {u.rstrip(".,;:!?)").rstrip("/").lower() for u in _URL.findall(text)}  # a closing / is the same address


# ASCII characters that are not letters, and ASCII white space, as bytes to delete with
# bytes.translate (C speed)
_ASCII_NOT_LETTER = bytes(c for c in range(128) if not chr(c).isalpha())
_ASCII_SPACE = bytes(c for c in range(128) if chr(c).isspace())
_SPACE = re.compile(r"\s")


_NON_ASCII_NOT_WORD = re.compile(r"[^\w\s\x00-\x7f]")  # symbols, punctuation, combining marks
# CJK, kana and Hangul: a character is a syllable or a word, where a Latin letter is a sound
_WIDE = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def letter_share(text: str) -> float:
    """Share of letters (word characters other than digits and _, and combining marks such
    as Devanagari vowel signs) among the visible (not white space) characters, a CJK, kana
    or Hangul character counting as three (as in ``text_length``): a Chinese side with a
    few numbers is no junk, and spaces neither help nor hurt."""
    data = text.encode()
    # fast path: drop the ASCII non-letters; when all that is left is letters, count it
    rest = data.translate(None, _ASCII_NOT_LETTER)
    visible = len(text) - len(data) + len(data.translate(None, _ASCII_SPACE))
    if text.isascii():
        return len(rest) / visible if visible else 0.0
    letters = rest.decode()
    if letters.isalpha() and _WIDE.search(letters) is None:
        return len(letters) / visible
    letters = _NOT_LETTER.sub("", text)
    marks = sum(unicodedata.category(c)[0] == "M" for c in _NON_ASCII_NOT_WORD.findall(text))
    visible = _SPACE.sub("", text)
    weight = len(visible) + 2 * len(_WIDE.findall(visible))
    return (len(letters) + 2 * len(_WIDE.findall(letters)) + marks) / weight if weight else 0.0


def text_length(text: str) -> int:
    """Characters, a CJK, kana or Hangul character counting as three: lengths comparable
    across scripts (UTF-8 bytes would count a Cyrillic letter twice)."""
    if text.isascii():
        return len(text)
    return len(text) + 2 * len(_WIDE.findall(text))


def token_count(text: str) -> int:
    # scripts without spaces count characters, so the bounds mean about the same
    count = len(text.split())
    if text.isascii() or _UNSPACED.search(text) is None:
        return count
    return max(count, len(_UNSPACED.findall(text)))


_NEAR_COPY_PROBES = 4  # words of one side looked up in the other before building word sets (+1 per 8 words)


def near_copy(a: str, b: str, threshold: float) -> bool:
    """Normalised texts of about the same length (within 2x in characters), with at least
    three distinct words each, whose word sets overlap by ``threshold`` (Jaccard) or more."""
    if 2 * min(len(a), len(b)) < max(len(a), len(b)):
        return False
    # Before any set is built (most pairs are translations, far from copies): each distinct
    # word of b missing from a caps the overlap further, at most words_a / (words_a + missing);
    # b's first few words settle most pairs (at 0.9, one word in nine missing)
    words_a, padded, missing = a.count(" ") + 1, f" {a} ", set()
    probes = _NEAR_COPY_PROBES + words_a // 8
    for word in b.split(" ", probes)[:probes]:
        if f" {word} " not in padded:
            missing.add(word)
            if words_a / (words_a + len(missing)) < threshold:
                return False
    x = set(a.split())
    if len(x) < 3:  # too short to call a near copy by overlap
        return False
    y = set(b.split())
    if len(y) < 3 or min(len(x), len(y)) / max(len(x), len(y)) < threshold:  # the overlap is at most this ratio
        return False
    shared = len(x & y)
    return shared / (len(x) + len(y) - shared) >= threshold


def same_numbers(src: str, tgt: str) -> bool:
    """Both sides write the same numbers (``bitextmine.filter.numerals``). The same digits on
    both sides, or digits on one side only (the other spelled them out: "at 2:30" / "a las
    dos y media"), settle it without reading the numbers, unless both sides give a number a
    scale word ("25 milionů" / "25 billion")."""
    a, b = _NUMBER.findall(src), _NUMBER.findall(tgt)
    if not a or not b:  # on one side only
        return True
    if a == b and not all(SCALED_NUMBER.search(unicodedata.normalize("NFC", side)) for side in (src, tgt)):
        return True
    return numbers_agree(src, tgt)  # not the digits alone: 3.2 and 32 are two numbers
