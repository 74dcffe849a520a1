"""``ckpt:DIR``: encoders trained with ``bitextmine train``."""

from __future__ import annotations

import hashlib
from functools import cached_property
from pathlib import Path

import numpy as np

from bitextmine.encoders.base import Encoder, EncoderIdentity


class CheckpointEncoder(Encoder):
    def __init__(self, directory: str, device: str = "cpu", precision: str = "auto"):
        from bitextmine.train import checkpoint as ckpt

        super().__init__(device, precision)
        self.directory = Path(directory)
        self.config = ckpt.read_config(self.directory)  # validates the directory first
        self.name = f"ckpt:{self.directory}"
        self.architecture = self.config.get("architecture")
        self._load()

    def _load(self) -> None:
        import torch

        from bitextmine.devices import matmul_dtype
        from bitextmine.errors import BitextmineError
        from bitextmine.train import checkpoint as ckpt

        weights = ckpt.load_tensors(self.directory / ckpt.WEIGHTS)
        if self.architecture == "transformer":
            from bitextmine.train import PieceTokenizer
            from bitextmine.train.model import TransformerConfig, TransformerSentenceEncoder

            self.tokenizer = PieceTokenizer(self.directory / self.config["tokenizer"])
            cfg = TransformerConfig.from_dict(self.config["model"])
            module = TransformerSentenceEncoder(cfg)
            self.max_tokens_model = cfg.max_tokens
            self.dim = cfg.dim
        elif self.architecture == "usem3":
            from bitextmine.encoders.usem3 import EMB_DIM, USEm3Encoder

            base = USEm3Encoder(device="cpu", precision="fp32")
            self.tokenizer = base
            with np.load(base.resources / "weights.npz", allow_pickle=False) as z:
                from bitextmine.encoders.usem3 import _build_network

                module = _build_network({k: z[k] for k in z.files})
            self.max_tokens_model = None
            self.dim = EMB_DIM
        else:
            raise BitextmineError(f"unknown architecture {self.architecture!r}", path=self.directory)
        if self.architecture == "usem3" and "piece_embedding.weight" in weights:
            module.make_embeddings_trainable()
        try:
            module.load_state_dict(weights)
        except RuntimeError as e:
            raise BitextmineError(f"weights do not fit the config: {str(e).splitlines()[0]}",
                                  path=self.directory / ckpt.WEIGHTS) from None
        self.module = module.eval().requires_grad_(False).to(torch.device(self.device))
        if self.architecture == "usem3":
            self.module.use_matmul_dtype(matmul_dtype(self.device, self.precision))

    @cached_property
    def identity(self) -> EncoderIdentity:
        from bitextmine import __version__
        from bitextmine.train import checkpoint as ckpt

        digest = hashlib.sha256()
        for name in (ckpt.WEIGHTS, self.config["tokenizer"]):
            digest.update((self.directory / name).read_bytes())
        return EncoderIdentity(name=self.name, version=f"bitextmine=={__version__}", dim=self.dim,
                               weights_sha256=digest.hexdigest(), compatible_with=self.config.get("compatible_with"))

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        return self.tokenizer.tokenize(texts) if self.architecture == "usem3" else self.tokenizer.encode(texts)

    def truncate(self, ids: list[int], max_tokens: int) -> list[int]:
        return ids[: max_tokens - 1] + ids[-1:]

    def tokenize_truncated(self, texts, max_tokens):
        limit = min(max_tokens, self.max_tokens_model or max_tokens)
        return super().tokenize_truncated(texts, limit)

    def embed_token_batch(self, batch: list[list[int]]) -> np.ndarray:
        import torch

        with torch.inference_mode():
            if self.architecture == "usem3":
                lengths = torch.tensor([len(x) for x in batch], dtype=torch.int64, device=self.device)
                flat = torch.tensor([i for x in batch for i in x], dtype=torch.int64, device=self.device)
                out = self.module(flat, lengths)
            else:
                from bitextmine.train.model import pad_batch

                ids, mask = pad_batch(batch, self.max_tokens_model, self.device)
                out = self.module(ids, mask)
        return out.float().cpu().numpy()
