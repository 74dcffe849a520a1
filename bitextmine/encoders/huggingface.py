"""``hf:NAME_OR_DIR``: sentence-transformers models (LaBSE and friends), the ``hf`` extra.

A model name is loaded from the local Hugging Face cache, else downloaded from the Hub;
set ``HF_HUB_OFFLINE=1`` to make sure nothing is downloaded (offline, the hub's client
otherwise retries for about a minute before it gives up).
"""

from __future__ import annotations

import hashlib
from functools import cached_property
from importlib.metadata import version

import numpy as np
import torch

from bitextmine import defaults
from bitextmine.devices import matmul_dtype
from bitextmine.encoders.base import Encoder, EncoderIdentity
from bitextmine.errors import BitextmineError


class SentenceTransformerEncoder(Encoder):
    def __init__(self, model: str, device: str = "cpu", precision: str = defaults.PRECISION):
        super().__init__(device, precision)
        self.model_name = model
        self.name = f"hf:{model}"
        model = self.model
        dimension = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        self.dim = int(dimension())

    @cached_property
    def model(self):
        try:
            from sentence_transformers import SentenceTransformer  # the hf extra: it may be missing
        except ImportError:
            raise BitextmineError(
                "hf: encoders need sentence-transformers: pip install 'bitextmine[hf]'"
            ) from None
        try:
            model = SentenceTransformer(self.model_name, device=self.device)
        except (OSError, ValueError) as e:
            reason = (str(e).strip().splitlines() or [type(e).__name__])[0]  # the hub's advice runs on for lines
            raise BitextmineError(f"cannot load sentence-transformers model: {reason} (a name not in the local "
                                  "cache is downloaded from the Hugging Face Hub)", path=self.model_name) from e
        return model.eval()

    @cached_property
    def identity(self) -> EncoderIdentity:
        # The weights themselves, so that a re-saved or fine-tuned copy is a different encoder.
        digest = hashlib.sha256()
        for key, tensor in sorted(self.model.state_dict().items()):
            digest.update(key.encode())
            digest.update(tensor.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy())
        return self.declared_identity(version=f"sentence-transformers=={version('sentence-transformers')}",
                                      weights_sha256=digest.hexdigest())

    @property
    def _tokenizer(self):
        return self.model.tokenizer

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        return self._tokenizer(texts, add_special_tokens=True, truncation=False, verbose=False)["input_ids"]

    def truncate(self, ids: list[int], max_tokens: int) -> list[int]:
        limit = min(max_tokens, self.model.max_seq_length or max_tokens)
        return ids[: limit - 1] + ids[-1:]  # keep the closing special token ([SEP], </s>)

    def tokenize_truncated(self, texts: list[str], max_tokens: int) -> tuple[list[list[int]], int]:
        # the model's own position limit applies even when --max-tokens is larger
        return super().tokenize_truncated(texts, min(max_tokens, self.model.max_seq_length or max_tokens))

    def embed_token_batch(self, batch: list[list[int]]) -> np.ndarray:

        features = self._tokenizer.pad({"input_ids": batch}, return_tensors="pt")
        features = {k: v.to(self.device) for k, v in features.items()}
        dtype = matmul_dtype(self.device, self.precision)
        device_type = "cuda" if self.device.startswith("cuda") else "cpu"
        autocast = torch.autocast(device_type, dtype=dtype or torch.float32, enabled=dtype is not None)
        with torch.inference_mode(), autocast:
            out = self.model(features)["sentence_embedding"]
        return torch.nn.functional.normalize(out.float(), dim=1).cpu().numpy()
