"""Text shards -> an embedding set (fp16 ``.npy`` shards + ``manifest.json``).

The unit of work and of resumption is the shard: a shard is done once its entry is in
the manifest, and a re-run skips done shards whose source is unchanged. Each ``.npy``
is written under a temporary name and renamed, and the manifest is rewritten
atomically after every shard, so a killed run leaves only finished shards behind.

The settings are ``config``; one shard is written by ``shard``, the set resumed and kept
by ``run`` (several devices by ``workers``), read by ``embedding_set`` and, as one side
of mining, by ``corpus``.
"""

from bitextmine.embed.config import EmbedConfig
from bitextmine.embed.run import ShardTask, embed_shards, plan_shards, shard_file_name
from bitextmine.embed.shard import embed_shard, embed_texts

__all__ = ["EmbedConfig", "ShardTask", "embed_shard", "embed_shards", "embed_texts", "plan_shards",
           "shard_file_name"]
