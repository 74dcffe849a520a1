"""``bitextmine plan``: what a pipeline will cost, before it runs.

The machine is calibrated once per machine, version and settings (``probes``, kept by
``plan_cache``); what depends on the corpus (line counts, the share of rows mined and
re-ranking on an embedded side, ``corpus_probes``) is measured on every call; the cost
model (``costs``) turns both into an estimate per stage, and on Slurm into job arrays and
wall time (``slurm.slurm_estimates``).
"""

from __future__ import annotations

import dataclasses
import logging
import os

import numpy as np

from bitextmine.devices import resolve_device
from bitextmine.io.text import count_lines
from bitextmine.launch.config import PipelineConfig
from bitextmine.launch.corpus_probes import embedded_sides, mined_shares, rates_on_embedded_sets
from bitextmine.launch.costs import StageEstimate, estimate_from
from bitextmine.launch.plan_cache import cached_measure
from bitextmine.launch.probes import measure

log = logging.getLogger(__name__)


def estimate(cfg: PipelineConfig, device: str = "auto", progress: bool = False, launcher: str = "local",
             mined_share: float | None = None, remeasure: bool = False) -> tuple[list[StageEstimate], dict]:
    """Calibrate (or take this machine's kept calibration, unless ``remeasure``), count the
    lines, and estimate every stage. ``mined_share``: given for every pair; None: sampled
    where the embedding sets exist, else ``defaults.PLAN_MINED_SHARE``. Returns the stages and
    what was measured, as ``plan --json`` reports it (the rates, the shares, the line counts)."""
    device = resolve_device(device)
    if cfg.adapt.enabled:
        log.warning("plan does not estimate the adapt stage (training rounds, embedding and mining each pair "
                    "again): its time and memory are not in the table")
    rates = cached_measure(cfg, device, lambda: measure(cfg, device, progress=progress), remeasure)
    sides = embedded_sides(cfg)
    rates = dataclasses.replace(rates, **rates_on_embedded_sets(cfg, sides))
    shares = mined_shares(cfg, rates.device, mined_share, sides)
    lines = {lang: [count_lines(s) for s in shards] for lang, shards in cfg.languages.items()}
    text_bytes = {lang: sum(os.path.getsize(s) for s in shards) for lang, shards in cfg.languages.items()}
    measured = {**rates.to_dict(),
                "mined_share": {f"{s}-{t}": {"share": v.share, "how": v.how} for (s, t), v in shares.items()},
                "lines": {lang: int(np.sum(v)) for lang, v in lines.items()}}
    return estimate_from(cfg, rates, lines, text_bytes, launcher, shares), measured
