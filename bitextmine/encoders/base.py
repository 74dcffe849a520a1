"""The encoder interface shared by every sentence encoder."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

from bitextmine import defaults

USEM3_DIM = 512  # the default encoder's width: checks that run before any encoder loads need it, not torch


@dataclass(frozen=True)
class MiningThresholds:
    """The thresholds an encoder was measured to need for mining, on its own score scale.

    ``scores``: by score (``ratio``, ``distance``, ``cosine``); a score left out falls back
    on LASER's scale (``defaults.THRESHOLDS``). ``measured``: how and on what, so that a
    reader can judge them or measure them again.
    """

    scores: Mapping[str, float]
    measured: str

    def to_dict(self) -> dict:
        return {"scores": dict(self.scores), "measured": self.measured}

    @classmethod
    def from_dict(cls, data: Mapping) -> MiningThresholds:
        return cls(dict(data["scores"]), data["measured"])


@dataclass(frozen=True)
class EncoderIdentity:
    """What an embedding set records about the encoder that made it.

    Two sets are comparable only when their identities match (or one encoder declares
    itself compatible with the other, as a distilled student does with its teacher): the
    first five fields. The rest is what the encoder declares about itself, for the stages
    that ask (mining its thresholds, training its languages, embedding its routing); a
    record written before encoders declared it holds none (``registry.with_declarations``).
    """

    name: str
    version: str
    dim: int
    weights_sha256: str
    compatible_with: str | None = None  # weights_sha256 of the teacher whose space this shares
    languages: tuple[str, ...] | None = field(default=None, compare=False)  # ISO 639 codes; None: not declared
    mining_thresholds: MiningThresholds | None = field(default=None, compare=False)
    teacher_languages: tuple[str, ...] | None = field(default=None, compare=False)  # handed to the teacher
    # an adapted encoder's threshold for the pools ``adapt`` trained it on (``adapt.loop.pools_threshold``):
    # {"threshold", "score", "k", "pools": [{"sentences", "sha256"} of each side]}
    adapted_pools: Mapping | None = field(default=None, compare=False)

    def to_dict(self) -> dict:
        data = {"name": self.name, "version": self.version, "dim": self.dim, "weights_sha256": self.weights_sha256,
                "compatible_with": self.compatible_with,
                "languages": list(self.languages) if self.languages is not None else None,
                "mining_thresholds": self.mining_thresholds.to_dict() if self.mining_thresholds else None,
                "teacher_languages": list(self.teacher_languages) if self.teacher_languages is not None else None,
                "adapted_pools": dict(self.adapted_pools) if self.adapted_pools is not None else None}
        return {k: v for k, v in data.items() if v is not None}

    @classmethod
    def from_dict(cls, data: Mapping) -> EncoderIdentity:
        def codes(key: str) -> tuple[str, ...] | None:
            return tuple(data[key]) if data.get(key) is not None else None

        thresholds = data.get("mining_thresholds")
        return cls(**{k: data.get(k) for k in ("name", "version", "dim", "weights_sha256", "compatible_with")},
                   languages=codes("languages"), teacher_languages=codes("teacher_languages"),
                   adapted_pools=data.get("adapted_pools"),
                   mining_thresholds=MiningThresholds.from_dict(thresholds) if thresholds is not None else None)

    def space(self) -> str:
        """The embedding space this encoder writes into."""
        return self.compatible_with or self.weights_sha256

    def declares(self) -> bool:
        """Whether the record holds the encoder's declarations (records written before them do not)."""
        return self.languages is not None or self.mining_thresholds is not None or self.teacher_languages is not None


def token_budget_batches(lengths: list[int], batch_tokens: int) -> Iterator[list[int]]:
    """Indices grouped into batches of at most ``batch_tokens`` padded tokens.

    Sentences are sorted longest first, so that padding is minimal and the most
    memory-hungry batch runs first (an out-of-memory error shows up at once). The
    budget counts padded tokens (batch size x longest sentence), which is what a padded
    transformer pays; a sentence longer than the budget forms a batch of its own. Sorted
    longest first, a batch's first sentence is its longest, so its size follows from that
    length alone: one step a batch, not a sentence (on a GPU this loop is host time).
    """
    order = np.argsort(-np.asarray(lengths, dtype=np.int64), kind="stable")  # ties keep their order
    longest = np.asarray(lengths, dtype=np.int64)[order]
    start = 0
    while start < len(order):
        size = max(1, batch_tokens // max(int(longest[start]), 1))
        yield order[start : start + size].tolist()
        start += size


class Encoder:
    """A sentence encoder: ``encode(list[str]) -> float32 (n, dim)``, rows L2-normalised.

    Subclasses tokenize (``tokenize``), cut a too-long sentence (``truncate``) and embed
    one batch of token ids (``embed_token_batch``); batching, length sorting and the
    restoration of input order are shared here.

    An encoder declares what it knows of itself, and its ``identity`` carries it into every
    embedding set it writes (``declared_identity``): ``languages`` it was trained on and
    the ``mining_thresholds`` measured for it. Mining, evaluation and indexing ask the
    identity; they never test an encoder's name.
    """

    name: str = ""
    dim: int = 0
    languages: tuple[str, ...] | None = None  # ISO 639 codes; None: not declared
    mining_thresholds: MiningThresholds | None = None  # None: mining uses LASER's scale

    def __init__(self, device: str = "cpu", precision: str = defaults.PRECISION):
        self.device = device
        self.precision = precision

    @property
    def identity(self) -> EncoderIdentity:
        raise NotImplementedError

    def declared_identity(self, version: str, weights_sha256: str, compatible_with: str | None = None,
                          teacher_languages: tuple[str, ...] | None = None) -> EncoderIdentity:
        """This encoder's identity, with what it declares about itself."""
        return EncoderIdentity(self.name, version, self.dim, weights_sha256, compatible_with,
                               languages=self.languages, mining_thresholds=self.mining_thresholds,
                               teacher_languages=teacher_languages)

    def for_language(self, lang: str | None) -> Encoder:
        """The encoder that embeds text in ``lang`` (an ISO 639 code; None: not known).

        Most encoders embed every language themselves. A checkpoint trained to add
        languages (``--route-known``) hands the languages its teacher knows, English
        included, to the teacher, whose space it shares: it cannot have forgotten them.
        """
        return self

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        raise NotImplementedError

    def truncate(self, ids: list[int], max_tokens: int) -> list[int]:
        return ids[:max_tokens]

    def embed_token_batch(self, batch: list[list[int]]) -> np.ndarray:
        raise NotImplementedError

    def embed_token_batch_on_device(self, batch: list[list[int]]):
        """The rows of ``embed_token_batch`` as a torch tensor, which may still be being
        computed on the encoder's device: reading it (``.cpu()``) waits for it. An encoder
        whose forward pass runs asynchronously on a GPU returns before it is done, so that
        the caller prepares the next batch meanwhile."""
        import torch  # torch: 2.5 s, loaded where used (ARCHITECTURE.md, start-up)

        return torch.from_numpy(self.embed_token_batch(batch))

    def encode(
        self,
        texts: list[str],
        batch_tokens: int = defaults.BATCH_TOKENS,
        max_tokens: int = defaults.MAX_TOKENS,
    ) -> np.ndarray:
        ids, _ = self.tokenize_truncated(texts, max_tokens)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for batch in token_budget_batches([len(x) for x in ids], batch_tokens):
            out[batch] = self.embed_token_batch([ids[i] for i in batch])
        return out

    def tokenize_truncated(self, texts: list[str], max_tokens: int) -> tuple[list[list[int]], int]:
        """Token ids of ``texts``, each cut to ``max_tokens``, and how many were cut."""
        ids = self.tokenize(texts)
        truncated = 0
        for i, x in enumerate(ids):
            if len(x) > max_tokens:
                ids[i] = self.truncate(x, max_tokens)
                truncated += 1
        return ids, truncated
