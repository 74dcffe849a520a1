"""Self-training on the pools being mined: ``adapt(src, tgt, encoder, out_dir, cfg)``.

The loop lives in ``bitextmine.adapt.loop`` and is imported on first use, so that reading
``AdaptConfig`` (the CLI does, for its help) does not load torch.
"""

from bitextmine.adapt.config import AdaptConfig

_LAZY = {"adapt": "bitextmine.adapt.loop", "AdaptedEncoder": "bitextmine.adapt.model",
         "read_pool": "bitextmine.adapt.pools", "RoundRecord": "bitextmine.adapt.rounds"}


def __getattr__(name: str):
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'bitextmine.adapt' has no attribute {name!r}")


__all__ = ["AdaptConfig", *_LAZY]
