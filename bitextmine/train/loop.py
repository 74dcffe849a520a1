"""Dual-encoder training: ``train(data, out_dir, cfg)``, read top to bottom.

1. data: parallel pairs, a seeded dev slice;
2. vocabulary: SentencePiece unigram on both sides (or a given model);
3. model: a transformer from a preset, or the default encoder's network (``init="usem3"``);
4. objective: LaBSE's additive-margin in-batch softmax (+ hard negatives), distillation
   toward a teacher, or both; mSimCSE-style NLI triples;
5. loop: AdamW, warmup + linear decay (``get_lr``), clipping, accumulation, AMP, dev P@1
   with early stopping, checkpoints every N steps and on SIGINT, exact ``--resume``.
"""

from __future__ import annotations

import json
import logging
import signal
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from bitextmine import __version__
from bitextmine.errors import BitextmineError
from bitextmine.io.atomic import atomic_path, write_json
from bitextmine.train import checkpoint as ckpt
from bitextmine.train.config import TrainConfig, get_lr
from bitextmine.train.data import ParallelData
from bitextmine.train.losses import AdditiveMarginSoftmaxLoss, ContrastiveNLILoss, DistillationLoss
from bitextmine.train.model import PRESETS, TransformerConfig, TransformerSentenceEncoder, pad_batch
from bitextmine.train.optim import Optimizers, build_optimizers, clip_gradients

log = logging.getLogger(__name__)


# --- models behind one small interface --------------------------------------------------

class PieceTokenizer:
    """SentencePiece ids shifted by one, so that 0 is padding; BOS first, EOS last."""

    def __init__(self, model_file: str | Path):
        import sentencepiece

        self.model_file = Path(model_file)
        self.sp = sentencepiece.SentencePieceProcessor(model_file=str(model_file))

    @property
    def vocab_size(self) -> int:
        return self.sp.get_piece_size() + 1

    def pieces(self) -> list[str]:
        return ["<pad>"] + [self.sp.id_to_piece(i) for i in range(self.sp.get_piece_size())]

    def encode(self, texts: list[str]) -> list[list[int]]:
        return [[i + 1 for i in ids] for ids in self.sp.encode(texts, add_bos=True, add_eos=True)]


class TrainableEncoder:
    """What the loop needs of a model: tokenize, embed token ids (with grad), save."""

    architecture: str
    module: torch.nn.Module
    tokenizer_file: Path

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        raise NotImplementedError

    def embed(self, batch: list[list[int]], device) -> torch.Tensor:
        raise NotImplementedError

    def config(self) -> dict:
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


TRAIN_TOKEN_BUCKET = 64  # smaller than inference's: the padding is computed backwards too


class USEm3Trainable(TrainableEncoder):
    """The default encoder's network, fine-tuned.

    By default its piece embeddings stay frozen: they hold 16 languages, and fine-tuning
    on two must not move the others' pieces. ``train_embeddings`` lets them move (to
    teach a new language); ``freeze_network`` then trains them alone, leaving the
    network, and so every sentence made of unchanged pieces, exactly as it was.
    """

    architecture = "usem3"

    def __init__(self, max_tokens: int, train_embeddings: bool = False, freeze_network: bool = False,
                 sparse_embeddings: bool = True):
        from bitextmine.encoders.usem3 import USEm3Encoder

        encoder = USEm3Encoder(device="cpu", precision="fp32")
        self.encoder = encoder
        self.module = encoder.network.train().requires_grad_(not freeze_network)
        if train_embeddings:
            self.module.make_embeddings_trainable(sparse=sparse_embeddings)
        self.module.use_matmul_dtype(None)
        self.tokenizer_file = encoder.resources / "sp.model"
        self.max_tokens = max_tokens

    def tokenize(self, texts):
        ids, _ = self.encoder.tokenize_truncated(texts, self.max_tokens)
        return ids

    def embed(self, batch, device):
        from bitextmine.encoders.usem3 import pad_to_token_bucket

        n_sentences = len(batch)
        if torch.device(device).type == "cpu":  # without it, a long run slows down (oneDNN kernel per shape)
            batch = pad_to_token_bucket(batch, TRAIN_TOKEN_BUCKET)
        lengths = torch.tensor([len(x) for x in batch], dtype=torch.int64, device=device)
        flat = torch.tensor([i for x in batch for i in x], dtype=torch.int64, device=device)
        return self.module(flat, lengths)[:n_sentences]

    def config(self):
        return {"architecture": self.architecture, "model": {"max_tokens": self.max_tokens}}


def build_vocabulary(data: ParallelData, out_dir: Path, vocab_size: int, seed: int) -> Path:
    """A SentencePiece unigram model trained on both sides of the training data."""
    import sentencepiece

    out_dir.mkdir(parents=True, exist_ok=True)
    prefix = out_dir / ".spm-training"
    sentences = data.src + data.tgt
    rng = np.random.default_rng(seed)
    if len(sentences) > 1_000_000:  # plenty for a vocabulary, and bounded time
        sentences = [sentences[i] for i in rng.choice(len(sentences), 1_000_000, replace=False)]
    try:
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=iter(sentences), model_prefix=str(prefix), vocab_size=vocab_size,
            model_type="unigram", character_coverage=0.9995, num_threads=2, minloglevel=2,
            input_sentence_size=len(sentences), shuffle_input_sentence=False)
    except RuntimeError as e:
        raise BitextmineError(f"SentencePiece training failed: {e} (try a smaller --vocab-size)") from None
    target = out_dir / ckpt.TOKENIZER
    Path(f"{prefix}.model").replace(target)
    Path(f"{prefix}.vocab").unlink(missing_ok=True)
    return target


# --- the run ------------------------------------------------------------------------------

@dataclass
class RunState:
    step: int = 0
    best_dev: float = -1.0
    bad_evals: int = 0
    seconds: float = 0.0
    history: list = field(default_factory=list)


def _batches(n: int, batch_size: int, seed: int, start_batch: int):
    """Endless seeded batches of row indices; batch b is the same on every run."""
    per_epoch = max(1, n // batch_size)
    b = start_batch
    epoch, perm = -1, None
    while True:
        e = b // per_epoch
        if e != epoch:
            epoch = e
            perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed * 100_003 + e))
        pos = (b % per_epoch) * batch_size
        yield perm[pos : pos + batch_size].tolist()
        b += 1


def _encode_eval(model: TrainableEncoder, ids: list[list[int]], device, batch_size: int = 256) -> np.ndarray:
    out = []
    for start in range(0, len(ids), batch_size):
        out.append(model.embed(ids[start : start + batch_size], device).float().cpu().numpy())
    return np.concatenate(out)


def dev_p_at_1(model: TrainableEncoder, dev_src: list[list[int]], dev_tgt: list[list[int]], device) -> float:
    """Mean P@1 of both directions on the dev pairs, in %."""
    from bitextmine.mine.knn import exact_knn_both_ways

    model.module.eval()
    with torch.no_grad():
        x, y = _encode_eval(model, dev_src, device), _encode_eval(model, dev_tgt, device)
    model.module.train()
    fwd, bwd = exact_knn_both_ways(x, y, 1)
    hits = (fwd.ids[:, 0] == np.arange(len(x))).mean() + (bwd.ids[:, 0] == np.arange(len(y))).mean()
    return float(50 * hits)


def _amp_dtype(cfg: TrainConfig, device: str):
    if cfg.amp == "off":
        return None
    if device.startswith("cuda"):
        return torch.bfloat16
    return torch.bfloat16 if torch.ops.mkldnn._is_mkldnn_bf16_supported() else None


def _state_tensors(model: TrainableEncoder, optimizer: Optimizers) -> tuple[dict, dict]:
    """Flatten model + optimizer state into tensors (safetensors) and scalars (JSON)."""
    tensors = {f"model.{k}": v for k, v in model.module.state_dict().items()}
    param_groups = []
    for j, opt in enumerate(optimizer.state_dict()):
        for pid, st in opt["state"].items():
            for name, value in st.items():
                tensors[f"optim{j}.{pid}.{name}"] = value if torch.is_tensor(value) else torch.tensor(value)
        param_groups.append(opt["param_groups"])
    tensors["rng.torch"] = torch.get_rng_state()
    return tensors, {"param_groups": param_groups}


def _restore_state(model: TrainableEncoder, optimizer: Optimizers, tensors: dict, scalars: dict) -> None:
    model.module.load_state_dict({k[6:]: v for k, v in tensors.items() if k.startswith("model.")})
    states: list[dict[int, dict]] = [{} for _ in scalars["param_groups"]]
    for key, value in tensors.items():
        if key.startswith("optim"):
            which, pid, name = key.split(".", 2)
            states[int(which[len("optim"):])].setdefault(int(pid), {})[name] = value
    optimizer.load_state_dict([{"state": st, "param_groups": groups}
                               for st, groups in zip(states, scalars["param_groups"], strict=True)])
    torch.set_rng_state(tensors["rng.torch"])


def _save_state(out_dir: Path, model, optimizer, state: RunState, cfg: TrainConfig) -> None:
    tensors, scalars = _state_tensors(model, optimizer)
    (out_dir / ckpt.STATE_DIR).mkdir(parents=True, exist_ok=True)
    ckpt.save_tensors(tensors, out_dir / ckpt.STATE_DIR / "last.safetensors")
    write_json(out_dir / ckpt.STATE_DIR / "last.json",
               {"run": asdict(state), "optimizer": scalars, "config": cfg.run_signature()})


def _append_log(out_dir: Path, record: dict) -> None:
    path = out_dir / ckpt.LOG
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    with atomic_path(path) as tmp:
        tmp.write_text(old + json.dumps(record) + "\n", encoding="utf-8")


def train(data: ParallelData, out_dir: str | Path, cfg: TrainConfig = TrainConfig(),
          dev: ParallelData | None = None, resume: bool = False, progress: bool = True) -> dict:
    """Train (or fine-tune) an encoder; the best dev checkpoint ends up in ``out_dir``."""
    from bitextmine.devices import resolve_devices
    from bitextmine.progress import progress_bar
    from bitextmine.train.distributed import agree, average_gradients, init_from_environment, world

    out_dir = Path(out_dir)
    device = init_from_environment() or resolve_devices(cfg.device)[0]
    rank, world_size = world()
    torch.manual_seed(cfg.seed)
    if len(data) < 2:
        raise BitextmineError("training needs at least two pairs")
    if dev is None:
        dev_size = min(cfg.dev_size, len(data) // 10)
        data, dev = data.split(dev_size, cfg.seed)
    resumed = resume and (out_dir / ckpt.STATE_DIR / "last.json").is_file()
    if (out_dir / ckpt.CONFIG).exists() and not resumed:
        raise BitextmineError("already holds a checkpoint: use --resume to continue it, or another -o", path=out_dir)

    out_dir.mkdir(parents=True, exist_ok=True)
    # 2-3. vocabulary and model
    if cfg.init == "usem3":
        # sparse embedding gradients: one process only (gradient averaging is dense)
        model: TrainableEncoder = USEm3Trainable(cfg.max_tokens, cfg.train_embeddings, cfg.freeze_network,
                                                 sparse_embeddings=world_size == 1)
    elif cfg.init is None:
        spm = Path(cfg.spm_model) if cfg.spm_model else (out_dir / ckpt.TOKENIZER if resumed else None)
        if spm is None:
            spm = build_vocabulary(data, out_dir, cfg.vocab_size, cfg.seed)
        tokenizer = PieceTokenizer(spm)
        if cfg.preset not in PRESETS:
            raise BitextmineError(f"unknown preset {cfg.preset!r}: use one of {', '.join(PRESETS)}")
        shape = {**PRESETS[cfg.preset], **{k: getattr(cfg, k) for k in ("dim", "layers", "heads", "ff")
                                          if getattr(cfg, k) is not None}}
        model = TransformerTrainable(TransformerConfig(vocab_size=tokenizer.vocab_size, max_tokens=cfg.max_tokens,
                                                       pooling=cfg.pooling,
                                                       char_ngram_buckets=cfg.char_ngram_buckets, **shape), tokenizer)
    else:
        raise BitextmineError(f"unknown --init {cfg.init!r}: use usem3 (or leave it out to train from scratch)")
    model.module.to(device).train()

    # 4. objective
    ranking = AdditiveMarginSoftmaxLoss(cfg.margin, cfg.scale)
    distill = DistillationLoss()
    t0 = time.time()
    src_ids, tgt_ids = model.tokenize(data.src), model.tokenize(data.tgt)
    nli_ids = None if data.negative is None else model.tokenize(data.negative)
    if nli_ids is not None:
        log.info("NLI triples: contrastive loss with contradictions as hard negatives (mSimCSE)")
    dev_src, dev_tgt = model.tokenize(dev.src), model.tokenize(dev.tgt)
    teacher_vectors = None
    compatible_with = None
    if cfg.teacher:
        from bitextmine.encoders import load_encoder

        teacher = load_encoder(cfg.teacher, device=device)
        log.info("embedding %d sources with the teacher %s", len(data), cfg.teacher)
        teacher_vectors = torch.from_numpy(teacher.encode(data.src))
        compatible_with = teacher.identity.space()
    src_keys, tgt_keys = text_keys(data.src), text_keys(data.tgt)
    negatives = None
    if cfg.hard_negatives:
        negatives = mine_hard_negatives(data, cfg.hard_negatives, cfg.hard_negative_encoder, device,
                                        src_keys, tgt_keys)
    log.info("prepared %d training and %d dev pairs in %.0f s", len(data), len(dev), time.time() - t0)

    # 5. loop
    params = [p for p in model.module.parameters() if p.requires_grad]
    if not params:
        raise BitextmineError("nothing to train: --freeze-network needs --train-embeddings")
    optimizer = build_optimizers(model.module, cfg.lr, cfg.weight_decay, cfg.embedding_lr_scale)
    state = RunState()
    if resumed:
        saved = json.loads((out_dir / ckpt.STATE_DIR / "last.json").read_text())
        if saved["config"] != cfg.run_signature():
            changed = sorted(k for k in saved["config"] if saved["config"][k] != cfg.run_signature().get(k))
            raise BitextmineError(f"--resume with different settings ({', '.join(changed)})", path=out_dir)
        _restore_state(model, optimizer, ckpt.load_tensors(out_dir / ckpt.STATE_DIR / "last.safetensors"),
                       saved["optimizer"])
        state = RunState(**saved["run"])
        log.info("resuming at step %d (best dev P@1 %.2f)", state.step, state.best_dev)

    interrupted = {"flag": False}

    def on_sigint(signum, frame):
        interrupted["flag"] = True

    previous_handler = signal.signal(signal.SIGINT, on_sigint)
    amp = _amp_dtype(cfg, device)
    device_type = "cuda" if device.startswith("cuda") else "cpu"
    config_record = {**model.config(), "compatible_with": compatible_with, "teacher": cfg.teacher,
                     "train_config": asdict(cfg), "bitextmine_version": __version__}
    # with several processes, each takes its own share of every global batch
    batches = _batches(len(data), cfg.batch_size, cfg.seed, state.step * cfg.accumulation)
    if world_size > 1:
        per_rank = cfg.batch_size // world_size
        batches = (rows[rank * per_rank : (rank + 1) * per_rank] for rows in batches)
    started, pairs_seen = time.time(), 0
    stop_reason = "max_steps"
    try:
        with progress_bar(total=cfg.max_steps, desc="train", unit="step", disable=not progress) as bar:
            bar.update(state.step)
            while state.step < cfg.max_steps:
                lr = get_lr(state.step, cfg)
                optimizer.set_lr(lr)
                total = 0.0
                for _ in range(cfg.accumulation):
                    rows = next(batches)
                    with torch.autocast(device_type, dtype=amp or torch.float32, enabled=amp is not None):
                        if nli_ids is not None:
                            loss = _nli_loss(model, rows, src_ids, tgt_ids, nli_ids, cfg, device)
                        else:
                            loss = _batch_loss(model, rows, src_ids, tgt_ids, src_keys, tgt_keys, negatives,
                                               teacher_vectors, ranking, distill, cfg, device)
                    (loss / cfg.accumulation).backward()
                    total += loss.item() / cfg.accumulation
                    pairs_seen += len(rows)
                average_gradients(params)
                clip_gradients(params, cfg.clip_norm)
                optimizer.step()
                optimizer.zero_grad()
                state.step += 1
                bar.update(1)
                elapsed = time.time() - started
                bar.set_postfix(loss=f"{total:.3f}", pairs_s=f"{pairs_seen / max(elapsed, 1e-9):.0f}",
                                dev=f"{state.best_dev:.1f}")
                budget_spent = cfg.max_minutes is not None and state.seconds + elapsed > 60 * cfg.max_minutes
                if rank == 0 and (state.step % cfg.eval_every == 0 or state.step == cfg.max_steps or budget_spent):
                    p1 = dev_p_at_1(model, dev_src, dev_tgt, device)
                    record = {"step": state.step, "loss": round(total, 4), "dev_p@1": round(p1, 2), "lr": lr,
                              "seconds": round(state.seconds + time.time() - started, 1),
                              "pairs_per_second": round(pairs_seen / max(time.time() - started, 1e-9), 1)}
                    state.history.append(record)
                    _append_log(out_dir, record)
                    log.info("step %d  loss %.4f  dev P@1 %.2f", state.step, total, p1)
                    if p1 > state.best_dev:
                        state.best_dev, state.bad_evals = p1, 0
                        ckpt.write_model(out_dir, {**config_record, "step": state.step, "dev_p@1": p1},
                                         model.module, model.tokenizer_file)
                    else:
                        state.bad_evals += 1
                    if state.bad_evals >= cfg.patience:
                        stop_reason = "early_stopping"
                if rank == 0 and (state.step % cfg.save_every == 0 or interrupted["flag"]
                                  or stop_reason != "max_steps" or budget_spent or state.step == cfg.max_steps):
                    now = time.time()
                    state.seconds += now - started
                    started = now
                    pairs_seen = 0
                    _save_state(out_dir, model, optimizer, state, cfg)
                if agree(interrupted["flag"]):
                    raise KeyboardInterrupt
                if agree(stop_reason != "max_steps"):
                    break
                if agree(budget_spent):
                    stop_reason = "time_budget"
                    break
    finally:
        signal.signal(signal.SIGINT, previous_handler)
    if not (out_dir / ckpt.CONFIG).exists():  # never evaluated: keep the last weights
        ckpt.write_model(out_dir, {**config_record, "step": state.step, "dev_p@1": None}, model.module,
                         model.tokenizer_file)
    return {"steps": state.step, "best_dev_p@1": state.best_dev, "stopped": stop_reason,
            "seconds": round(state.seconds, 1), "history": state.history}


def _batch_loss(model, rows, src_ids, tgt_ids, src_keys, tgt_keys, negatives, teacher_vectors, ranking, distill,
                cfg, device):
    from bitextmine.train.distributed import gather, gather_with_grad

    src = model.embed([src_ids[i] for i in rows], device)
    tgt = model.embed([tgt_ids[i] for i in rows], device)
    loss = torch.zeros((), device=device)
    if cfg.translation_loss:
        hard = None
        if negatives is not None:
            neg_rows = negatives[rows].reshape(-1).tolist()
            hard = gather_with_grad(model.embed([tgt_ids[i] for i in neg_rows], device))
        # negatives from every device's batch (LaBSE's cross-accelerator negatives)
        loss = loss + ranking.compute_loss_from_embeddings(gather_with_grad(src).float(),
                                                           gather_with_grad(tgt).float(),
                                                           None if hard is None else hard.float(),
                                                           gather(src_keys[rows].to(device)),
                                                           gather(tgt_keys[rows].to(device)))
    if teacher_vectors is not None:
        teacher_src = teacher_vectors[rows].to(device)
        loss = loss + cfg.distill_weight * distill.compute_loss_from_embeddings(src.float(), tgt.float(), teacher_src)
    return loss


def _nli_loss(model, rows, anchor_ids, positive_ids, negative_ids, cfg, device):
    from bitextmine.train.distributed import gather_with_grad

    embed = lambda ids: gather_with_grad(model.embed([ids[i] for i in rows], device)).float()  # noqa: E731
    return ContrastiveNLILoss(cfg.scale).compute_loss_from_embeddings(embed(anchor_ids), embed(positive_ids),
                                                                      embed(negative_ids))


def text_keys(texts: list[str]) -> torch.Tensor:
    """One integer per distinct text (the index of its first occurrence), for each text."""
    first: dict[str, int] = {}
    return torch.tensor([first.setdefault(t, i) for i, t in enumerate(texts)], dtype=torch.long)


def mine_hard_negatives(data: ParallelData, k: int, encoder_name: str, device: str,
                        src_keys: torch.Tensor | None = None, tgt_keys: torch.Tensor | None = None) -> torch.Tensor:
    """For each pair, the k targets nearest to its source that are not translations of it.

    Excluded: the pair's own target, and any pair sharing its source or target text (in
    parallel data one sentence often has several translations, and the nearest "negative"
    would be one of them). Slots left without a clean candidate take random pairs.
    """
    from bitextmine.encoders import load_encoder
    from bitextmine.mine.knn import exact_knn_both_ways

    encoder = load_encoder(encoder_name, device=device)
    log.info("mining %d hard negatives per pair with %s", k, encoder_name)
    x = encoder.encode(data.src).astype(np.float16)
    y = encoder.encode(data.tgt).astype(np.float16)
    src_keys = text_keys(data.src) if src_keys is None else src_keys
    tgt_keys = text_keys(data.tgt) if tgt_keys is None else tgt_keys
    # room for the duplicates to be dropped: a few per row is typical
    fwd, _ = exact_knn_both_ways(x, y, min(len(y), 2 * k + 8), device=device)
    ids = fwd.ids
    rows = np.arange(len(ids))[:, None]
    sk, tk = src_keys.numpy(), tgt_keys.numpy()

    def translation_of(candidates, pairs):  # the same pair, or one sharing its source or target text
        return (candidates == pairs) | (sk[candidates] == sk[pairs]) | (tk[candidates] == tk[pairs])

    translation = translation_of(ids, rows)
    # stable sort puts the clean candidates first, in rank order
    order = np.argsort(translation, axis=1, kind="stable")[:, :k]
    chosen = np.take_along_axis(ids, order, 1)
    short = np.take_along_axis(translation, order, 1)  # slots with no clean candidate left
    # such slots (a sentence with many translations: all its neighbours are) take random
    # pairs, drawn again while they are translations too
    rng = np.random.default_rng(0)
    for _ in range(100):
        if not short.any():
            break
        rows_short = np.nonzero(short)[0]
        draw = rng.integers(0, len(ids), len(rows_short))
        chosen[short] = draw
        short[short] = translation_of(draw, rows_short)
    if short.any():
        raise BitextmineError("too few distinct pairs for --hard-negatives: no negative that is not a translation")
    return torch.from_numpy(chosen)


__all__ = ["PieceTokenizer", "TrainConfig", "get_lr", "mine_hard_negatives", "text_keys", "train"]
