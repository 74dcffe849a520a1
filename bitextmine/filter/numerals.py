"""Do the two sides of a pair write the same numbers? Tolerant of how languages write them.

Each number on a side is read every way it can be meant ("1.500" is 1500 or 1.5; "15.30" is
15.3 or half past three in the afternoon; "720万" is 720 or 7,200,000; "the '90s" is 90 or
1990 or 2090), and numbers of the two sides pair up when two of their readings agree. Month numbers
of dates ("12月", the 10 of "3.10.2019") are not counted: the other side may name the month.
Where both numbers carry a scale word only the scaled values count ("3,5 Milliarden" is 3.5
billion, never the "3.5 million" whose bare 3.5 it shares).
What is left without a partner decides:

- numbers left over on one side only pass: translators add conversions ("5 miles (8 km)"),
  years, ages, and spell numbers out ("a las dos y media" / "at 2:30"); digits on one side
  only prove nothing, as a side without any digits shows;
- whole numbers up to 12 (and 12-hour clock times) left over on both sides pass: each side
  wrote one of them and spelled the other out ("drei Kinder, 5 Jahre" / "3 children, five years");
- larger numbers left over on both sides fail: one number stands where the other side has
  another, which is what a wrong pair (or a wrong translation) looks like; sides whose
  numbers are disjoint are the plainest case;
- numbers up to 12 on one side and larger ones on the other fail too ("7. Platz" / "66th
  place"), unless the larger ones are asides a translator adds: in brackets, or years.
"""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal, InvalidOperation
from typing import NamedTuple

# digits with separators between them: 1,000 / 1.000 / 1 000 / 1'000 / 1 000 (NBSP, thin spaces);
# a plain space only before a group of exactly three digits (French and Russian thousands), and
# never after a run with a leading zero, which no thousands start with ("TOP 09 384 174")
_NUMBER = re.compile(r"0\d+(?=[ ]\d)|\d+(?:(?:[.,'\u2019\u00a0\u2009\u202f]|[ ](?=\d{3}(?!\d)))\d+)*")
_SEPARATOR = re.compile(r"[.,'\u2019 \u00a0\u2009\u202f]")
# what may follow a number and changes its reading; checked on the next few characters
_AFTER = 24
# clock times: 15:30, 15.30 (below), 15h30, 15 h 30, 6 Uhr 30, 15点30分, 15時30分, with a.m./p.m.
_CLOCK = re.compile(r"(?<![\d.,])(\d{1,2})\s?(?::|[hH]|uhr|heures?|点|點|时|時)\s?(\d{2})(?!\d)分?"
                    r"(\s?[ap]\.?\s?m\b\.?)?", re.IGNORECASE)
_HOUR_WORD = re.compile(r"\s?(?:([ap])\.?\s?m\b|uhr\b|h\b|heures?\b|hrs?\b|horas?\b|hs\b|hod(?:in[ay]?)?\b|o'clock"
                        r"|час|ч\b|点|點|時)", re.IGNORECASE)
_MONTH = ("月", "월")  # 12月, 12월: a month, which the other side may name
_DATE = re.compile(r"\d{1,2}\.\d{1,2}\.\d{2,4}")  # 3.10.2019: day, month, year
_SEASON = re.compile(r"\d{4}\s?[-/–]\s?\d{2}")  # a season or fiscal year, the second year cut short
_SCALES = [  # (pattern, factors): scale words after a number; each factor is a further reading
    (re.compile(r"\s?(?:thousand|tausend|tsd\b|mille\b|mil\b(?!\s+millones)|mila\b|tisíc|tis\.|tys\.|tysięcy"
                r"|duizend|тыс|\u0939\u091c\u093c?\u093e\u0930|千|천)", re.IGNORECASE), (10**3,)),
    (re.compile(r"\s?万亿"), (10**12,)),
    (re.compile(r"\s?(?:million|mio\b|mill\b|millón|millones|milion|milioni|miljoen|mln\b|миллион|млн|百万|m\b|mn\b)",
                re.IGNORECASE), (10**6,)),
    (re.compile(r"\s?(?:mil millones|milliard|miliard|miljard|mld\b|mrd\b|миллиард|млрд|अरब|bn\b|b\b)",
                re.IGNORECASE), (10**9,)),
    # "billion": 10^9 in English, 10^12 in German, French and Spanish (billón); Czech and Polish "bilion" 10^12
    (re.compile(r"\s?(?:billion|billón|billones)", re.IGNORECASE), (10**9, 10**12)),
    (re.compile(r"\s?(?:trillion|bilion|biljoen|триллион|трлн)", re.IGNORECASE), (10**12,)),
    (re.compile(r"\s?(?:万|萬|만)"), (10**4,)),
    (re.compile(r"\s?(?:亿|億|억)"), (10**8,)),
    (re.compile(r"\s?(?:lakhs?\b|lacs?\b|लाख)", re.IGNORECASE), (10**5,)),
    (re.compile(r"\s?(?:crores?\b|\u0915\u0930\u094b\u0921\u093c)", re.IGNORECASE), (10**7,)),  # karod, NFC
]

# a number followed by any scale word: where both sides have one, equal digits settle nothing (the
# lookahead, a letter next, spares the scale words at most digits: a third of the time on short pairs)
SCALED_NUMBER = re.compile(r"\d(?=\s?[^\W\d_])(?:" + "|".join(scale.pattern for scale, _ in _SCALES) + ")",
                           re.IGNORECASE)


def _canonical(value: Decimal) -> str:
    text = format(value.normalize(), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _clock_readings(hour: int, minute: int, meridiem: str | None) -> set[str]:
    """'t15:30' style readings; an hour up to 12 without a.m./p.m. may be either half of the day."""
    if hour > 24 or minute > 59:
        return set()
    if meridiem:
        hours = {hour % 12 + (12 if meridiem.lower() == "p" else 0)}
    else:
        hours = {hour % 24, (hour + 12) % 24} if hour <= 12 else {hour % 24}
    return {f"t{h}:{minute:02d}" for h in hours}


def _plain_readings(token: str) -> tuple[set[Decimal], list[str]]:
    """Values of a digit run with separators, and its parts when it is no single number
    (a date 3.10.2019, or digits that only a space separates)."""
    parts = _SEPARATOR.split(token)
    seps = _SEPARATOR.findall(token)
    try:
        numbers = [Decimal(p) for p in parts]
    except InvalidOperation:  # digits of another script that Decimal does not read
        return set(), []
    if len(parts) == 1:
        return {numbers[0]}, []
    # thousands never start with a zero: "TOP 09 384 174" is a name and a number
    grouped = 1 <= len(parts[0]) <= 3 and parts[0][0] != "0" and all(len(p) == 3 for p in parts[1:])
    values = set()
    if grouped and len(set(seps)) == 1:  # 1.500 / 1,500 / 1 500 / 1'500 / 1.500.000
        values.add(Decimal("".join(parts)))
    decimal_sep = seps[-1]
    if decimal_sep in ".," and all(s != decimal_sep for s in seps[:-1]):
        whole = parts[:-1]
        if len(whole) == 1 or (1 <= len(whole[0]) <= 3 and all(len(p) == 3 for p in whole[1:])):
            values.add(Decimal("".join(whole) + "." + parts[-1]))  # 7,2 / 1.234,56 / 1,234.56
    if not values:
        return set(), parts
    return values, []


def _token_readings(token: str, after: str) -> tuple[set[str], set[str]]:
    """(every reading of ``token``, the readings its scale word gives: empty without one)."""
    values, parts = _plain_readings(token)
    readings = {_canonical(v) for v in values}
    after = unicodedata.normalize("NFC", after)  # one form of the Devanagari letters with a nukta (ड़)
    if parts:  # no single number: each part stands for itself (handled by the caller)
        return readings, set()
    if len(values) == 1 and token.count(".") == 1:
        hour, minute = token.split(".")
        if len(minute) == 2 and hour.isdigit():  # 15.30: a time as much as a decimal
            hour_word = _HOUR_WORD.match(after)
            readings |= _clock_readings(int(hour), int(minute), hour_word.group(1) if hour_word else None)
        if after.startswith(".") and hour.isdigit() and int(hour) <= 31 and 1 <= int(minute) <= 12:
            readings.add(str(int(hour)))  # 14.7.: a day (and a month, which the other side may name)
    value = next(iter(values)) if len(values) == 1 else None
    if value is not None and value == value.to_integral_value():
        number = int(value)
        hour_word = _HOUR_WORD.match(after)
        if hour_word and number <= 24:  # 15 Uhr, 3 p.m., 3点
            readings |= _clock_readings(number, 0, hour_word.group(1))
        if len(token) == 2:  # a year or decade cut short: '39, en 39, the '90s, 90er, años 90, 90年代
            readings |= {str(1900 + number), str(2000 + number)}
    factors = _scale_factors(after)
    if not factors:
        return readings, set()
    scaled = {_canonical(v * f) for v in values for f in factors}
    return readings | scaled, scaled


def _scale_factors(after: str, words: int = 2) -> set[int]:
    """The factors of the scale words at the start of ``after``: one, or two in a row ("31
    हजार करोड़", thirty-one thousand crore; "5 thousand million"). Empty without one."""
    for scale, factors in _SCALES:
        found = scale.match(after)
        if found and (words == 2 or len(found.group().strip()) > 1):  # "5 million b" is no 5 * 10^15
            further = _scale_factors(after[found.end():], words - 1) if words > 1 else set()
            return {f * g for f in factors for g in further} if further else set(factors)
    return set()


class Number(NamedTuple):
    readings: set[str]
    aside: bool  # in brackets, or a year: what a translator may add
    scaled: frozenset[str] = frozenset()  # the readings its scale word gives ("3,5 Milliarden": 3500000000)

    def agrees(self, other: Number) -> bool:
        """Two readings alike; where both sides wrote a scale word, the scaled values: "3,5
        Milliarden" is not "3.5 million", though "3.5" is either side's bare number."""
        if self.scaled and other.scaled:
            return bool(self.scaled & other.scaled)
        return bool(self.readings & other.readings)


_YEAR = re.compile(r"1[89]\d\d|20\d\d")


def _aside(text: str, start: int, token: str) -> bool:
    """Whether the number ``token`` at ``start`` is in brackets or is a year."""
    opened = max(text.rfind("(", 0, start), text.rfind("（", 0, start))
    closed = max(text.rfind(")", 0, start), text.rfind("）", 0, start))
    return opened > closed or _YEAR.fullmatch(token) is not None


def number_readings(text: str) -> list[Number]:
    """The numbers written in ``text``, each with its readings."""
    out: list[Number] = []
    clocks = list(_CLOCK.finditer(text))
    taken = [(m.start(), m.end()) for m in clocks]
    for m in clocks:
        readings = _clock_readings(int(m.group(1)), int(m.group(2)), (m.group(3) or "").strip()[:1] or None)
        separator = text[m.start(1) + len(m.group(1)):m.start(2)].strip()
        if separator == ":" and not readings:  # 3:1, 88:76: scores and ratios, two numbers
            out += [Number({str(int(m.group(i)))}, _aside(text, m.start(), "")) for i in (1, 2)]
        else:
            decimal = {_canonical(Decimal(f"{m.group(1)}.{m.group(2)}"))} if separator == "." else set()
            out.append(Number(readings | decimal, _aside(text, m.start(), "")))
    previous = None
    for m in _NUMBER.finditer(text):
        if any(s <= m.start() < e for s, e in taken) or text.startswith(_MONTH, m.end()):
            continue
        token = m.group()
        readings, scaled = _token_readings(token, text[m.end():m.end() + _AFTER])
        if readings:
            if previous is not None and _SEASON.fullmatch(text[previous.start():m.end()]):
                readings.add(str(int(previous.group()) // 100 * 100 + int(token)))  # 2013-14 is 2013-2014
            out.append(Number(readings, _aside(text, m.start(), token), frozenset(scaled)))
        else:  # a date (its month left out) or digits apart: each part a number
            parts = [p for p in _SEPARATOR.split(token) if p.isdecimal()]
            if _DATE.fullmatch(token):
                del parts[1]
            out += [Number({_canonical(Decimal(p))}, _aside(text, m.start(), p)) for p in parts]
        previous = m
    return out


def _small(number: Number) -> bool:
    """Up to 12, or a time on the 12-hour clock: what a side may write in words ("5 Milliarden"
    is no small number)."""
    return any(r.isdigit() and int(r) <= 12 or r.startswith("t") and int(r[1:r.index(":")]) <= 12
               for r in number.scaled or number.readings)


def numbers_agree(src: str, tgt: str) -> bool:
    """The rule of this module's docstring."""
    a, b = number_readings(src), number_readings(tgt)
    if not a or not b:
        return True
    left_b = list(b)
    left_a = []
    for number in a:
        partner = next((i for i, other in enumerate(left_b) if number.agrees(other)), None)
        if partner is None:
            left_a.append(number)
        else:
            del left_b[partner]
    if not left_a or not left_b:
        return True
    large_a = [n for n in left_a if not _small(n)]
    large_b = [n for n in left_b if not _small(n)]
    if large_a and large_b:
        return False
    return all(n.aside for n in large_a + large_b)
