"""``ckpt:DIR``: encoders trained with ``bitextmine train``, and their directory format.

    DIR/config.json           what the model is: format, architecture, shape, tokenizer, teacher
    DIR/model.safetensors     the weights
    DIR/sentencepiece.model   the tokenizer

No pickle anywhere: tensors go to safetensors, everything else to JSON. Files are
written under temporary names and renamed. One encoder class per architecture
(``config["architecture"]``), found in ``ARCHITECTURES``; loading a checkpoint needs
this module and the network's, never the trainer.
"""

from __future__ import annotations

import json
import shutil
from functools import cached_property
from pathlib import Path
from typing import ClassVar

import numpy as np
import torch

from bitextmine import defaults
from bitextmine.encoders.base import Encoder, EncoderIdentity
from bitextmine.errors import BitextmineError
from bitextmine.io.atomic import atomic_path, save_json

FORMAT_NAME = "bitextmine-checkpoint"
FORMAT_VERSION = 1
CONFIG = "config.json"
WEIGHTS = "model.safetensors"
TOKENIZER = "sentencepiece.model"


# --- the format ---------------------------------------------------------------------------

def save_tensors(tensors: dict[str, torch.Tensor], path: Path, metadata: dict | None = None) -> None:
    from safetensors.torch import save_file

    # safetensors refuses shared or non-contiguous storage: give each tensor its own copy
    tensors = {k: v.detach().contiguous().clone() for k, v in tensors.items()}
    with atomic_path(path) as tmp:
        save_file(tensors, str(tmp), metadata={k: json.dumps(v) for k, v in (metadata or {}).items()})


def load_tensors(path: Path) -> dict[str, torch.Tensor]:
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        return load_file(str(path))
    except (SafetensorError, OSError) as e:
        raise BitextmineError(f"cannot read safetensors file: {e}", path=path) from None


def read_config(directory: str | Path) -> dict:
    """``DIR/config.json``, once the directory is checked to hold a whole checkpoint."""
    directory = Path(directory)
    path = directory / CONFIG
    if not path.is_file():
        raise BitextmineError(f"not a bitextmine checkpoint (no {CONFIG})", path=directory)
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise BitextmineError(f"unreadable checkpoint config: {e}", path=path) from None
    if config.get("format") != FORMAT_NAME:
        hint = " (a Hugging Face model? use --encoder hf:DIR)" if "model_type" in config or "architectures" in config \
            else ""
        raise BitextmineError(f"not a {FORMAT_NAME} directory{hint}", path=path)
    if config.get("format_version") != FORMAT_VERSION:
        raise BitextmineError(f"checkpoint format version {config.get('format_version')} is not supported", path=path)
    for name in (WEIGHTS, config.get("tokenizer", TOKENIZER)):
        if not (directory / name).is_file():
            raise BitextmineError(f"checkpoint is missing {name}", path=directory)
    return config


def write_model(directory: Path, config: dict, model: torch.nn.Module, tokenizer_file: Path | None) -> None:
    """Tokenizer, then weights, then config.json: a directory with a config is complete."""
    directory.mkdir(parents=True, exist_ok=True)
    if tokenizer_file is not None and tokenizer_file.resolve() != (directory / TOKENIZER).resolve():
        with atomic_path(directory / TOKENIZER) as tmp:
            shutil.copyfile(tokenizer_file, tmp)
    save_tensors(model.state_dict(), directory / WEIGHTS)
    save_json(directory / CONFIG, {"format": FORMAT_NAME, "format_version": FORMAT_VERSION,
                                   "tokenizer": TOKENIZER, **config})


# --- the encoders -------------------------------------------------------------------------

class CheckpointEncoder(Encoder):
    """What every architecture shares: the directory, the identity, truncation.

    A subclass builds its network and tokenizer from the config (``build``) and embeds a
    batch of token ids (``embed_token_batch``).
    """

    architecture: ClassVar[str]
    max_tokens_model: int | None = None  # the network's own position limit, if any

    def __init__(self, directory: str | Path, config: dict, device: str = "cpu",
                 precision: str = defaults.PRECISION):
        super().__init__(device, precision)
        self.directory = Path(directory)
        self.config = config
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
    def identity(self) -> EncoderIdentity:
        from bitextmine import __version__
        from bitextmine.io.text import file_sha256

        digest = file_sha256(self.directory / WEIGHTS, self.directory / self.config["tokenizer"])
        return EncoderIdentity(name=self.name, version=f"bitextmine=={__version__}", dim=self.dim,
                               weights_sha256=digest, compatible_with=self.config.get("compatible_with"))

    def for_language(self, lang: str | None) -> Encoder:
        from bitextmine.filter.langid import speaks

        routed = self.config.get("teacher_languages")
        if not lang or not routed or not speaks(routed, lang):
            return self
        return self.teacher

    @cached_property
    def teacher(self) -> Encoder:
        """The teacher of a checkpoint that routes its languages to it, opened on first use."""
        from bitextmine.encoders import load_encoder

        teacher = load_encoder(self.config["teacher"], device=self.device, precision=self.precision)
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
        from bitextmine.encoders.pieces import PieceTokenizer
        from bitextmine.encoders.transformer import TransformerConfig, TransformerSentenceEncoder

        self.tokenizer = PieceTokenizer(self.directory / self.config["tokenizer"])
        cfg = TransformerConfig.from_dict(self.config["model"])
        self.max_tokens_model, self.dim = cfg.max_tokens, cfg.dim
        return TransformerSentenceEncoder(cfg)

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        return self.tokenizer.encode(texts)

    def embed_token_batch(self, batch: list[list[int]]) -> np.ndarray:
        from bitextmine.encoders.transformer import pad_batch

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
                 precision: str = defaults.PRECISION):
        from bitextmine.devices import matmul_dtype

        super().__init__(directory, config, device, precision)
        self.module.use_matmul_dtype(matmul_dtype(self.device, self.precision))

    def build(self, weights):
        from bitextmine.encoders.usem3 import EMB_DIM, USEm3Encoder, USEm3Network

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
            from bitextmine.encoders.vocabulary import append_piece_rows

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
        from bitextmine.encoders.usem3 import packed_tokens

        flat, lengths = packed_tokens(batch, self.device)  # the default encoder's shapes and input path
        with torch.inference_mode():
            return self.module(flat, lengths)[: len(batch)].float()


def open_checkpoint(directory: str | Path, device: str = "cpu",
                    precision: str = defaults.PRECISION) -> CheckpointEncoder:
    """The encoder a ``bitextmine train`` directory holds, on ``device``."""
    config = read_config(directory)  # validates the directory first
    architecture = config.get("architecture")
    if architecture not in ARCHITECTURES:
        raise BitextmineError(f"unknown architecture {architecture!r}", path=Path(directory))
    return ARCHITECTURES[architecture](directory, config, device, precision)


__all__ = ["ARCHITECTURES", "CheckpointEncoder", "open_checkpoint", "read_config", "load_tensors", "write_model"]
