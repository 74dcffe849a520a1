"""``ckpt:DIR``: encoders trained with ``bitextmine train``, and their directory format.

    DIR/config.json           what the model is: format, architecture, shape, tokenizer, teacher
    DIR/model.safetensors     the weights
    DIR/sentencepiece.model   the tokenizer

No pickle anywhere: tensors go to safetensors, everything else to JSON. Files are
written under temporary names and renamed. One encoder class per architecture
(``config["architecture"]``), found in ``ARCHITECTURES``; loading a checkpoint needs
this module and the network's, never the trainer.

A student that ``bitextmine adapt`` trained on one language's pools also holds the student
it started from, ``DIR/start/`` (a checkpoint of its own), and ``adapted_to`` in its
config.json: the adapted network serves the languages listed there, the start serves the
student's other languages as before (training on Czech news moved them by up to 4 Tatoeba
points), and the teacher its own.

A checkpoint is confined like an embedding set or an index: the file names it reads stay
inside its directory (no ``..``, absolute path or link out), and ``weights_sha256`` in
config.json (the SHA-256 of the weights, then the tokenizer) is verified before use. The
network's shape in config.json must be that of the weights, checked before it is built.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import shutil
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, ClassVar

import numpy as np
import torch
from pydantic import ConfigDict, Field
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from bitextmine import __version__, defaults
from bitextmine.devices import matmul_dtype
from bitextmine.encoders.base import Encoder, EncoderIdentity, MiningThresholds
from bitextmine.encoders.declarations import with_declarations
from bitextmine.encoders.pieces import PieceTokenizer
from bitextmine.encoders.transformer import TransformerConfig, TransformerSentenceEncoder, pad_batch
from bitextmine.encoders.usem3 import EMB_DIM, USEm3Encoder, USEm3Network, packed_tokens
from bitextmine.encoders.vocabulary import append_piece_rows
from bitextmine.errors import BitextmineError
from bitextmine.io.atomic import atomic_path, new_file_mode, save_json
from bitextmine.io.paths import confined, plain_file_name
from bitextmine.io.text import file_sha256
from bitextmine.io.validate import Float, Int, Model, Str, parse
from bitextmine.languages import speaks

log = logging.getLogger(__name__)

FORMAT_NAME = "bitextmine-checkpoint"
FORMAT_VERSION = 1
CONFIG = "config.json"
WEIGHTS = "model.safetensors"
TOKENIZER = "sentencepiece.model"
START = "start"  # an adapted student's starting checkpoint, inside its directory
TeacherLoader = Callable[[str, str, str], Encoder]  # (name, device, precision) -> the teacher


# --- the format ---------------------------------------------------------------------------

def save_tensors(tensors: dict[str, torch.Tensor], path: Path, metadata: dict | None = None) -> None:
    # safetensors refuses shared or non-contiguous storage: give each tensor its own copy
    tensors = {k: v.detach().contiguous().clone() for k, v in tensors.items()}
    with atomic_path(path) as tmp:
        try:
            save_file(tensors, str(tmp), metadata={k: json.dumps(v) for k, v in (metadata or {}).items()})
        except SafetensorError as e:  # safetensors reports a full disk as its own error
            reason = "no space left on the device" if "No space left" in str(e) else str(e).splitlines()[0]
            raise BitextmineError(f"cannot write: {reason}", path=path) from None
        os.chmod(tmp, new_file_mode())  # safetensors makes its files private (0600); a checkpoint is shared


def load_tensors(path: Path) -> dict[str, torch.Tensor]:
    try:
        return load_file(str(path))
    except (SafetensorError, OSError) as e:
        raise BitextmineError(f"cannot read safetensors file: {e}", path=path) from None


class ThresholdsRecord(Model):
    scores: dict[Str, Float]
    measured: Str


class AdaptedTo(Model):
    """The languages an adapted student's network serves; its other languages go to ``start``."""

    languages: list[Str]
    start: Str  # a checkpoint directory inside this one
    start_sha256: Str  # the start's weights_sha256: the start is the one adapt started from


class PoolDigest(Model):
    sentences: Annotated[Int, Field(ge=0)]  # distinct sentences
    sha256: Str  # of them, one a line (``io.text.texts_digest``)


class PoolsThreshold(Model):
    model_config = ConfigDict(extra="allow", frozen=True)  # the counts behind it are for the reader
    threshold: Float
    score: Str
    k: Annotated[Int, Field(gt=0)]


class AdaptRecord(Model):
    """Of ``adapt``'s record, what ``mine`` reads (``adapted_pools``); the rest is for the reader."""

    model_config = ConfigDict(extra="allow", frozen=True)
    pools_threshold: PoolsThreshold | None = None
    pool_digests: Annotated[list[PoolDigest], Field(min_length=2, max_length=2)] | None = None


class CheckpointConfig(Model):
    """What ``config.json`` must hold for loading; the rest (training settings, tasks) is a record."""

    model_config = ConfigDict(extra="allow", frozen=True)
    format: Str
    format_version: Int
    architecture: Str
    tokenizer: Str = TOKENIZER
    model: dict[Str, Any] = {}
    teacher: Str | None = None
    teacher_languages: list[Str] | None = None
    compatible_with: Str | None = None
    mining_thresholds: ThresholdsRecord | None = None  # the teacher's, for the space it shares
    weights_sha256: Str | None = None  # absent in checkpoints written before it was recorded
    adapted_to: AdaptedTo | None = None
    adapt: AdaptRecord | None = None


def adapted_pools(config: dict) -> dict | None:
    """The threshold ``adapt`` chose for the pools it trained the checkpoint on, with what tells
    those pools again (``EncoderIdentity.adapted_pools``); None for a student, whose English
    side keeps the teacher's space (its own estimate was measured the better there)."""
    record = config.get("adapt") or {}
    chosen, pools = record.get("pools_threshold"), record.get("pool_digests")
    if not chosen or not pools or config.get("compatible_with") is not None:
        return None
    return {"threshold": chosen["threshold"], "score": chosen["score"], "k": chosen["k"], "pools": pools}


def checkpoint_files(directory: Path, config: dict, config_path: Path) -> tuple[Path, Path]:
    """(weights, tokenizer) of a checkpoint: plain names inside ``directory``, no link out."""
    weights = confined(directory, WEIGHTS, "the weights file", config_path)
    tokenizer = plain_file_name(directory, config["tokenizer"], ".model", "tokenizer", config_path)
    for path in (weights, tokenizer):
        if not path.is_file():
            raise BitextmineError(f"checkpoint is missing {path.name}", path=directory)
    return weights, tokenizer


def read_config(directory: str | Path) -> dict:
    """``DIR/config.json``, once the directory is checked to hold a whole, undamaged checkpoint."""
    directory = Path(directory)
    path = confined(directory, CONFIG, "config.json", directory)
    if not path.is_file():
        raise BitextmineError(f"not a bitextmine checkpoint (no {CONFIG})", path=directory)
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, RecursionError) as e:  # bad JSON or UTF-8, a 5000-digit number, deep nesting
        raise BitextmineError(f"unreadable checkpoint config: {e}", path=path) from None
    if not isinstance(config, dict) or config.get("format") != FORMAT_NAME:
        hint = " (a Hugging Face model? use --encoder hf:DIR)" if isinstance(config, dict) and (
            "model_type" in config or "architectures" in config) else ""
        raise BitextmineError(f"not a {FORMAT_NAME} directory{hint}", path=path)
    if config.get("format_version") != FORMAT_VERSION:
        raise BitextmineError(f"checkpoint format version {config.get('format_version')!r} is not supported", path=path)
    config = parse(CheckpointConfig, config, path).model_dump()
    files = checkpoint_files(directory, config, path)
    if config["adapted_to"] is not None:
        start = confined(directory, config["adapted_to"]["start"], "adapted_to.start", path)
        if not (start / CONFIG).is_file():
            raise BitextmineError(f"checkpoint is missing the student it was adapted from ({start.name}/{CONFIG})",
                                  path=directory)

    if config["weights_sha256"] is None:
        log.warning("%s: records no checksum of its weights (written by an older bitextmine), so they are not "
                    "verified", path)
    elif file_sha256(*files) != config["weights_sha256"]:
        raise BitextmineError(f"checksum mismatch: {WEIGHTS} or {files[1].name} is damaged or does not belong to "
                              f"this {CONFIG}", path=directory)
    return config


def write_model(directory: Path, config: dict, model: torch.nn.Module, tokenizer_file: Path | None) -> None:
    """Tokenizer, then weights, then config.json with their checksum: a directory with a config is complete."""

    directory.mkdir(parents=True, exist_ok=True)
    if tokenizer_file is not None and tokenizer_file.resolve() != (directory / TOKENIZER).resolve():
        with atomic_path(directory / TOKENIZER) as tmp:
            shutil.copyfile(tokenizer_file, tmp)
    save_tensors(model.state_dict(), directory / WEIGHTS)
    save_json(directory / CONFIG, {"format": FORMAT_NAME, "format_version": FORMAT_VERSION,
                                   "tokenizer": TOKENIZER, **config,
                                   "weights_sha256": file_sha256(directory / WEIGHTS, directory / TOKENIZER)})


def copy_checkpoint(source: Path, directory: Path) -> None:
    """The checkpoint ``source`` as ``directory``: its weights, tokenizer and (an adapted
    student's) start, then its config.json, each under a temporary name first."""
    config = read_config(source)
    directory.mkdir(parents=True, exist_ok=True)
    if config["adapted_to"] is not None:
        copy_checkpoint(source / config["adapted_to"]["start"], directory / config["adapted_to"]["start"])
    for name in (WEIGHTS, config["tokenizer"], CONFIG):
        with atomic_path(directory / name) as tmp:
            shutil.copyfile(source / name, tmp)


def check_shape(shape, weights: dict[str, torch.Tensor], path: Path) -> None:
    """The transformer's shape in config.json (a ``TransformerConfig``) against its weights,
    before the network is built: a config asking for 10^9 layers would otherwise hang there."""
    layers = {int(k.split(".")[2]) for k in weights if k.startswith("encoder.layers.")}
    found = {"vocab_size": _rows(weights, "tokens.weight"), "dim": _cols(weights, "tokens.weight"),
             "max_tokens": _rows(weights, "positions.weight"), "layers": max(layers) + 1 if layers else 0,
             "ff": _rows(weights, "encoder.layers.0.linear1.weight"),
             "char_ngram_buckets": (_rows(weights, "ngrams.weight") or 1) - 1}
    for name, value in found.items():
        if getattr(shape, name) != value:
            raise BitextmineError(f"model.{name} is {getattr(shape, name)!r}, but the weights have {value}",
                                  path=path)
    if not isinstance(shape.heads, int) or shape.heads < 1 or shape.dim % shape.heads:
        raise BitextmineError(f"model.heads {shape.heads!r} does not divide the width {shape.dim}", path=path)
    if shape.pooling not in ("mean", "cls"):
        raise BitextmineError(f"model.pooling {shape.pooling!r}: use mean or cls", path=path)
    if not isinstance(shape.dropout, (int, float)) or not 0 <= shape.dropout < 1:
        raise BitextmineError(f"model.dropout {shape.dropout!r} must be a number in [0, 1)", path=path)


def _rows(weights: dict[str, torch.Tensor], name: str) -> int | None:
    return int(weights[name].shape[0]) if name in weights else None


def _cols(weights: dict[str, torch.Tensor], name: str) -> int | None:
    return int(weights[name].shape[1]) if name in weights and weights[name].dim() == 2 else None


# --- the encoders -------------------------------------------------------------------------

class CheckpointEncoder(Encoder):
    """What every architecture shares: the directory, the identity, truncation.

    A subclass builds its network and tokenizer from the config (``build``) and embeds a
    batch of token ids (``embed_token_batch``).
    """

    architecture: ClassVar[str]
    max_tokens_model: int | None = None  # the network's own position limit, if any

    def __init__(self, directory: str | Path, config: dict, device: str = "cpu",
                 precision: str = defaults.PRECISION, load_teacher: TeacherLoader | None = None):
        super().__init__(device, precision)
        self.directory = Path(directory)
        self.config = config
        self.load_teacher = load_teacher
        self.name = f"ckpt:{self.directory}"
        weights = load_tensors(self.directory / WEIGHTS)
        module = self.build(weights)
        try:
            module.load_state_dict(weights)
        except RuntimeError as e:
            raise BitextmineError(f"weights do not fit the config: {str(e).splitlines()[0]}",
                                  path=self.directory / WEIGHTS) from None
        self.module = module.eval().requires_grad_(False).to(torch.device(self.device))

    def build(self, weights: dict[str, torch.Tensor]) -> torch.nn.Module:
        """The untrained network for this config (``weights`` may tell its shape); sets ``dim``."""
        raise NotImplementedError

    @cached_property
    def weights_sha256(self) -> str:
        """The SHA-256 of the weights, then the tokenizer (recorded, or computed for an older checkpoint)."""
        return self.config.get("weights_sha256") or file_sha256(self.directory / WEIGHTS,
                                                                self.directory / self.config["tokenizer"])

    @cached_property
    def identity(self) -> EncoderIdentity:
        digest = self.weights_sha256
        routed = self.config.get("teacher_languages")
        identity = self.declared_identity(f"bitextmine=={__version__}", digest, self.config.get("compatible_with"),
                                          tuple(routed) if routed is not None else None)
        identity = dataclasses.replace(identity, adapted_pools=adapted_pools(self.config))
        # a checkpoint written before it recorded its teacher's thresholds: those of the space it shares
        return with_declarations(identity)

    @property
    def mining_thresholds(self) -> MiningThresholds | None:
        """The thresholds of the teacher whose space the checkpoint shares, recorded by training."""
        recorded = self.config.get("mining_thresholds")
        return MiningThresholds.from_dict(recorded) if recorded is not None else None

    def route(self, lang: str | None) -> str:
        """Who embeds ``lang``: ``teacher`` (the languages routed to it), ``start`` (an adapted
        student's languages other than those it was adapted to) or ``self``."""
        routed = self.identity.teacher_languages
        if lang and routed and speaks(routed, lang):
            return "teacher"
        adapted = self.config.get("adapted_to")
        if lang and adapted and not speaks(adapted["languages"], lang):
            return "start"
        return "self"

    def for_language(self, lang: str | None) -> Encoder:
        route = self.route(lang)
        if route == "teacher":
            return self.teacher
        if route == "start":
            return self.start.for_language(lang)
        return self

    @cached_property
    def start(self) -> CheckpointEncoder:
        """An adapted student's starting checkpoint (``adapted_to.start``), opened on first use."""
        adapted = self.config["adapted_to"]
        start = open_checkpoint(confined(self.directory, adapted["start"], "adapted_to.start", self.directory / CONFIG),
                                self.device, self.precision, self.load_teacher)
        if start.weights_sha256 != adapted["start_sha256"]:
            raise BitextmineError(f"{adapted['start']}/ is not the student this checkpoint was adapted from "
                                  "(its checksum differs)", path=self.directory / CONFIG)
        if start.identity.space() != self.identity.space():
            raise BitextmineError(f"{adapted['start']}/ embeds in another space than this checkpoint",
                                  path=self.directory / CONFIG)
        return start

    @cached_property
    def teacher(self) -> Encoder:
        """The teacher of a checkpoint that routes its languages to it, opened on first use."""
        if self.load_teacher is None:
            raise BitextmineError("the checkpoint routes languages to its teacher, but was opened without a way to "
                                  "load it (open it with load_encoder)", path=self.directory / CONFIG)
        if ":" in (self.config["teacher"] or ":"):  # hf:NAME, ckpt:DIR: read from outside the checkpoint
            raise BitextmineError(f"the checkpoint routes languages to the teacher {self.config['teacher']!r}: only a "
                                  "built-in encoder (such as usem3) may be named there", path=self.directory / CONFIG)
        teacher = self.load_teacher(self.config["teacher"], self.device, self.precision)
        if teacher.identity.space() != self.identity.space():
            raise BitextmineError(f"the teacher {self.config['teacher']} is not the encoder this checkpoint learned "
                                  "from (another embedding space)", path=self.directory / CONFIG)
        return teacher

    def truncate(self, ids: list[int], max_tokens: int) -> list[int]:
        return ids[: max_tokens - 1] + ids[-1:]  # keep EOS

    def tokenize_truncated(self, texts: list[str], max_tokens: int) -> tuple[list[list[int]], int]:
        return super().tokenize_truncated(texts, min(max_tokens, self.max_tokens_model or max_tokens))


ARCHITECTURES: dict[str, type[CheckpointEncoder]] = {}


def register(cls: type[CheckpointEncoder]) -> type[CheckpointEncoder]:
    ARCHITECTURES[cls.architecture] = cls
    return cls


@register
class TransformerCheckpointEncoder(CheckpointEncoder):
    """A transformer trained from scratch, with its own SentencePiece model."""

    architecture = "transformer"

    def build(self, weights):
        try:
            cfg = TransformerConfig.from_dict(self.config["model"])
        except TypeError as e:  # a key missing or unknown: say which, not the dataclass's words
            missing = re.findall(r"'(\w+)'", str(e))
            said = (f"missing {', '.join(missing)}" if "missing" in str(e) else f"unknown key {', '.join(missing)}"
                    if missing else str(e))
            raise BitextmineError(f"model: {said} (the transformer's shape; known keys: "
                                  f"{', '.join(f.name for f in dataclasses.fields(TransformerConfig))})",
                                  path=self.directory / CONFIG) from None
        check_shape(cfg, weights, self.directory / CONFIG)
        self.tokenizer = PieceTokenizer(self.directory / self.config["tokenizer"])
        self.max_tokens_model, self.dim = cfg.max_tokens, cfg.dim
        return TransformerSentenceEncoder(cfg)

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        return self.tokenizer.encode(texts)

    def embed_token_batch(self, batch: list[list[int]]) -> np.ndarray:
        with torch.inference_mode():
            ids, mask = pad_batch(batch, self.max_tokens_model, self.device)
            return self.module(ids, mask).float().cpu().numpy()


@register
class USEm3CheckpointEncoder(CheckpointEncoder):
    """The default encoder's network fine-tuned, tokenizing with the checkpoint's own
    SentencePiece model: the package's, or the package's extended with new pieces
    (``encoders/vocabulary.py``), whose embedding rows follow the old ones."""

    architecture = "usem3"

    def __init__(self, directory: str | Path, config: dict, device: str = "cpu",
                 precision: str = defaults.PRECISION, load_teacher: TeacherLoader | None = None):
        super().__init__(directory, config, device, precision, load_teacher)
        self.module.use_matmul_dtype(matmul_dtype(self.device, self.precision))

    def build(self, weights):

        # tokenizer and package resources
        self.base = USEm3Encoder(device="cpu", precision="fp32",
                                 tokenizer_file=self.directory / self.config["tokenizer"])
        self.dim = EMB_DIM
        network = USEm3Network.from_package(self.base.resources)
        table = weights.get("piece_embedding.weight")
        if table is None:
            return network
        pieces = self.base._tokenizer.get_piece_size()
        if table.shape[0] == network.table.shape[0]:  # trained with --train-embeddings
            network.make_embeddings_trainable()
        elif table.shape[0] == pieces:  # and new pieces: the package's rows, then theirs
            base = USEm3Encoder(device="cpu", precision="fp32")._tokenizer.get_piece_size()
            append_piece_rows(network, base, np.zeros((pieces - base, EMB_DIM), dtype=np.float32))
        else:
            raise BitextmineError(f"{table.shape[0]} piece embeddings, but the tokenizer has {pieces} pieces",
                                  path=self.directory / WEIGHTS)
        return network

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        return self.base.tokenize(texts)

    def embed_token_batch(self, batch: list[list[int]]) -> np.ndarray:
        return self.embed_token_batch_on_device(batch).cpu().numpy()

    def embed_token_batch_on_device(self, batch: list[list[int]]) -> torch.Tensor:
        flat, lengths = packed_tokens(batch, self.device)  # the default encoder's shapes and input path
        with torch.inference_mode():
            return self.module(flat, lengths)[: len(batch)].float()


def open_checkpoint(directory: str | Path, device: str = "cpu", precision: str = defaults.PRECISION,
                    load_teacher: TeacherLoader | None = None) -> CheckpointEncoder:
    """The encoder a ``bitextmine train`` directory holds, on ``device``. ``load_teacher``:
    how to open the teacher it routes languages to (the registry's ``load_encoder``)."""
    config = read_config(directory)  # validates the directory first
    architecture = config.get("architecture")
    if architecture not in ARCHITECTURES:
        raise BitextmineError(f"unknown architecture {architecture!r}", path=Path(directory))
    return ARCHITECTURES[architecture](directory, config, device, precision, load_teacher)


__all__ = ["ARCHITECTURES", "CheckpointEncoder", "copy_checkpoint", "open_checkpoint", "read_config", "load_tensors",
           "write_model"]
