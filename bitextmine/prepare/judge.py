"""A batch of documents -> their kept sentences: normalise, segment, the rules, language ID.

This is the work that runs in the worker processes; deduplication, which depends on
every sentence before, stays in the parent (``run.py``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from bitextmine.languages import language_key
from bitextmine.prepare.config import PrepareConfig
from bitextmine.prepare.dedup import sentence_hash
from bitextmine.prepare.rules import LanguageCheck, normalise_document, tidy_sentence
from bitextmine.prepare.segment import Segmenter


@dataclass
class JudgedBatch:
    kept: list[list[tuple[int, str]]]  # per document: (sentence number from 1, sentence) of the kept ones
    hashes: list[int] = field(default_factory=list)  # of the kept sentences, in order (for dedup)
    sentences: int = 0  # sentences segmented
    rejected: Counter = field(default_factory=Counter)  # rule -> sentences
    lid_unsupported: bool = False


class DocumentJudge:
    """Segments documents and applies the rules that judge a sentence by itself."""

    def __init__(self, cfg: PrepareConfig):
        self.cfg = cfg
        self.rules = cfg.sentence_rules()
        self.segmenter = Segmenter(language_key(cfg.lang, "--lang"))
        self.languages = LanguageCheck(cfg.lang, cfg.min_lang_prob) if cfg.active("lid") else None

    def judge(self, texts: list[str]) -> JudgedBatch:
        """The kept sentences of each text, and the counts of what was dropped."""
        batch = JudgedBatch(kept=[])
        candidates: list[tuple[int, int, str]] = []  # (document, sentence number, sentence) past the rules
        for document, text in enumerate(texts):
            batch.kept.append([])
            for number, sentence in enumerate(self.segmenter.sentences(normalise_document(text)), 1):
                sentence = tidy_sentence(sentence)
                batch.sentences += 1
                reason = self.rules.first_failed(sentence)
                if reason is None:
                    candidates.append((document, number, sentence))
                else:
                    batch.rejected[reason] += 1
        verdicts = self._languages_match([sentence for _, _, sentence in candidates])
        for (document, number, sentence), keep in zip(candidates, verdicts, strict=True):
            if keep:
                batch.kept[document].append((number, sentence))
            else:
                batch.rejected["lid"] += 1
        batch.lid_unsupported = self.languages is not None and not self.languages.supported
        if self.cfg.active("dedup"):  # hashed here, in the workers: the parent only looks them up
            batch.hashes = [sentence_hash(sentence) for kept in batch.kept for _, sentence in kept]
        return batch

    def _languages_match(self, sentences: list[str]) -> list[bool]:
        """Language ID of each distinct sentence once (web text repeats itself)."""
        if self.languages is None or not sentences:
            return [True] * len(sentences)
        distinct = list(dict.fromkeys(sentences))
        verdict = dict(zip(distinct, self.languages.keeps(distinct), strict=True))
        return [verdict[s] for s in sentences]
