"""Reading text shards and writing artifacts safely."""
