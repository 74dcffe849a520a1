"""Make mined pairs NMT-ready: rules that drop junk, each switchable, each counted.

High-margin pairs still hold junk (WikiMatrix and LASER users report it): the wrong
language on one side, copies, boilerplate, numbers or URLs that differ, duplicates that
cost BLEU. Rules run in a fixed order (``RULES``), the ones that judge a pair by itself
first, then language ID (of all remaining pairs at once), then deduplication; a rejected
pair is charged to the first rule it fails. Deduplication keeps the first kept occurrence,
the best-scoring one since mined files are sorted by score. Numbers are compared in
``numerals``, languages identified in ``langid``; the settings are ``config``, what the
rules read of a text ``text``, the rules themselves ``rules`` and files in, files out ``run``.
"""


from bitextmine.choices import RULES
from bitextmine.filter.config import RANGES, FilterConfig, FilterReport
from bitextmine.filter.rules import PairFilter
from bitextmine.filter.text import letter_share, normalise, numbers, text_length, token_count, urls
from bitextmine.io.pairs import Pair

__all__ = ["RANGES", "RULES", "FilterConfig", "FilterReport", "Pair", "PairFilter", "letter_share", "normalise",
           "numbers", "text_length", "token_count", "urls"]
