"""Documents -> sentence shards that `embed` reads, with where every sentence came from.

Readers per format (``readers``, ``parquet``, ``warc``), normalisation and the rules
(``rules``), segmentation (``segment``), the work of the workers (``judge``),
deduplication over a run (``dedup``), the prepared directory (``shards``) and the run
itself (``run``).
"""

from bitextmine.prepare.config import PrepareConfig
from bitextmine.prepare.run import prepare_inputs
from bitextmine.prepare.shards import MANIFEST_NAME, load_manifest, prepared_shards

__all__ = ["MANIFEST_NAME", "PrepareConfig", "load_manifest", "prepare_inputs", "prepared_shards"]
