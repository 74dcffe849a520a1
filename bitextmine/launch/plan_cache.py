"""``plan``'s calibration, kept per machine and version so that it runs once, not on every call.

The calibration (``probes.measure``) takes a minute or more on two cores, longer than many of
the runs it plans. Its rates depend on the machine (CPU, cores, memory, GPU), the bitextmine
version and the settings it measures (device, encoder, embedding, index and filter settings,
the languages of the pairs), so those make the key; the rates are kept under the user's
cache directory (``$XDG_CACHE_HOME/bitextmine/plan``, ``~/.cache`` when unset). What depends
on the corpus itself (line counts, the share of rows mined, re-ranking on an embedded side)
is measured on every call. ``plan --remeasure`` ignores a kept calibration and replaces it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path

from bitextmine import __version__
from bitextmine.errors import BitextmineError
from bitextmine.io.atomic import atomic_path
from bitextmine.launch.config import PipelineConfig
from bitextmine.launch.costs import Rates

log = logging.getLogger(__name__)


def cache_dir() -> Path:
    """Where kept calibrations live: ``$XDG_CACHE_HOME/bitextmine/plan``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "bitextmine" / "plan"


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def machine() -> dict:
    """What the rates depend on, of this machine (GPUs as torch sees them, when a GPU is used)."""
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") if hasattr(os, "sysconf") else 0
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return {"host": platform.node(), "cpu": _cpu_model(), "cores": cores, "memory_bytes": memory,
            "python": platform.python_version()}


def calibration_key(cfg: PipelineConfig, device: str) -> dict:
    """The settings a calibration measured, with the machine and the version."""
    gpus = []
    if device.startswith("cuda"):
        import torch  # torch: 2.5 s, only to name the GPUs (ARCHITECTURE.md, start-up)

        gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return {"bitextmine": __version__, "machine": {**machine(), "gpus": gpus}, "device": device,
            "encoder": cfg.encoder, "embed": cfg.embed.model_dump(), "index": cfg.index.model_dump(),
            "filter": cfg.filter.model_dump(), "pairs": sorted({*map(tuple, cfg.pairs)}),
            "workers": cfg.launcher.workers}


def _path(key: dict) -> Path:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:24]
    return cache_dir() / f"{digest}.json"


def cached_measure(cfg: PipelineConfig, device: str, measure: Callable[[], Rates], remeasure: bool = False) -> Rates:
    """``measure()``, or the rates it gave before for the same key; ``remeasure`` measures again.

    The returned rates carry ``calibration``: when they were measured, and whether they
    were kept from then (``cached``). A kept file that cannot be read is measured again.
    """

    key = json.loads(json.dumps(calibration_key(cfg, device), default=str))  # as it reads back
    path = _path(key)
    if not remeasure:
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            kept = json.loads(path.read_text(encoding="utf-8"))
            if kept["key"] == key:
                return Rates.from_dict({**kept["rates"], "calibration": {**kept["calibration"], "cached": True,
                                                                         "file": str(path)}})
    rates = measure()
    measured = {"measured_at": time.strftime("%Y-%m-%d %H:%M:%S"), "cached": False, "file": str(path)}
    # Infinity stays Infinity (some rates are: an exact index has no codes to scan); only this reads it
    text = json.dumps({"key": key, "calibration": {"measured_at": measured["measured_at"]},
                       "rates": {k: v for k, v in rates.to_dict().items() if k != "calibration"}},
                      indent=1, default=float)
    try:  # a calibration that cannot be kept costs the next call its time, nothing more
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:
            tmp.write_text(text, encoding="utf-8")
    except (OSError, BitextmineError) as e:
        log.warning("cannot keep the calibration in %s (%s); the next plan measures again", path, e)
    return dataclasses.replace(rates, calibration=measured)
