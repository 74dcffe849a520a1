"""What training moves: a new transformer, or the default encoder's network, behind one interface.

- ``TransformerTrainable``: a transformer from a preset with its own SentencePiece
  vocabulary; every weight moves (AdamW).
- ``USEm3Trainable``: the default encoder's network. Its piece embeddings stay frozen
  unless ``train_embeddings`` (then a float table with sparse gradients, moved by
  SparseAdam); ``freeze_network`` leaves only the embeddings moving. ``vocab_extension``
  appends pieces for the characters its vocabulary lacks (``encoders/vocabulary.py``),
  trained on the target side of the data and kept as the checkpoint's tokenizer.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import sentencepiece
import torch

from bitextmine import defaults
from bitextmine.encoders import vocabulary as V
from bitextmine.encoders.checkpoint import TOKENIZER
from bitextmine.encoders.pieces import PieceTokenizer
from bitextmine.encoders.transformer import PRESETS, TransformerConfig, TransformerSentenceEncoder, pad_batch
from bitextmine.encoders.usem3 import EMB_DIM, USEm3Encoder, USEm3Network, pad_to_token_bucket
from bitextmine.errors import BitextmineError
from bitextmine.io.atomic import atomic_path
from bitextmine.train.config import CHECKPOINT_INIT, TrainConfig
from bitextmine.train.data import ParallelData
from bitextmine.train.optim import Optimizers, build_optimizers

# padded lengths are multiples of this (benchmarks/train_drift.py sets it): smaller than
# inference's, since the padding is computed backwards too
TRAIN_TOKEN_BUCKET = 64


class TrainableEncoder:
    """What the loop needs of a model: tokenize, embed token ids (with grad), describe itself."""

    architecture: str
    module: torch.nn.Module
    tokenizer_file: Path

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        raise NotImplementedError

    def embed(self, batch: list[list[int]], device) -> torch.Tensor:
        """(B, D) L2-normalised embeddings of ``batch``, on ``device``, with gradient."""
        raise NotImplementedError

    def config(self) -> dict:
        """The part of config.json that rebuilds the network (see encoders/checkpoint.py)."""
        raise NotImplementedError


class TransformerTrainable(TrainableEncoder):
    architecture = "transformer"

    def __init__(self, model_cfg: TransformerConfig, tokenizer: PieceTokenizer):
        self.tokenizer = tokenizer
        self.tokenizer_file = tokenizer.model_file
        self.module = TransformerSentenceEncoder(model_cfg, tokenizer.pieces())

    def tokenize(self, texts):
        return self.tokenizer.encode(texts)

    def embed(self, batch, device):
        ids, mask = pad_batch(batch, self.module.cfg.max_tokens, device)
        return self.module(ids, mask)

    def config(self):
        return {"architecture": self.architecture, "model": self.module.cfg.to_dict()}


class USEm3Trainable(TrainableEncoder):
    """The default encoder's network, fine-tuned.

    By default its piece embeddings stay frozen: they hold 16 languages, and fine-tuning
    on two must not move the others' pieces. ``train_embeddings`` lets them move (to
    teach a new language); ``freeze_network`` then trains them alone, leaving the
    network, and so every sentence made of unchanged pieces, exactly as it was.
    """

    architecture = "usem3"

    def __init__(self, max_tokens: int, train_embeddings: bool = False, freeze_network: bool = False,
                 sparse_embeddings: bool = True, checkpoint: Path | None = None):
        if checkpoint is None:
            self.encoder = USEm3Encoder(device="cpu", precision="fp32")  # the tokenizer
            self.module = USEm3Network.from_package(self.encoder.resources)
            self.tokenizer_file = self.encoder.resources / "sp.model"
        else:  # a checkpoint of this network (a student): its weights, its vocabulary and their new rows
            self._from_checkpoint(checkpoint)
        self.module.train().requires_grad_(not freeze_network)
        if train_embeddings:
            self.module.make_embeddings_trainable(sparse=sparse_embeddings)
        elif hasattr(self.module, "piece_embedding"):  # a checkpoint's trained table stays as it is
            self.module.piece_embedding.requires_grad_(False)
        self.max_tokens = max_tokens

    def _from_checkpoint(self, directory: Path) -> None:
        from bitextmine.encoders.checkpoint import open_checkpoint

        opened = open_checkpoint(directory, precision="fp32")
        if opened.architecture != self.architecture:
            raise BitextmineError(f"--init ckpt:DIR trains a checkpoint of the default encoder's network further, "
                                  f"not a {opened.architecture}", path=Path(directory))
        self.module = opened.module
        self.module.use_matmul_dtype(None)
        self.encoder = opened.base
        self.tokenizer_file = Path(directory) / opened.config["tokenizer"]
        self.new_pieces = opened.config.get("model", {}).get("new_pieces", 0)

    def tokenize(self, texts):
        ids, _ = self.encoder.tokenize_truncated(texts, self.max_tokens)
        return ids

    def embed(self, batch, device):
        n_sentences = len(batch)
        if torch.device(device).type == "cpu":  # without it, a long run slows down (oneDNN kernel per shape)
            batch = pad_to_token_bucket(batch, TRAIN_TOKEN_BUCKET)
        lengths = torch.tensor([len(x) for x in batch], dtype=torch.int64, device=device)
        flat = torch.tensor([i for x in batch for i in x], dtype=torch.int64, device=device)
        return self.module(flat, lengths)[:n_sentences]

    def extend_vocabulary(self, out_dir: Path, texts: list[str] | None, model_size: int, seed: int,
                          sparse: bool = True) -> None:
        """New pieces for the uncovered characters of ``texts``, and embedding rows for them
        (the mean of their characters' old rows). ``texts`` None: reuse the extended model
        in ``out_dir`` (a resumed run, whose rows come from its state)."""

        target = out_dir / TOKENIZER
        base = self.encoder._tokenizer
        if texts is None:
            if not target.is_file():
                raise BitextmineError(f"cannot resume: the extended vocabulary {TOKENIZER} is missing", path=out_dir)
            size = sentencepiece.SentencePieceProcessor(model_file=str(target)).get_piece_size()
            rows = np.zeros((size - base.get_piece_size(), EMB_DIM), dtype=np.float32)
        else:
            extension = V.extend_vocabulary(self.tokenizer_file, texts, model_size, seed=seed)
            extension.save(target)
            table = self.module.piece_embedding.weight.detach().cpu().numpy()
            rows = V.initial_rows(table, base, extension.pieces)
        V.append_piece_rows(self.module, base.get_piece_size(), rows, sparse=sparse)
        self.new_pieces = len(rows)
        self.encoder = USEm3Encoder(device="cpu", precision="fp32", tokenizer_file=target)
        self.tokenizer_file = target

    def config(self):
        return {"architecture": self.architecture,
                "model": {"max_tokens": self.max_tokens, "new_pieces": getattr(self, "new_pieces", 0)}}


def build_vocabulary(data: ParallelData, out_dir: Path, vocab_size: int, seed: int) -> Path:
    """A SentencePiece unigram model trained on both sides of the training data."""
    out_dir.mkdir(parents=True, exist_ok=True)
    sentences = data.src + data.tgt
    rng = np.random.default_rng(seed)
    if len(sentences) > defaults.TRAIN_VOCABULARY_SENTENCES:
        chosen = rng.choice(len(sentences), defaults.TRAIN_VOCABULARY_SENTENCES, replace=False)
        sentences = [sentences[i] for i in chosen]
    model = io.BytesIO()  # in memory, then written as every file is: a full disk is an error, not half a model
    try:
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=iter(sentences), model_writer=model, vocab_size=vocab_size, model_type="unigram",
            character_coverage=defaults.TRAIN_SPM_CHARACTER_COVERAGE, num_threads=2, minloglevel=2,
            input_sentence_size=0, shuffle_input_sentence=False)  # every sentence (0: no cap; it takes none of 1-100)
    except RuntimeError as e:
        raise BitextmineError(f"SentencePiece training failed: {e} (try a smaller --vocab-size)") from None
    target = out_dir / TOKENIZER
    with atomic_path(target) as tmp:
        tmp.write_bytes(model.getvalue())
    return target


def build_trainable(cfg: TrainConfig, data: ParallelData, out_dir: Path, resumed: bool, device: str = "cpu",
                    world_size: int = 1) -> TrainableEncoder:
    """The model ``cfg`` asks for, on ``device`` in training mode; a new transformer's
    vocabulary is trained on ``data`` (or reused from ``out_dir`` when resuming)."""
    model = _new_trainable(cfg, data, out_dir, resumed, world_size)
    model.module.to(device).train()
    return model


def _new_trainable(cfg: TrainConfig, data: ParallelData, out_dir: Path, resumed: bool,
                   world_size: int) -> TrainableEncoder:
    if cfg.init is not None:  # usem3, or ckpt:DIR of it
        checkpoint = Path(cfg.init.removeprefix(CHECKPOINT_INIT)) if cfg.init.startswith(CHECKPOINT_INIT) else None
        # sparse embedding gradients: one process only (gradient averaging is dense)
        model = USEm3Trainable(cfg.max_tokens, cfg.train_embeddings, cfg.freeze_network,
                               sparse_embeddings=world_size == 1, checkpoint=checkpoint)
        if cfg.vocab_extension:
            model.extend_vocabulary(out_dir, None if resumed else data.tgt, cfg.vocab_extension, cfg.seed,
                                    sparse=world_size == 1)
        return model
    spm = Path(cfg.spm_model) if cfg.spm_model else (out_dir / TOKENIZER if resumed else None)
    tokenizer = PieceTokenizer(spm or build_vocabulary(data, out_dir, cfg.vocab_size, cfg.seed))
    shape = {**PRESETS[cfg.preset], **{k: getattr(cfg, k) for k in ("dim", "layers", "heads", "ff")
                                      if getattr(cfg, k) is not None}}
    return TransformerTrainable(TransformerConfig(vocab_size=tokenizer.vocab_size, max_tokens=cfg.max_tokens,
                                                  pooling=cfg.pooling, char_ngram_buckets=cfg.char_ngram_buckets,
                                                  **shape), tokenizer)


def build_optimizer(model: TrainableEncoder, cfg: TrainConfig) -> Optimizers:
    """AdamW over what moves of the network, SparseAdam over a sparse piece-embedding table
    (at ``embedding_lr`` when set, else ``embedding_lr_scale`` x ``lr``)."""
    scale = cfg.embedding_lr_scale if cfg.embedding_lr is None else cfg.embedding_lr / cfg.lr
    return build_optimizers(model.module, cfg.lr, cfg.weight_decay, scale)
