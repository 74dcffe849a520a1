"""`bitextmine filter` on Tatoeba pairs with injected noise: each rule catches its own."""

import json
import random

import pytest

from bitextmine.filter import RULES, FilterConfig, Pair, PairFilter, numbers, urls
from bitextmine.io.pairs import parse_pairs
from tests.conftest import read_lines, tatoeba_pair


def clean_pairs(lang="deu", n=1000):
    foreign, english = tatoeba_pair(lang)
    return [Pair(1.2, f, e) for f, e in zip(read_lines(foreign)[:n], read_lines(english)[:n], strict=True)]


def judge(pairs, **cfg):
    pair_filter = PairFilter(FilterConfig(**cfg))
    return [reason for _, reason in pair_filter.run(pairs)], pair_filter.report


def only(rule, **cfg):
    """A config with every rule off but ``rule``."""
    return {"disabled": tuple(r for r in RULES if r != rule), **cfg}


def test_helpers():
    assert numbers("It costs 1,000 euros in 2019.") == {"1000", "2019"} == numbers("Es kostet 1.000 Euro (2019).")
    assert urls("see https://example.org/a, or mail me@x.de.") == {"https://example.org/a", "me@x.de"}
    pairs = parse_pairs(["1.5\tHallo\tHello\tde:1\ten:2", "", "0.5\tGuten Tag\tGood day"])
    assert pairs[0].score == 1.5 and pairs[0].extra == ("de:1", "en:2") and pairs[1].line == 3
    assert parse_pairs(["Guten Tag\tGood day"])[0].score is None


@pytest.mark.parametrize("lang", ["deu", "fra", "spa", "rus", "cmn", "jpn", "ara"])
def test_default_settings_keep_clean_pairs(lang):
    pairs = clean_pairs(lang)
    reasons, report = judge(pairs)
    kept = reasons.count(None) / len(pairs)
    assert kept >= 0.98, {r: reasons.count(r) for r in set(reasons)}
    assert report.total == len(pairs) and report.kept == reasons.count(None)


@pytest.mark.parametrize("lang, code", [("deu", "de"), ("cmn", "zh")])
def test_default_settings_with_language_id_keep_clean_pairs(lang, code):
    # cmn: short Mandarin sentences are often detected as Cantonese or Wu, which belong
    # to the macrolanguage zh and must count as it
    pairs = clean_pairs(lang)
    reasons, _ = judge(pairs, src_lang=code, tgt_lang="en")
    assert reasons.count(None) / len(pairs) >= 0.98, {r: reasons.count(r) for r in set(reasons)}


def inject(kind, pairs, rng):
    """Noisy copies of clean pairs, one kind of noise."""
    out = []
    for p in pairs:
        if kind == "copy":
            out.append(Pair(p.score, p.tgt, p.tgt))
        elif kind == "near_copy":
            out.append(Pair(p.score, p.tgt.upper().replace(".", "!"), p.tgt))
        elif kind == "numbers":
            out.append(Pair(p.score, f"{p.src} ({rng.randint(10, 99)})", f"{p.tgt} ({rng.randint(100, 999)})"))
        elif kind == "urls":
            out.append(Pair(p.score, f"{p.src} https://a.example/{rng.randint(1, 9)}", f"{p.tgt} https://b.example/"))
        elif kind == "letters":
            out.append(Pair(p.score, "1234 5678 90 -- ## " + p.src[:3], p.tgt))
        elif kind == "ratio":
            out.append(Pair(p.score, p.src, " ".join([p.tgt] * 5)))
        elif kind == "length":
            out.append(Pair(p.score, p.src[:2], p.tgt))
        elif kind == "wrong_language":
            out.append(Pair(p.score, p.tgt, p.src))  # sides swapped: English where German belongs
        elif kind == "score":
            out.append(Pair(9.9, p.src, p.tgt))
    return out


@pytest.mark.parametrize("kind, rule, cfg", [
    ("copy", "copy", {}), ("near_copy", "copy", {}), ("numbers", "numbers", {}), ("urls", "urls", {}),
    ("letters", "letters", {}), ("ratio", "ratio", {}), ("length", "length", {}),
    ("wrong_language", "lid", {"src_lang": "de", "tgt_lang": "en"}), ("score", "score_cap", {"max_score": 2.0}),
])
def test_each_rule_catches_its_own_noise(kind, rule, cfg):
    rng = random.Random(0)
    noisy = inject(kind, clean_pairs("deu", 300), rng)
    reasons, _ = judge(noisy, **only(rule, **cfg))
    caught = reasons.count(rule) / len(noisy)
    assert caught >= 0.95, f"{rule} caught {caught:.1%} of {kind}"
    # and with every default rule on, the noise is still caught (by some rule)
    reasons, _ = judge(noisy, **cfg)
    assert reasons.count(None) / len(noisy) <= 0.05


def test_boilerplate_and_duplicates():
    pairs = clean_pairs("deu", 200)
    boiler = [Pair(1.1, "Klicken Sie hier, um sich anzumelden.", p.tgt) for p in pairs[:12]]
    reasons, _ = judge(boiler + pairs, **only("boilerplate"))
    assert reasons[:12] == ["boilerplate"] * 12 and reasons[12:].count(None) == 200

    duplicated = pairs + [Pair(1.0, p.src.upper(), p.tgt) for p in pairs[:50]]
    reasons, _ = judge(duplicated, **only("dedup"))
    assert reasons[:200] == [None] * 200 and reasons[200:] == ["dedup"] * 50
    reasons, _ = judge(duplicated, **only("dedup", dedup="tgt"))
    assert reasons[200:] == ["dedup"] * 50
    reasons, _ = judge([Pair(1, "a b c", "x y z"), Pair(1, "a b c", "u v w")], **only("dedup", dedup="pair"))
    assert reasons == [None, None]


def test_unknown_languages_pass_and_are_counted():
    pairs = clean_pairs("deu", 20)
    reasons, report = judge(pairs, **only("lid", src_lang="xx-nonexistent", tgt_lang="en"))
    assert reasons == [None] * 20 and report.lid_unsupported == 20


def test_filter_cli(cli, tmp_path):
    pairs = clean_pairs("deu", 100) + inject("copy", clean_pairs("deu", 10), random.Random(0))
    mined = tmp_path / "mined.tsv"
    mined.write_text("".join("\t".join(p.fields()) + "\n" for p in pairs))
    result = cli("filter", mined, "-o", tmp_path / "kept.tsv", "--rejects", tmp_path / "rejects.tsv")
    assert result.exit_code == 0, result.stderr
    kept = (tmp_path / "kept.tsv").read_text().splitlines()
    rejected = [line.split("\t") for line in (tmp_path / "rejects.tsv").read_text().splitlines()]
    report = json.loads((tmp_path / "kept.tsv.filter.json").read_text())
    assert report["total"] == 110 and report["kept"] == len(kept)
    assert report["rejected"]["copy"] == 10 == sum(r[0] == "copy" for r in rejected)
    assert len(kept) + len(rejected) == 110
    assert kept[0].split("\t")[0] == "1.200000"

    skipped = cli("filter", mined, "-o", "-", "--skip", "copy", "--skip", "dedup", "-q")
    assert skipped.exit_code == 0 and len(skipped.stdout.splitlines()) == 110

    empty = tmp_path / "empty.tsv"
    empty.write_text("")
    assert cli("filter", empty, "-o", tmp_path / "e.tsv", "-q").exit_code == 0
    assert (tmp_path / "e.tsv").read_text() == ""

    bad = cli("filter", mined, "-o", tmp_path / "x.tsv", "--skip", "nonsense")
    assert bad.exit_code == 2 and "nonsense" in bad.stderr  # a usage error, caught by the parser


def test_mine_with_filter_in_one_pipe(cli, tmp_path):
    from tests.conftest import EXAMPLES

    for side in ("de", "en"):
        assert cli("embed", EXAMPLES / f"{side}.txt", "-o", tmp_path / side, "-q").exit_code == 0
    result = cli("mine", "--src", tmp_path / "de", "--tgt", tmp_path / "en", "-o", tmp_path / "p.tsv", "--filter",
                 "--src-lang", "de", "--tgt-lang", "en", "--rejects", tmp_path / "r.tsv", "-q")
    assert result.exit_code == 0, result.stderr
    meta = json.loads((tmp_path / "p.tsv.json").read_text())
    assert meta["filter"]["total"] == meta["pairs"]
    assert meta["filter"]["kept"] == len((tmp_path / "p.tsv").read_text().splitlines())


def test_fast_helpers_match_their_regular_expression_definitions():
    """normalise, letter_share and numbers take C-speed shortcuts; on every Tatoeba text
    in every language (and on awkward cases) they must give what the plain definitions give."""
    import re

    from tests.conftest import TATOEBA

    if not TATOEBA.is_dir():
        pytest.skip(f"Tatoeba data not found under {TATOEBA}")
    import unicodedata

    from bitextmine.filter import letter_share, normalise

    texts = [line for f in sorted(TATOEBA.glob("tatoeba.*-eng.*")) for line in read_lines(f)]
    texts += ["", " ", "²³ Ⅻ a_b 1 000", "ﬁne Straße", "«Hallo» – ja!", "\u00a0x\u00a0y", "ǅemal", "x\u200by",
              "١٢٣ ٤٥", "1,000.50 and 1'000", "٣ apples", "snake_case\x1cand\ttabs!", "  A-B  c "]
    not_letter, not_digit = re.compile(r"[\W\d_]"), re.compile(r"\D")
    number = re.compile(r"\d(?:[\d.,'\u00a0\u202f]*\d)?")
    word = re.compile(r"\w+")
    assert len(texts) > 100_000
    for text in texts:
        assert letter_share(text) == (len(not_letter.sub("", text)) / len(text) if text else 0.0), text
        assert numbers(text) == {not_digit.sub("", n) for n in number.findall(text)}, text
        assert normalise(text) == " ".join(word.findall(unicodedata.normalize("NFKC", text).casefold())), text
