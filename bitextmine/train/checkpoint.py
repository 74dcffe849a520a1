"""Checkpoint directories: safetensors weights + config.json + the SentencePiece model.

    CKPT_DIR/config.json           what the model is (architecture, shape, tokenizer, teacher)
    CKPT_DIR/model.safetensors     the weights (of the best dev evaluation)
    CKPT_DIR/sentencepiece.model
    CKPT_DIR/train_log.jsonl       one JSON line per evaluation
    CKPT_DIR/state/last.safetensors + last.json   everything ``--resume`` needs

No pickle anywhere: tensors go to safetensors, everything else to JSON. Files are
written under temporary names and renamed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch

from bitextmine.errors import BitextmineError
from bitextmine.io.atomic import atomic_path, write_json

FORMAT_NAME = "bitextmine-checkpoint"
FORMAT_VERSION = 1
CONFIG = "config.json"
WEIGHTS = "model.safetensors"
TOKENIZER = "sentencepiece.model"
LOG = "train_log.jsonl"
STATE_DIR = "state"


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
    directory.mkdir(parents=True, exist_ok=True)
    if tokenizer_file is not None and tokenizer_file.resolve() != (directory / TOKENIZER).resolve():
        with atomic_path(directory / TOKENIZER) as tmp:
            shutil.copyfile(tokenizer_file, tmp)
    save_tensors(model.state_dict(), directory / WEIGHTS)
    write_json(directory / CONFIG, {"format": FORMAT_NAME, "format_version": FORMAT_VERSION,
                                    "tokenizer": TOKENIZER, **config})
