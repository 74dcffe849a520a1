"""Dual-encoder training: ``train(data, out_dir, cfg)``.

The settings are ``config`` (declared once in ``settings``) and ``recipes``; the loop is
``loop``, the objectives ``objective`` and ``losses``, what moves ``trainables`` and
``optim``, batches ``sampling`` and ``negatives``, the run's files ``run_state``. Training
imports the encoders (networks, checkpoint format); loading an encoder never imports training.
"""

from importlib import import_module

from bitextmine.train.config import TrainConfig, get_lr

# Re-exported on first use: these modules import torch (2.5 s; ARCHITECTURE.md, start-up), and the
# command line reads TrainConfig for every `bitextmine --help`.
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
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'bitextmine.train' has no attribute {name!r}")


__all__ = ["TrainConfig", "get_lr", *_LAZY]
