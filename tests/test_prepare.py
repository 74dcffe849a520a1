"""`bitextmine prepare`: documents in every format -> clean sentence shards with provenance."""

from __future__ import annotations

import gzip
import io
import json
import lzma
import shutil
import zlib
from pathlib import Path

import pytest

from bitextmine.errors import BitextmineError
from tests.conftest import EXAMPLES, REPO, SHARED_DATA, make_embedding_set, read_lines

GERMAN = [
    "Die alte Brücke über den Fluss wird am Montag für Reparaturen gesperrt.",
    "Ingenieure haben bei einer Prüfung im März Risse in zwei Stahlbögen gefunden.",
    "Die Arbeiten sollen elf Wochen dauern und etwa vier Millionen Euro kosten.",
    "Die Züge werden in dieser Zeit durch Busse ersetzt.",
    "Der Stadtrat bat die Bahn, den Fußweg neben den Gleisen offen zu halten.",
    "Über den Fußweg wird in der nächsten Woche entschieden.",
]
ENGLISH = [
    "The public library has opened a new reading room for children.",
    "Volunteers will read stories aloud every Saturday morning.",
]


def sentences(segment_text: str, lang: str) -> list[str]:
    from bitextmine.prepare.segment import Segmenter

    return Segmenter(lang).sentences(segment_text)


def shard_rows(directory: Path) -> list[tuple[str, list[str]]]:
    """(sentence, provenance columns) of every line of every shard, in order."""
    manifest = json.loads((directory / "prepare.json").read_text())
    rows = []
    for shard in manifest["shards"]:
        texts = read_lines(directory / shard["file"])
        origins = [row.split("\t") for row in read_lines(directory / shard["provenance"])]
        assert len(texts) == len(origins) == shard["lines"]
        rows += list(zip(texts, origins, strict=True))
    return rows


def write_jsonl(path: Path, records: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n"
                            for r in records), encoding="utf-8")
    return path


# --- segmentation ------------------------------------------------------------------------------

@pytest.mark.parametrize("lang, text, expected", [
    # a quotation that runs past the sentence: its opening quote goes with the sentence it opens
    ("cs", 'Byli jsme dobří přátelé. "Jedná se o zálohu. Pak odešel.',
     ["Byli jsme dobří přátelé.", '"Jedná se o zálohu.', "Pak odešel."]),
    ("en", 'He said "no." Then he left.', ['He said "no."', "Then he left."]),
    # a sentence that starts with a digit (German, Czech, Chinese)
    ("de", "Du solltest schlafen. 10 Jahre sind eine lange Zeit.",
     ["Du solltest schlafen.", "10 Jahre sind eine lange Zeit."]),
    ("de", "Es kostet ca. 10 Euro. Am 3. 10. 2013 kam er.", ["Es kostet ca. 10 Euro.", "Am 3. 10. 2013 kam er."]),
    ("zh", "即使是一個小孩子都能理解。12月份巴厘岛极其炎热和潮湿。",
     ["即使是一個小孩子都能理解。", "12月份巴厘岛极其炎热和潮湿。"]),
    ("zh", "我只是不知道應該說什麼而已……瑜珈起源於印度。", ["我只是不知道應該說什麼而已……", "瑜珈起源於印度。"]),
    # the danda written as | or I
    ("hi", "मैं ज्योत्षी हूँ | यह दवाई अच्छी है। सब दुःखी थे I यह शेर पालतू है।",
     ["मैं ज्योत्षी हूँ |", "यह दवाई अच्छी है।", "सब दुःखी थे I", "यह शेर पालतू है।"]),
    # words the library takes for abbreviations; an acronym ends a sentence
    ("de", "Niemand versteht mich. Ich habe nichts zu tun.", ["Niemand versteht mich.", "Ich habe nichts zu tun."]),
    ("en", "The market moves on the first of May. Traders had complained.",
     ["The market moves on the first of May.", "Traders had complained."]),
    ("cs", "Platí to pro Zemana i ODS. Přišlo jich padesát.", ["Platí to pro Zemana i ODS.", "Přišlo jich padesát."]),
    # a lone abbreviation cut off by the library is joined to what follows
    ("fr", "M. Dupont est arrivé hier soir.", ["M. Dupont est arrivé hier soir."]),
    ("fr", "Je pense que M. Dupont est arrivé. Il dort.", ["Je pense que M. Dupont est arrivé.", "Il dort."]),
    ("hi", "डॉ. आशुतोष कुमार राय ने कहा कि काम पूरा हुआ। वह चले गए।",
     ["डॉ. आशुतोष कुमार राय ने कहा कि काम पूरा हुआ।", "वह चले गए।"]),
    # ordinals: before a lower-case word, or after a word that makes the number one
    ("cs", "Narodil se ze 16. října 1950. Pak odešel.", ["Narodil se ze 16. října 1950.", "Pak odešel."]),
    ("de", "Er kam im 19. Jahrhundert. Die 2. Bundesliga spielt.", ["Er kam im 19. Jahrhundert.",
                                                                  "Die 2. Bundesliga spielt."]),
    ("de", "Er wurde 19. Das war spät.", ["Er wurde 19.", "Das war spät."]),
    # every line is a paragraph of its own
    ("en", "A headline without a stop\nThe story begins here.",
     ["A headline without a stop", "The story begins here."]),
])
def test_segmenter_finds_the_boundaries_the_library_misses(lang, text, expected):
    assert sentences(text, lang) == expected


def test_segmenter_recovers_more_reference_lines_than_sentencex_alone():
    """Documents of joined Tatoeba lines (real data): every line the library alone recovers is
    recovered, and more (Hindi: the danda written as | and I)."""
    from tests.support.prepare_sets import documents, recovery, sample, sources

    found = sources("hin", SHARED_DATA)
    if "tatoeba" not in found:
        pytest.skip(f"Tatoeba data not found under {SHARED_DATA}")
    import sentencex

    ours = theirs = lines = 0
    for doc in documents(sample(found["tatoeba"], 1000)):
        text = " ".join(doc)
        ours += recovery(doc, sentences(text, "hi"), " ").recovered
        theirs += recovery(doc, list(sentencex.segment("hi", text)), " ").recovered
        lines += len(doc)
    assert lines == 1000
    assert ours / lines >= 0.985 and ours > theirs + 20, (ours, theirs)


# --- normalisation and rules -------------------------------------------------------------------

def test_normalisation_unifies_white_space_and_removes_invisible_characters():
    from bitextmine.prepare.rules import normalise_document, tidy_sentence

    text = "Ein\u00a0Satz\u200b mit\u00adTrennung.\r\nZweite\tZeile\u2028Dritte"
    assert normalise_document(text) == "Ein Satz mitTrennung.\nZweite Zeile\nDritte"
    assert normalise_document("Cafe\u0301") == "Café"  # NFC
    assert normalise_document("क्\u200dष") == "क्\u200dष"  # the joiner Indic spelling needs stays
    assert normalise_document("他说：“走吧。”") == "他说：“走吧。”"  # full-width punctuation stays (no NFKC)
    assert tidy_sentence("  two   spaces  ") == "two spaces"


def test_rules_drop_short_long_letterless_and_boilerplate_sentences():
    from bitextmine.prepare.rules import SentenceRules

    rules = SentenceRules(min_chars=5, max_chars=100)
    assert rules.first_failed("Ja.") == "length"
    assert rules.first_failed("好的。") is None  # three CJK characters count nine
    assert rules.first_failed("x" * 101) == "length"
    assert rules.first_failed("12.05.2013 14:30 - 16:45 (3)") == "letters"
    for junk in ("Impressum | Datenschutz | Kontakt | Newsletter", "function() { return x; }",
                 "Mehr unter https://example.org/eine/sehr/lange/adresse/zum/artikel", "Lorem ipsum dolor sit amet."):
        assert rules.first_failed(junk) == "boilerplate", junk
    assert rules.first_failed("Schreiben Sie an info@example.org, wenn Sie Fragen zum Programm haben.") is None
    assert SentenceRules(skip=("length",)).first_failed("Ja.") is None


def test_language_id_keeps_the_language_and_drops_english():
    from bitextmine.prepare.rules import LanguageCheck

    check = LanguageCheck("deu", 0.02)
    assert check.keeps(GERMAN + ENGLISH) == [True] * len(GERMAN) + [False] * len(ENGLISH)
    assert LanguageCheck("zho", 0.02).keeps(["我們試試看！", "We will try it."]) == [True, False]


def test_dedup_remembers_hashes_on_disk_and_forgets_unfinished_shards(tmp_path):
    from bitextmine.prepare.dedup import SeenSentences, sentence_hash

    a, b, c = (sentence_hash(s) for s in ("eins", "zwei", "drei"))
    seen = SeenSentences(tmp_path / "seen.sqlite")
    assert seen.claim([a, b, a], shard=0) == [True, True, False]
    seen.commit()
    assert seen.claim([b, c], shard=1) == [False, True]
    seen.commit()
    seen.close()
    again = SeenSentences(tmp_path / "seen.sqlite")  # a resumed run: shard 1 is written again
    again.forget_shards_from(1)
    assert again.claim([a, c], shard=1) == [False, True]
    again.close()


# --- formats -----------------------------------------------------------------------------------

def read_all(path, **options):
    from bitextmine.prepare.documents import ReadCounts, ReadOptions
    from bitextmine.prepare.readers import read_documents

    counts = ReadCounts()
    return list(read_documents(str(path), ReadOptions(**options), counts)), counts


def test_plain_text_documents_are_lines_or_paragraphs(tmp_path):
    path = tmp_path / "docs.txt"
    path.write_text("First line. Still first.\n\nSecond document\nwrapped here.\n", encoding="utf-8")
    lines, _ = read_all(path)
    assert [(d.text, d.id) for d in lines] == [("First line. Still first.", "1"), ("Second document", "3"),
                                              ("wrapped here.", "4")]
    paragraphs, _ = read_all(path, text_documents="paragraph")
    assert [(d.text, d.id) for d in paragraphs] == [("First line. Still first.", "1"),
                                                   ("Second document wrapped here.", "3")]


@pytest.mark.parametrize("suffix, opener", [(".gz", gzip.open), (".xz", lzma.open), (".zst", None)])
def test_compressed_inputs_are_read_by_their_suffix(tmp_path, suffix, opener):
    data = "".join(json.dumps({"id": f"d{i}", "text": s}) + "\n" for i, s in enumerate(GERMAN)).encode()
    path = tmp_path / f"docs.jsonl{suffix}"
    if opener is None:
        import zstandard

        path.write_bytes(zstandard.ZstdCompressor().compress(data))
    else:
        with opener(path, "wb") as out:
            out.write(data)
    documents, counts = read_all(path)
    assert [d.text for d in documents] == GERMAN and counts.documents == len(GERMAN)


def test_jsonl_reads_text_id_and_url_and_names_the_bad_line(tmp_path):
    good = write_jsonl(tmp_path / "good.jsonl", [{"id": 7, "url": "https://a.example/1", "text": "Eins."},
                                                 {"body": "no id", "text": "Zwei."}])
    documents, _ = read_all(good)
    assert [(d.text, d.id, d.url) for d in documents] == [("Eins.", "7", "https://a.example/1"), ("Zwei.", "2", "")]
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"text": "Eins."}, '{"text": "Zwei.', {"body": "x"}, [1, 2]])
    with pytest.raises(BitextmineError) as error:
        read_all(bad)
    assert (error.value.path, error.value.line) == (str(bad), 2) and "not valid JSON" in error.value.message
    documents, counts = read_all(bad, errors="skip")
    assert [d.text for d in documents] == ["Eins."] and counts.bad == 3
    with pytest.raises(BitextmineError, match="no field 'text'"):
        read_all(write_jsonl(tmp_path / "other.jsonl", [{"body": "x"}]))


def test_invalid_utf8_names_file_and_line(tmp_path):
    path = tmp_path / "docs.txt"
    path.write_bytes(b"Gut.\nSchlecht \xff\xfe.\nAuch gut.\n")
    with pytest.raises(BitextmineError) as error:
        read_all(path)
    assert (error.value.path, error.value.line) == (str(path), 2) and "invalid UTF-8" in error.value.message
    documents, counts = read_all(path, errors="skip")
    assert [d.text for d in documents] == ["Gut.", "Auch gut."] and counts.bad == 1


def test_parquet_reads_the_column_and_refuses_a_file_without_it(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "docs.parquet"
    pq.write_table(pa.table({"body": GERMAN[:3], "doc_id": ["a", "b", None], "url": ["u1", None, "u3"]}), path)
    documents, _ = read_all(path, field="body", id_field="doc_id")
    assert [(d.text, d.id, d.url) for d in documents] == [(GERMAN[0], "a", "u1"), (GERMAN[1], "b", ""),
                                                          (GERMAN[2], "3", "u3")]
    with pytest.raises(BitextmineError, match="no column 'text' \\(columns: body, doc_id, url\\)"):
        read_all(path)
    documents, counts = read_all(path, errors="skip")
    assert documents == [] and counts.bad == 1


def wet_file(records: list[tuple[str, str]]) -> bytes:
    from warcio.warcwriter import WARCWriter

    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=False)
    for url, text in records:
        writer.write_record(writer.create_warc_record(url, "conversion", payload=io.BytesIO(text.encode()),
                                                      warc_headers_dict={"Content-Type": "text/plain"}))
    return buffer.getvalue()


def test_wet_records_and_a_truncated_one(tmp_path):
    data = wet_file([("https://a.example/1", "Erste Seite.\nMit zwei Zeilen."), ("https://a.example/2", "Zweite.")])
    path = tmp_path / "crawl.warc.wet.gz"
    path.write_bytes(gzip.compress(data))
    documents, _ = read_all(path)
    assert [(d.text, d.url) for d in documents] == [("Erste Seite.\nMit zwei Zeilen.", "https://a.example/1"),
                                                    ("Zweite.", "https://a.example/2")]
    assert all(d.id.startswith("<urn:uuid:") for d in documents)
    cut = tmp_path / "cut.wet"
    cut.write_bytes(data[:-6])
    with pytest.raises(BitextmineError, match="record 2: truncated") as error:
        read_all(cut)
    assert error.value.path == str(cut)
    documents, counts = read_all(cut, errors="skip")
    assert len(documents) == 1 and counts.bad == 1
    truncated_gzip = tmp_path / "cut.wet.gz"
    truncated_gzip.write_bytes(gzip.compress(data)[:-20])
    with pytest.raises(BitextmineError, match="truncated or damaged"):
        read_all(truncated_gzip)


# --- the command ---------------------------------------------------------------------------------

def test_prepare_writes_shards_with_provenance_a_report_and_no_duplicates(cli, tmp_path):
    first = write_jsonl(tmp_path / "a.jsonl", [
        {"id": "a1", "url": "https://a.example/1",
         "text": " ".join(GERMAN[:3]) + "\nImpressum | Kontakt | Datenschutz | Newsletter"},
        {"id": "a2", "url": "https://a.example/2", "text": " ".join(ENGLISH)},
        {"id": "a3", "url": "https://a.example/3", "text": " ".join(GERMAN[:3])},  # a copy
    ])
    second = tmp_path / "b.txt"
    second.write_text(f"{GERMAN[2]} {GERMAN[3]}\nJa.\n{GERMAN[4]} {GERMAN[5]}\n", encoding="utf-8")
    result = cli("prepare", first, second, "-o", tmp_path / "out", "--lang", "de", "--json", tmp_path / "r.json",
                 "--workers", "1")
    assert result.exit_code == 0, result.stderr
    rows = shard_rows(tmp_path / "out")
    assert [text for text, _ in rows] == GERMAN  # in order, each once, nothing else
    assert rows[0][1] == [str(first), "a1", "https://a.example/1", "1"]
    assert rows[3][1] == [str(second), "1", "", "2"]  # the second sentence of line 1 (the first was seen)
    assert rows[4][1] == [str(second), "3", "", "1"]
    report = json.loads((tmp_path / "r.json").read_text())
    manifest = json.loads((tmp_path / "out" / "prepare.json").read_text())
    assert {k: v for k, v in manifest.items() if not k.startswith(("format", "bitextmine"))} == report
    assert report["documents"] == 6 and report["sentences"] == 14 and report["kept"] == 6
    assert report["rejected"] == {"length": 1, "letters": 0, "boilerplate": 1, "lid": 2, "dedup": 4}
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "a.0000.prov.tsv", "a.0000.txt", "b.0000.prov.tsv", "b.0000.txt", "prepare.json"]
    again = cli("prepare", first, second, "-o", tmp_path / "out", "--lang", "de", "-q")
    assert again.exit_code == 0 and shard_rows(tmp_path / "out") == rows


def test_standard_input_and_paragraphs(cli, tmp_path):
    text = f"{GERMAN[0]}\n{GERMAN[1]}\n\n{GERMAN[2]}\n"
    result = cli("prepare", "-", "-o", tmp_path / "out", "--lang", "deu", "--docs", "paragraph", "-q",
                 stdin=text.encode())
    assert result.exit_code == 0, result.stderr
    rows = shard_rows(tmp_path / "out")
    assert [(t, o) for t, o in rows] == [(GERMAN[0], ["-", "1", "", "1"]), (GERMAN[1], ["-", "1", "", "2"]),
                                         (GERMAN[2], ["-", "4", "", "1"])]


def test_bad_input_is_one_line_and_writes_nothing_of_it_then_the_run_resumes(cli, tmp_path):
    """The second input is bad: the first's shard stays recorded, nothing of the second is written,
    and once it is fixed the run resumes to the output of an uninterrupted run (a sentence of the
    first input is still a duplicate in the second)."""
    good = write_jsonl(tmp_path / "a.jsonl", [{"text": " ".join(GERMAN[:3])}])
    bad = write_jsonl(tmp_path / "b.jsonl", [{"text": f"{GERMAN[0]} {GERMAN[3]}"}, '{"text": broken',
                                             {"text": GERMAN[4]}])
    out = tmp_path / "out"
    result = cli("prepare", good, bad, "-o", out, "--lang", "de", "-q", "--workers", "1")
    assert result.stderr.splitlines() == [f"bitextmine: error: {bad}:2: not valid JSON: Expecting value (column 10)"]
    assert result.exit_code == 1
    # the first input's shard, the manifest and the hashes of the recorded shard; no temporary file
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith("dedup.sqlite")) == [
        "a.0000.prov.tsv", "a.0000.txt", "prepare.json"]
    assert not json.loads((out / "prepare.json").read_text())["complete"]
    written = (out / "a.0000.txt").stat().st_mtime_ns
    skipped = tmp_path / "skipped"
    shutil.copytree(out, skipped)
    # fixed: the input not yet begun is read as it is now, the first input's shard kept
    write_jsonl(bad, [{"text": f"{GERMAN[0]} {GERMAN[3]}"}, {"text": GERMAN[5]}, {"text": GERMAN[4]}])
    assert cli("prepare", good, bad, "-o", out, "--lang", "de", "-q", "--workers", "1").exit_code == 0
    assert (out / "a.0000.txt").stat().st_mtime_ns == written
    clean = tmp_path / "clean"
    assert cli("prepare", good, bad, "-o", clean, "--lang", "de", "-q").exit_code == 0
    assert shard_rows(out) == shard_rows(clean)
    assert [t for t, _ in shard_rows(out)] == [*GERMAN[:4], GERMAN[5], GERMAN[4]]
    assert not (out / "dedup.sqlite").exists()
    # or left out, as the message says: --errors skip continues a strict run
    write_jsonl(bad, [{"text": f"{GERMAN[0]} {GERMAN[3]}"}, '{"text": broken', {"text": GERMAN[4]}])
    result = cli("prepare", good, bad, "-o", skipped, "--lang", "de", "-q", "--workers", "1", "--errors", "skip")
    assert result.exit_code == 0, result.stderr
    assert [t for t, _ in shard_rows(skipped)] == [*GERMAN[:4], GERMAN[4]]
    report = json.loads((skipped / "prepare.json").read_text())
    assert report["config"]["errors"] == "skip" and report["bad_input"] == 1 and report["complete"]
    # a begun input that changed is not continued
    (tmp_path / "a.jsonl").write_text((tmp_path / "a.jsonl").read_text() + "\n", encoding="utf-8")
    write_jsonl(bad, [{"text": GERMAN[4]}])
    again = cli("prepare", good, bad, "-o", skipped, "--lang", "de", "-q", "--errors", "skip")
    assert again.exit_code == 1 and "prepared from other inputs or settings" in again.stderr


@pytest.mark.parametrize("name, line", [("de.txt.gz", "{}\n"), ("de.jsonl.gz", '{{"text": "{}"}}\n')])
def test_errors_skip_keeps_what_a_cut_archive_holds_before_the_cut(cli, tmp_path, name, line):
    text = "".join(line.format(f"Das ist der Satz mit der Nummer {i} und noch etwas mehr.") for i in range(100_000))
    data = gzip.compress(text.encode())
    cut = tmp_path / name
    cut.write_bytes(data[: len(data) // 2])
    strict = cli("prepare", cut, "-o", tmp_path / "strict", "--lang", "de", "-q")
    assert strict.exit_code == 1 and "cannot decompress (truncated or damaged file?)" in strict.stderr
    skipped = cli("prepare", cut, "-o", tmp_path / "skip", "--lang", "de", "-q", "--errors", "skip")
    assert skipped.exit_code == 0, skipped.stderr
    report = json.loads((tmp_path / "skip" / "prepare.json").read_text())
    # every whole line the cut stream holds (the decompressor's own count; the line cut in two is lost)
    whole_lines = zlib.decompressobj(31).decompress(data[: len(data) // 2]).count(b"\n")
    assert report["bad_input"] == 1 and report["documents"] == whole_lines and report["complete"]


def test_standard_input_given_again_and_a_damaged_manifest_need_overwrite(cli, tmp_path):
    out = tmp_path / "out"
    assert cli("prepare", "-", "-o", out, "--lang", "de", "-q", stdin=f"{GERMAN[0]}\n".encode()).exit_code == 0
    again = cli("prepare", "-", "-o", out, "--lang", "de", "-q", stdin=f"{GERMAN[1]}\n".encode())
    assert again.exit_code == 1 and "standard input cannot be told apart" in again.stderr
    assert [t for t, _ in shard_rows(out)] == [GERMAN[0]]
    assert cli("prepare", "-", "-o", out, "--lang", "de", "-q", "--overwrite",
               stdin=f"{GERMAN[1]}\n".encode()).exit_code == 0
    assert [t for t, _ in shard_rows(out)] == [GERMAN[1]]
    (out / "prepare.json").write_text("{bad", encoding="utf-8")
    text = tmp_path / "de.txt"
    text.write_text(f"{GERMAN[2]}\n", encoding="utf-8")
    damaged = cli("prepare", text, "-o", out, "--lang", "de", "-q")
    assert damaged.exit_code == 1 and "cannot read the manifest" in damaged.stderr and "--overwrite" in damaged.stderr
    assert cli("prepare", text, "-o", out, "--lang", "de", "-q", "--overwrite").exit_code == 0
    assert [t for t, _ in shard_rows(out)] == [GERMAN[2]]


def test_prepare_writes_into_its_own_folder_only_and_checks_its_shards_before_calling_them_done(cli, tmp_path):
    text = tmp_path / "de.txt"
    text.write_text("".join(f"{s}\n" for s in GERMAN[:4]), encoding="utf-8")
    other = tmp_path / "emb"
    make_embedding_set(other, [[1.0, 0.0]] * 2, ["a", "b"], shard="x")
    refused = cli("prepare", text, "-o", other, "--lang", "de", "-q")
    assert refused.exit_code == 1 and "holds files but no prepared sentences (manifest.json, x.npy, x.txt)" in \
        refused.stderr
    assert sorted(p.name for p in other.iterdir()) == ["manifest.json", "x.npy", "x.txt"]

    out = tmp_path / "out"
    assert cli("prepare", text, "-o", out, "--lang", "de", "-q").exit_code == 0
    shard = out / "de.0000.txt"
    kept = shard.read_bytes()
    shard.write_text("something else\n", encoding="utf-8")
    changed = cli("prepare", text, "-o", out, "--lang", "de", "-q")
    assert changed.exit_code == 1 and "de.0000.txt: changed since it was prepared" in changed.stderr
    assert cli("prepare", text, "-o", out, "--lang", "de", "-q", "--overwrite").exit_code == 0
    assert shard.read_bytes() == kept


def test_a_killed_run_resumes_to_the_same_output(tmp_path, monkeypatch):
    """Stopped after its first shard, a run resumes from the manifest: the documents of the recorded
    shards are not judged again, the sentences they hold are still duplicates."""
    from bitextmine import defaults
    from bitextmine.prepare import PrepareConfig, prepare_inputs
    from bitextmine.prepare import run as prepare_run

    monkeypatch.setattr(defaults, "PREPARE_BATCH_CHARS", 100)  # about a document a batch
    docs = [{"id": f"d{i}", "text": f"{GERMAN[i % 6]} {GERMAN[(i + 1) % 6]}"} for i in range(12)]
    path = write_jsonl(tmp_path / "docs.jsonl", docs)
    cfg = PrepareConfig(lang="de", shard_lines=2, workers=1)
    real_finish = prepare_run._finish_shard

    def finish_then_die(*args):
        real_finish(*args)
        raise KeyboardInterrupt

    monkeypatch.setattr(prepare_run, "_finish_shard", finish_then_die)
    with pytest.raises(KeyboardInterrupt):
        prepare_inputs([str(path)], tmp_path / "out", cfg)
    monkeypatch.setattr(prepare_run, "_finish_shard", real_finish)
    manifest = json.loads((tmp_path / "out" / "prepare.json").read_text())
    assert len(manifest["shards"]) == 1 and not manifest["complete"]
    report = prepare_inputs([str(path)], tmp_path / "out", cfg)
    clean = prepare_inputs([str(path)], tmp_path / "clean", cfg)
    assert shard_rows(tmp_path / "out") == shard_rows(tmp_path / "clean")
    assert [t for t, _ in shard_rows(tmp_path / "out")] == GERMAN
    assert {k: report[k] for k in ("documents", "sentences", "kept", "rejected")} == \
        {k: clean[k] for k in ("documents", "sentences", "kept", "rejected")}


def test_workers_give_the_output_of_one_process(tmp_path, monkeypatch):
    from bitextmine import defaults
    from bitextmine.prepare import PrepareConfig, prepare_inputs

    lines = read_lines(EXAMPLES / "de.txt") + read_lines(EXAMPLES / "en.txt")
    docs = [{"id": i, "text": " ".join(lines[i:i + 5])} for i in range(0, len(lines), 5)]
    path = write_jsonl(tmp_path / "docs.jsonl", docs * 2)
    monkeypatch.setattr(defaults, "PREPARE_BATCH_CHARS", 2000)  # many batches in flight
    one = prepare_inputs([str(path)], tmp_path / "one", PrepareConfig(lang="de", workers=1, shard_lines=300))
    two = prepare_inputs([str(path)], tmp_path / "two", PrepareConfig(lang="de", workers=2, shard_lines=300))
    assert shard_rows(tmp_path / "one") == shard_rows(tmp_path / "two")
    assert one["rejected"] == two["rejected"] and one["kept"] == two["kept"] > 400
    assert len(one["shards"]) >= 2 and one["rejected"]["dedup"] >= one["kept"]  # the copies all went


def _die(texts):
    import os

    os._exit(9)  # a worker killed (out of memory)


def test_a_worker_that_dies_stops_the_run_instead_of_waiting(tmp_path, monkeypatch):
    from concurrent.futures.process import BrokenProcessPool

    from bitextmine.prepare import PrepareConfig, prepare_inputs
    from bitextmine.prepare import run as prepare_run

    monkeypatch.setattr(prepare_run, "_judge_texts", _die)
    path = write_jsonl(tmp_path / "docs.jsonl", [{"text": " ".join(GERMAN)}])
    with pytest.raises(BrokenProcessPool):
        prepare_inputs([str(path)], tmp_path / "out", PrepareConfig(lang="de", workers=2))
    assert not list((tmp_path / "out").glob("*.txt")) and not list((tmp_path / "out").glob(".*.tmp"))


@pytest.mark.parametrize("args, mention", [
    (["--lang", "klingon"], "--lang"),
    (["--lang", "de", "--format", "html"], "--format"),
    (["--lang", "de", "--min-lang-prob", "2"], "--min-lang-prob"),
    (["--lang", "de", "--skip", "everything"], "--skip"),
    (["--lang", "de", "--min-chars", "50", "--max-chars", "10"], "--max-chars"),
    ([], "--lang"),
])
def test_usage_errors(cli, tmp_path, args, mention):
    (tmp_path / "a.txt").write_text("Ein Satz.\n")
    result = cli("prepare", tmp_path / "a.txt", "-o", tmp_path / "out", *args)
    assert result.exit_code == 2 and mention in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()


def test_a_missing_input_is_one_line(cli, tmp_path):
    result = cli("prepare", tmp_path / "none.jsonl", "-o", tmp_path / "out", "--lang", "de")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [f"bitextmine: error: {tmp_path / 'none.jsonl'}: no such file"]


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["shards"][0].update(lines="38"), "shards.0.lines: must be an integer, not str '38'"),
    (lambda d: d["shards"][0]["counts"].update(kept=-1), "shards.0.counts.kept: Input should be greater than"),
    (lambda d: d.update(shards={}), "shards: must be a list"),
    (lambda d: d["shards"][0].update(input=5), "shards.0.input: 5, but the manifest has 1 input(s)"),
    (lambda d: d["shards"][0].pop("file"), "shards.0.file: missing key"),
])
def test_a_damaged_manifest_is_one_line_before_any_work(cli, tmp_path, edit, message):
    (tmp_path / "a.txt").write_text("Das ist ein ganz normaler deutscher Satz über das Wetter.\n")
    args = ("prepare", tmp_path / "a.txt", "-o", tmp_path / "out", "--lang", "de", "-q")
    assert cli(*args).exit_code == 0
    manifest = tmp_path / "out" / "prepare.json"
    data = json.loads(manifest.read_text())
    edit(data)
    manifest.write_text(json.dumps(data))
    result = cli(*args)
    assert result.exit_code == 1
    [line] = result.stderr.splitlines()
    assert line.startswith(f"bitextmine: error: {manifest}: {message}"), line

def test_an_empty_input_is_named_in_a_warning(cli, tmp_path):
    (tmp_path / "empty.txt").write_text("")
    (tmp_path / "some.txt").write_text("Das ist ein ganz normaler deutscher Satz über das Wetter.\n")
    result = cli("prepare", tmp_path / "empty.txt", tmp_path / "some.txt", "-o", tmp_path / "out", "--lang", "de",
                 "-q")
    assert result.exit_code == 0
    assert result.stderr.splitlines() == [f"bitextmine: {tmp_path / 'empty.txt'}: no documents: the input is empty"]


# --- provenance downstream: embed reads the shards, mine and report name the documents -----------------

def test_mine_docs_names_both_documents_and_report_shows_them(cli, tmp_path):
    import numpy as np

    from tests.conftest import clustered_vectors

    x = clustered_vectors(20, dim=16, seed=1)
    y = x + 0.01 * np.random.default_rng(2).standard_normal(x.shape).astype(np.float32)
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    for side, vectors in (("src", x), ("tgt", y)):
        make_embedding_set(tmp_path / side, vectors, [f"{side} sentence {i}" for i in range(20)], shard="news.0000")
        (tmp_path / side / "news.0000.prov.tsv").write_text(
            "".join(f"in.jsonl\tdoc{i // 4}\thttps://{side}.example/{i // 4}\t{i % 4 + 1}\n" for i in range(20)))
    result = cli("mine", "--src", tmp_path / "src", "--tgt", tmp_path / "tgt", "-o", tmp_path / "p.tsv", "--docs",
                 "--score", "ratio", "--threshold", "1.0", "-q")
    assert result.exit_code == 0, result.stderr
    rows = [line.split("\t") for line in read_lines(tmp_path / "p.tsv")]
    assert len(rows) == 20 and all(len(r) == 7 for r in rows)
    for _, src, tgt, src_id, _, src_doc, tgt_doc in rows:
        i = int(src.split()[-1])
        assert tgt == f"tgt sentence {i}" and src_id == f"news.0000:{i + 1}"
        assert (src_doc, tgt_doc) == (f"https://src.example/{i // 4}", f"https://tgt.example/{i // 4}")
    assert json.loads((tmp_path / "p.tsv.json").read_text())["columns"][-2:] == ["src_doc", "tgt_doc"]
    assert cli("report", tmp_path / "p.tsv", "-o", tmp_path / "r.html", "-q").exit_code == 0
    page = (tmp_path / "r.html").read_text()
    assert "<th>source document</th>" in page and "https://tgt.example/" in page
    # a shard without a sidecar has no documents; one that does not belong to its shard is refused
    (tmp_path / "tgt" / "news.0000.prov.tsv").write_text("in.jsonl\td\t\t1\n")
    refused = cli("mine", "--src", tmp_path / "src", "--tgt", tmp_path / "tgt", "-o", tmp_path / "q.tsv", "--docs",
                  "--score", "ratio", "--threshold", "1.0", "-q")
    assert refused.exit_code == 1 and "does not belong to this shard" in refused.stderr


def test_the_documents_example_pipeline_runs_from_documents_to_pairs(cli, tmp_path):
    """examples/pipeline-documents.yaml: prepare, embed, mine, filter; the pairs name both documents,
    the English story and the copy on the German site are gone, and a rerun redoes nothing."""
    from bitextmine.launch.config import load_config
    from bitextmine.launch.pipeline import with_prepared_shards

    out = tmp_path / "run"
    example = REPO / "examples" / "pipeline-documents.yaml"
    early = cli("run", example, "--launcher", "inline", "-q", "--set", f"output={out}", "--stage", "embed")
    assert early.exit_code == 1
    assert "--stage embed reads the prepare stage's output, which is not finished" in early.stderr
    result = cli("run", example, "--launcher", "inline", "-q", "--set", f"output={out}")
    assert result.exit_code == 0, result.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert [(s["stage"], s["ran"]) for s in summary["stages"]] == [("prepare", 2), ("embed", 2), ("index", 0),
                                                                   ("mine", 1), ("filter", 1)]
    german = json.loads((out / "prepare" / "de" / "prepare.json").read_text())
    rejected = german["rejected"]
    assert rejected["lid"] >= 4 and rejected["dedup"] >= 5 and rejected["boilerplate"] == 5
    texts = [t for t, _ in shard_rows(out / "prepare" / "de")]
    assert len(texts) == len(set(texts)) and not any("hospital" in t for t in texts)
    pairs = [line.split("\t") for line in read_lines(out / "pairs" / "de-en.tsv")]
    assert len(pairs) >= 20 and all(len(p) == 7 for p in pairs)
    for _, _, _, _, _, src_doc, tgt_doc in pairs:
        assert src_doc.startswith("https://zeitung.example.org/de/") and tgt_doc.startswith("https://news.example.org/en/")
    same_story = sum(p[5].rsplit("/", 1)[1] == p[6].rsplit("/", 1)[1] for p in pairs)
    assert same_story >= 0.9 * len(pairs)
    again = cli("run", example, "--launcher", "inline", "-q", "--set", f"output={out}")
    assert again.exit_code == 0
    assert [s["ran"] for s in json.loads((out / "summary.json").read_text())["stages"]] == [0, 0, 0, 0, 0]
    # plan counts the prepared shards, as embed reads them
    planned = with_prepared_shards(load_config(example, [f"output={out}"]))
    assert planned.languages == {lang: (str(out / "prepare" / lang / f"{lang}.0000.txt"),) for lang in ("de", "en")}
