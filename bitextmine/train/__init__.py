"""Dual-encoder training: ``train(data, out_dir, cfg)``.

The loop lives in ``bitextmine.train.loop`` and is imported on first use, so that reading
``TrainConfig`` (the CLI does, for its help) does not load torch.
"""

from bitextmine.train.config import TrainConfig, get_lr

_LAZY = ("train", "PieceTokenizer", "TrainableEncoder", "TransformerTrainable", "USEm3Trainable",
         "mine_hard_negatives", "text_keys", "dev_p_at_1", "build_vocabulary")


def __getattr__(name: str):
    if name in _LAZY:
        from bitextmine.train import loop

        return getattr(loop, name)
    raise AttributeError(f"module 'bitextmine.train' has no attribute {name!r}")


__all__ = ["TrainConfig", "get_lr", *_LAZY]
