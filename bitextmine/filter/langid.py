"""Language identification for the filter, with the model bundled in its package.

The detector is py3langid (Lui & Baldwin's langid.py, numpy port; 97 languages, model
inside the wheel, nothing downloaded). It was chosen over lingua and pycld2 by
``benchmarks/langid_compare.py`` on the Tatoeba test files (benchmarks/RESULTS.md).
Languages may be given as ISO 639-1 (``de``) or 639-3 (``deu``) codes.
"""

from __future__ import annotations

from functools import lru_cache

# ISO 639-3 -> 639-1 for the languages the detector knows under a two-letter code
_ISO3_TO_ISO1 = {
    "afr": "af", "amh": "am", "ara": "ar", "arg": "an", "asm": "as", "aze": "az", "bel": "be", "ben": "bn",
    "bos": "bs", "bre": "br", "bul": "bg", "cat": "ca", "ces": "cs", "cmn": "zh", "zho": "zh", "cym": "cy",
    "dan": "da", "deu": "de", "dzo": "dz", "ell": "el", "eng": "en", "epo": "eo", "est": "et", "eus": "eu",
    "fao": "fo", "fas": "fa", "fin": "fi", "fra": "fr", "gle": "ga", "glg": "gl", "guj": "gu", "hat": "ht",
    "heb": "he", "hin": "hi", "hrv": "hr", "hun": "hu", "hye": "hy", "ind": "id", "isl": "is", "ita": "it",
    "jav": "jv", "jpn": "ja", "kat": "ka", "kaz": "kk", "khm": "km", "kan": "kn", "kor": "ko", "kur": "ku",
    "kir": "ky", "lat": "la", "ltz": "lb", "lao": "lo", "lit": "lt", "lav": "lv", "mlg": "mg", "mkd": "mk",
    "mal": "ml", "mon": "mn", "mar": "mr", "msa": "ms", "zsm": "ms", "mlt": "mt", "nob": "nb", "nep": "ne",
    "nld": "nl", "nno": "nn", "nor": "no", "oci": "oc", "ori": "or", "pan": "pa", "pol": "pl", "pus": "ps",
    "por": "pt", "que": "qu", "ron": "ro", "rus": "ru", "kin": "rw", "sme": "se", "sin": "si", "slk": "sk",
    "slv": "sl", "sqi": "sq", "srp": "sr", "swe": "sv", "swh": "sw", "swa": "sw", "tam": "ta", "tel": "te",
    "tha": "th", "tgl": "tl", "tur": "tr", "uig": "ug", "ukr": "uk", "urd": "ur", "vie": "vi", "vol": "vo",
    "wln": "wa", "xho": "xh", "yue": "zh", "wuu": "zh", "zul": "zu",
}


@lru_cache(maxsize=1)
def _identifier():
    from py3langid.langid import MODEL_FILE
    from py3langid.langid import LanguageIdentifier as _Identifier

    return _Identifier.from_model_file(MODEL_FILE)


class LanguageIdentifier:
    """``detect(text) -> ISO 639-1 code``; ``supports(lang)`` for the languages it knows."""

    def __init__(self):
        self._model = _identifier()
        self.languages = set(self._model.nb_classes)

    def canonical(self, lang: str) -> str:
        lang = lang.strip().lower().replace("_", "-").split("-")[0]
        return _ISO3_TO_ISO1.get(lang, lang)

    def supports(self, lang: str) -> bool:
        return self.canonical(lang) in self.languages

    def detect(self, text: str) -> str:
        # varieties inside a macrolanguage compare equal to it (yue, wuu -> zh)
        code = self._model.classify(text)[0]
        return _ISO3_TO_ISO1.get(code, code)
