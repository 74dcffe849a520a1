"""What ``embed`` is asked to do: ``EmbedConfig``."""

from __future__ import annotations

from dataclasses import dataclass

from bitextmine import defaults


@dataclass(frozen=True)
class EmbedConfig:
    encoder: str = defaults.ENCODER
    device: str = defaults.DEVICE
    precision: str = defaults.PRECISION
    batch_tokens: int | None = None  # None: defaults.BATCH_TOKENS, scaled up on GPU
    max_tokens: int = defaults.MAX_TOKENS
    errors: str = defaults.TEXT_ERRORS
    overwrite: bool = False
    lang: str | None = None  # the text's language: an encoder that routes languages picks its part by it

    def batch_tokens_for(self, device: str) -> int:
        if self.batch_tokens is not None:
            return self.batch_tokens
        factor = defaults.GPU_BATCH_TOKENS_FACTOR if device.startswith("cuda") else 1
        return defaults.BATCH_TOKENS * factor
