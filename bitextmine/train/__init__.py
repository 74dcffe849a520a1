"""Dual-encoder training: ``train(data, out_dir, cfg)``.

The loop lives in ``bitextmine.train.loop`` and is imported on first use, so that reading
``TrainConfig`` (the CLI does, for its help) does not load torch. Training imports the
encoders (networks, checkpoint format); loading an encoder never imports training.
"""

from bitextmine.train.config import TrainConfig, get_lr

_LAZY = {
    "train": "bitextmine.train.loop",
    "dev_p_at_1": "bitextmine.train.loop",
    "TrainableEncoder": "bitextmine.train.trainables",
    "TransformerTrainable": "bitextmine.train.trainables",
    "USEm3Trainable": "bitextmine.train.trainables",
    "build_vocabulary": "bitextmine.train.trainables",
    "mine_hard_negatives": "bitextmine.train.negatives",
    "text_keys": "bitextmine.train.negatives",
    "PieceTokenizer": "bitextmine.encoders.pieces",
}


def __getattr__(name: str):
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'bitextmine.train' has no attribute {name!r}")


__all__ = ["TrainConfig", "get_lr", *_LAZY]
