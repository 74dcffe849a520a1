"""SentencePiece tokenization of the transformer encoders that ``bitextmine train`` builds."""

from __future__ import annotations

from pathlib import Path

from bitextmine.errors import BitextmineError


def load_sentencepiece(model_file: str | Path):
    """A ``SentencePieceProcessor`` of ``model_file``; a file that is none is a one-line error."""
    import sentencepiece  # sentencepiece: loaded where used (ARCHITECTURE.md, start-up)

    if not Path(model_file).is_file():
        raise BitextmineError("no such SentencePiece model", path=model_file)
    try:
        return sentencepiece.SentencePieceProcessor(model_file=str(model_file))
    except (RuntimeError, OSError) as e:
        raise BitextmineError(f"not a SentencePiece model ({str(e).splitlines()[0]})", path=model_file) from None


class PieceTokenizer:
    """SentencePiece ids shifted by one, so that 0 is padding; BOS first, EOS last."""

    def __init__(self, model_file: str | Path):
        self.model_file = Path(model_file)
        self.sp = load_sentencepiece(model_file)

    @property
    def vocab_size(self) -> int:
        return self.sp.get_piece_size() + 1

    def pieces(self) -> list[str]:
        return ["<pad>"] + [self.sp.id_to_piece(i) for i in range(self.sp.get_piece_size())]

    def encode(self, texts: list[str]) -> list[list[int]]:
        return [[i + 1 for i in ids] for ids in self.sp.encode(texts, add_bos=True, add_eos=True)]
