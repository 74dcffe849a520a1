"""Languages as the toolkit names them: ISO 639 codes, their names and macrolanguages.

A language is named by any ISO 639 code, 639-1 or 639-3 (``de``, ``deu``, also 639-2
``ger``); what follows a hyphen or an underscore (``de-AT``, ``zh-tw``) is ignored. Codes
are looked up in the ISO 639 tables of iso639-lang (inside its wheel). Two codes name the
same language when they have the same *key*: the macrolanguage when there is one, spelled by
its shortest code, so Mandarin ``cmn``, Cantonese ``yue`` and Wu ``wuu`` are all ``zh`` and
Bokmål ``nob`` is ``no``. Everything that compares languages (the filter's language ID,
an encoder's declared languages and its routing, training files, evaluation sets) compares
keys, so ``--lang de``, a file ``tatoeba.deu-eng.deu`` and an encoder declaring ``de`` agree.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from pathlib import Path

from iso639 import Lang
from iso639.exceptions import DeprecatedLanguageValue, InvalidLanguageValue

from bitextmine.errors import BitextmineError
from bitextmine.io.paths import data_stem


def base_code(value: str) -> str:
    """The code without what follows a hyphen or an underscore: ``de-AT`` -> ``de``."""
    return value.strip().replace("_", "-").split("-")[0]


@cache
def iso_language(code: str) -> Lang | None:
    """The ISO 639 language of a 639-1/-2/-3 code, or None."""
    if not (2 <= len(code) <= 3 and code.isascii() and code.isalpha()):
        return None
    try:
        return Lang(code.lower())  # lower case: codes only, never a language name
    except (InvalidLanguageValue, DeprecatedLanguageValue):  # a retired code (kzj) names no language now
        return None


def key_of(lang: Lang) -> str:
    """A language's key: its macrolanguage when there is one (yue, wuu, cmn -> zh), by its shortest code."""
    macro = lang.macro() or lang
    return macro.pt1 or macro.pt3


def find_language_key(code: str) -> str | None:
    """The language key of an ISO 639-1/-2/-3 code (``deu`` -> ``de``), or None."""
    lang = iso_language(code.lower())
    return (key_of(lang) or None) if lang is not None else None


def language_key(value: str, option: str = "language") -> str:
    """The language a code names (``deu`` -> ``de``, ``yue`` -> ``zh``, ``de-AT`` -> ``de``).
    An unknown code is an error that names ``option``."""
    lang = iso_language(base_code(value))
    if lang is None:
        raise BitextmineError(f"{option}: unknown language {value!r}: give an ISO 639-1 or 639-3 code "
                              f"(such as de or deu){_name_hint(value)}")
    return key_of(lang)


def language_name(value: str) -> str | None:
    """The English name of the language a code names (``deu`` -> ``German``), or None."""
    lang = iso_language(base_code(value))
    return lang.name if lang is not None else None


def _name_hint(value: str) -> str:
    """For a language given by name (``German``): its code."""
    try:
        lang = Lang(value.strip().title())
    except InvalidLanguageValue:
        return ""
    return f"; {lang.name} is {lang.pt1 or lang.pt3}"


def speaks(languages: Iterable[str], lang: str) -> bool:
    """Whether ``lang`` (``ces``, ``cs``, ``zh-tw``) is one of ``languages``, compared as ISO 639 languages."""
    key = find_language_key(base_code(lang))
    return key is not None and key in {find_language_key(base_code(code)) for code in languages}


def same_language_codes(code: str, available: Iterable[str]) -> list[str]:
    """The codes among ``available`` (as file names spell them) that name the language
    ``code`` names: the code itself when present, else those of its language
    (``de`` -> ``deu``; ``zh`` -> ``cmn``, ``yue``, ...), the ISO 639-3 spelling first."""
    available = list(available)
    if code in available:
        return [code]
    key = language_key(code)
    same = [other for other in available if find_language_key(other) == key]
    lang = iso_language(base_code(code))
    first = lang.pt3 if lang is not None else None
    return sorted(same, key=lambda other: (other != first, other))


def language_suffix(path: str | Path) -> str | None:
    """The language code a file's name ends with (``tatoeba.ces-eng.ces``, ``news.de.gz``), or None."""
    name = data_stem(path)
    code = name.rpartition(".")[2]
    return code if "." in name and 2 <= len(code) <= 3 and find_language_key(code) else None
