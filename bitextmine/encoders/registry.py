"""Encoders looked up by name, and what a recorded identity declares.

Names on the command line:
- ``usem3``: USE multilingual v3, the default (16 languages, ships with the toolkit);
- ``ckpt:DIR``: an encoder trained or fine-tuned with ``bitextmine train``;
- ``hf:NAME_OR_DIR``: a sentence-transformers model, e.g. ``hf:sentence-transformers/LaBSE``
  (needs the ``hf`` extra);
- any name registered by another package under the ``bitextmine.encoders`` entry-point
  group, whose value is a callable ``(argument, device, precision) -> Encoder``. Its encoder
  declares its own languages and mining thresholds (``Encoder.languages``,
  ``Encoder.mining_thresholds``), which its identity carries into the sets it embeds.

The encoders' modules import torch; each is imported when its kind is first loaded, so that
a stage that only reads identities (index, filter, the command line's help) starts without
it (2.5 s; ARCHITECTURE.md, start-up).
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path

from bitextmine import defaults
from bitextmine.encoders.base import Encoder
from bitextmine.errors import BitextmineError, printable

EncoderFactory = Callable[[str, str, str], Encoder]


def _usem3(argument: str, device: str, precision: str) -> Encoder:
    from bitextmine.encoders.usem3 import USEm3Encoder  # torch, on first use (see the module's docstring)

    if argument:
        raise BitextmineError("usem3 takes no argument")
    return USEm3Encoder(device=device, precision=precision)


def _huggingface(argument: str, device: str, precision: str) -> Encoder:
    from bitextmine.encoders.huggingface import SentenceTransformerEncoder  # sentence-transformers, on first use

    if not argument:
        raise BitextmineError("hf: needs a model name or directory, e.g. hf:sentence-transformers/LaBSE")
    return SentenceTransformerEncoder(argument, device=device, precision=precision)


def _checkpoint(argument: str, device: str, precision: str) -> Encoder:
    from bitextmine.encoders.checkpoint import open_checkpoint  # torch, on first use

    if not argument:
        raise BitextmineError("ckpt: needs a checkpoint directory, e.g. ckpt:models/de-en")
    return open_checkpoint(argument, device=device, precision=precision, load_teacher=load_encoder)


BUILTIN: dict[str, EncoderFactory] = {"usem3": _usem3, "ckpt": _checkpoint, "hf": _huggingface}


def _plugins() -> dict[str, EncoderFactory]:
    return {ep.name: ep.load for ep in entry_points(group="bitextmine.encoders")}  # loaded on use


def _suggestion(spec: str) -> str:
    """What a name that is a path probably meant: ``ckpt/x`` -> ``ckpt:ckpt/x``."""
    shown = printable(spec)
    if not ("/" in spec or Path(spec).is_dir()):
        return ""
    config = Path(spec) / "config.json"
    if (Path(spec) / "modules.json").is_file() or (config.is_file() and "model_type" in config.read_text(
            encoding="utf-8", errors="replace")):
        return f"; a sentence-transformers model directory is named hf:{shown}"
    return f"; a checkpoint of bitextmine train is named ckpt:{shown}"


def check_encoder_spec(spec: str) -> str:
    """``spec`` when its kind is known (a built-in or a plugin), checked before any work."""
    kind = spec.partition(":")[0]
    if kind in BUILTIN:
        return spec
    plugins = _plugins()
    if kind not in plugins:
        known = ", ".join(sorted({*BUILTIN, *plugins}))
        raise BitextmineError(f"unknown encoder {spec!r}: known kinds are {known}{_suggestion(spec)}")
    return spec


def load_encoder(spec: str = defaults.ENCODER, device: str = "cpu", precision: str = defaults.PRECISION) -> Encoder:
    """``usem3``, ``hf:NAME``, ``PLUGIN:ARG`` -> an Encoder on ``device``."""
    kind, _, argument = check_encoder_spec(spec).partition(":")
    if kind in BUILTIN:
        return BUILTIN[kind](argument, device, precision)
    return _plugins()[kind]()(argument, device, precision)
