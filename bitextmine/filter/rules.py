"""The rules applied to pairs, in the order of ``RULES``; a pair is charged to the first it fails."""

from __future__ import annotations

import math
import multiprocessing
import os
import warnings
from collections import Counter
from collections.abc import Iterable, Iterator

from bitextmine import defaults
from bitextmine.choices import RULES
from bitextmine.devices import available_cpus, ignore_interrupts
from bitextmine.errors import warn
from bitextmine.filter.config import FilterConfig, FilterReport
from bitextmine.filter.langid import PairLanguages
from bitextmine.filter.text import letter_share, near_copy, normalise, same_numbers, text_length, token_count, urls
from bitextmine.io.pairs import Pair


class PairFilter:
    """Applies the rules of a ``FilterConfig`` to pairs. ``run`` needs the whole input:
    boilerplate counts are over all pairs, and language ID runs on many texts at once."""

    def __init__(self, cfg: FilterConfig = FilterConfig()):
        self.cfg = cfg
        self.report = FilterReport()
        self._seen_pairs: set[tuple[str, str]] = set()
        self._seen_src: set[str] = set()
        self._seen_tgt: set[str] = set()
        self._boilerplate: tuple[set[str], set[str]] = (set(), set())
        self._dedup = cfg.active("dedup")
        self._languages = None
        if cfg.active("lid"):
            self._languages = PairLanguages(cfg.src_lang, cfg.tgt_lang)
        methods = {"score_cap": self._score_cap, "length": self._length, "tokens": self._tokens,
                   "ratio": self._ratio, "letters": self._letters, "copy": self._copy, "numbers": self._numbers,
                   "urls": self._urls}
        # the rules that judge a pair by itself, which run in the workers; the boilerplate rule
        # (which needs every pair's texts counted), language ID's verdict and dedup, the last
        # three of RULES, follow in that order in ``_finish``
        self._checks = [(rule, methods[rule]) for rule in RULES if rule in methods and cfg.active(rule)]

    def _count_boilerplate(self, normalised: Iterable[tuple[str, str]]) -> None:
        """Texts that occur at least ``boilerplate`` times on their side (a source text and the
        same text as a target count apart: a copy pair is not boilerplate twice over)."""
        src_counts, tgt_counts = Counter(), Counter()
        for norm_src, norm_tgt in normalised:
            src_counts[norm_src] += 1
            tgt_counts[norm_tgt] += 1
        self._boilerplate = tuple({t for t, c in counts.items() if c >= self.cfg.boilerplate and t}
                                  for counts in (src_counts, tgt_counts))

    def _pair_rules(self, pair: Pair, norm_src: str, norm_tgt: str) -> str | None:
        for rule, fails in self._checks:
            if fails(pair, norm_src, norm_tgt):
                return rule
        return None

    def _finish(self, norm_src: str, norm_tgt: str, languages_match: bool | None) -> str | None:
        """The boilerplate rule, language ID's verdict, then dedup against the kept pairs; a
        pair that passes is kept and claims its sentences."""
        if norm_src in self._boilerplate[0] or norm_tgt in self._boilerplate[1]:
            return "boilerplate"
        if self._languages is not None:
            if not languages_match:
                return "lid"
            self.report.lid_unsupported += self._languages.unsupported_sides > 0
        if self._dedup:
            if self._seen(norm_src, norm_tgt):
                return "dedup"
            self._claim(norm_src, norm_tgt)
        return None

    # one method per rule: (pair, normalised source, normalised target) -> fails?
    def _score_cap(self, p, ns, nt):
        # a NaN or infinite score says nothing of the pair: it fails, cap or no cap
        cap = math.inf if self.cfg.max_score is None else self.cfg.max_score
        return p.score is not None and not (math.isfinite(p.score) and p.score <= cap)

    def _length(self, p, ns, nt):
        lo, hi = self.cfg.min_chars, self.cfg.max_chars
        # characters as written: a short CJK sentence is a short sentence (the ratio rule weighs scripts)
        return not (lo <= len(p.src) <= hi and lo <= len(p.tgt) <= hi)

    def _tokens(self, p, ns, nt):
        lo, hi = self.cfg.min_tokens, self.cfg.max_side_tokens
        a, b = token_count(p.src), token_count(p.tgt)
        return not (lo <= a <= hi and lo <= b <= hi)

    def _ratio(self, p, ns, nt):
        a, b = text_length(p.src), text_length(p.tgt)
        return max(a, b) > self.cfg.max_ratio * max(1, min(a, b))

    def _letters(self, p, ns, nt):
        return letter_share(p.src) < self.cfg.min_letters or letter_share(p.tgt) < self.cfg.min_letters

    def _copy(self, p, ns, nt):
        return ns == nt or near_copy(ns, nt, self.cfg.near_copy)

    def _numbers(self, p, ns, nt):
        return not same_numbers(p.src, p.tgt)

    def _urls(self, p, ns, nt):
        return urls(p.src) != urls(p.tgt)

    def _seen(self, src: str, tgt: str) -> bool:
        mode = self.cfg.dedup
        if mode == "pair":
            return (src, tgt) in self._seen_pairs
        if mode == "src":
            return src in self._seen_src
        if mode == "tgt":
            return tgt in self._seen_tgt
        return src in self._seen_src or tgt in self._seen_tgt

    def _claim(self, src: str, tgt: str) -> None:
        mode = self.cfg.dedup
        if mode == "pair":
            self._seen_pairs.add((src, tgt))
        if mode in ("src", "both"):
            self._seen_src.add(src)
        if mode in ("tgt", "both"):
            self._seen_tgt.add(tgt)

    def run(self, pairs: list[Pair], workers: int | None = None) -> Iterator[tuple[Pair, str | None]]:
        """(pair, reason) for each pair in order; reason None means kept.

        Normalising the texts, the rules of each pair and language ID run in ``workers``
        processes (default: the CPUs this process may use) on large inputs; boilerplate
        counts and deduplication, which depend on the other pairs, run here in order, so the
        result is that of one process."""
        judged = self._judge_all(pairs, workers)
        if self._languages is not None:
            self._check_languages(pairs, judged)
        if self.cfg.active("boilerplate"):
            self._count_boilerplate((ns, nt) for ns, nt, _, _ in judged)
        reasons = (reason or self._finish(ns, nt, languages_match) for ns, nt, reason, languages_match in judged)
        report = self.report
        for pair, reason in zip(pairs, reasons, strict=True):
            report.total += 1
            if reason is None:
                report.kept += 1
            else:
                report.rejected[reason] += 1
            yield pair, reason

    def _check_languages(self, pairs: list[Pair], judged) -> None:
        """Warn when language ID rejects most of the pairs it judges: the languages given are
        then more likely wrong (swapped, or another pair's) than the data."""
        verdicts = [match for _, _, _, match in judged if match is not None]
        failed = [p for p, (_, _, _, match) in zip(pairs, judged, strict=True) if match is False]
        if len(failed) < max(defaults.FILTER_LID_WARN_MIN_PAIRS, defaults.FILTER_LID_WARN_SHARE * len(verdicts)):
            return
        src, tgt = self.cfg.src_lang, self.cfg.tgt_lang
        message = f"language ID rejects {len(failed)} of {len(verdicts)} pairs"
        if src is not None and tgt is not None:
            sample = failed[:: max(1, len(failed) // defaults.FILTER_LID_SWAP_SAMPLE)]
            swapped = sum(PairLanguages(tgt, src).matches(sample))
            if 2 * swapped > len(sample):
                message += (f"; {swapped} of {len(sample)} of them pass with the languages the other way round: "
                            f"the columns look swapped (--src-lang {tgt} --tgt-lang {src}?)")
            else:
                message += f": are --src-lang {src} and --tgt-lang {tgt} the languages of the two columns?"
        else:
            message += f": is {'--src-lang ' + src if src else '--tgt-lang ' + str(tgt)} the language of its column?"
        self.report.warnings.append(message)
        warn(message)

    def judge(self, pairs: list[Pair]) -> list[tuple[str, str, str | None, bool | None]]:
        """(normalised source, normalised target, first rule failed, languages match) per
        pair, for the rules that judge a pair by itself and language ID (of all survivors at
        once; None where not run)."""
        judged = []
        for p in pairs:
            ns, nt = normalise(p.src), normalise(p.tgt)  # once, for the copy rule, boilerplate and dedup
            judged.append((ns, nt, self._pair_rules(p, ns, nt), None))
        if self._languages is None:
            return judged
        verdicts = iter(self._languages.matches([p for p, (_, _, reason, _) in zip(pairs, judged, strict=True)
                                                 if reason is None]))
        return [(ns, nt, reason, None if reason else next(verdicts)) for ns, nt, reason, _ in judged]

    def _judge_all(self, pairs, workers):
        workers = available_cpus() if workers is None else workers
        chunk = defaults.FILTER_PARALLEL_CHUNK
        if workers < 2 or len(pairs) < defaults.FILTER_PARALLEL_MIN_PAIRS or not _can_fork():
            return self.judge(pairs)
        global _FORKED
        _FORKED = (self, pairs)
        try:
            with warnings.catch_warnings():
                # Python 3.12+ warns about fork in a threaded process (numpy's BLAS threads):
                # the workers use none of them, and BLAS libraries reset their pools on fork
                warnings.filterwarnings("ignore", message=".*fork.*", category=DeprecationWarning)
                with multiprocessing.get_context("fork").Pool(workers, initializer=ignore_interrupts,
                                                                  initargs=(os.getpid(),)) as pool:
                    parts = pool.map(_judge_forked_chunk, range(0, len(pairs), chunk))
        finally:
            _FORKED = None
        return [judgement for part in parts for judgement in part]


# what forked workers judge: (filter, pairs), set just before the fork
_FORKED = None


def _judge_forked_chunk(start: int) -> list[tuple[str, str, str | None, bool | None]]:
    pair_filter, pairs = _FORKED
    return pair_filter.judge(pairs[start:start + defaults.FILTER_PARALLEL_CHUNK])


def _can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()
