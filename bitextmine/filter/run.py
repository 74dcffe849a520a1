"""Filter pairs and write the kept ones, the rejects and the report (atomically)."""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

from bitextmine.filter import FilterConfig, FilterReport, Pair, PairFilter
from bitextmine.io.atomic import atomic_text_writer, write_json

log = logging.getLogger(__name__)


def report_document(cfg: FilterConfig, report: FilterReport) -> dict:
    """The filter's settings and counts, as the JSON report holds them."""
    return {"config": cfg.to_dict(), **report.to_dict()}


def filter_pairs_to_files(pairs: list[Pair], cfg: FilterConfig, output: str, report_path: Path | None,
                          rejects: str | None) -> FilterReport:
    pair_filter = PairFilter(cfg)
    with contextlib.ExitStack() as stack:
        kept = stack.enter_context(atomic_text_writer(output))
        rejected = stack.enter_context(atomic_text_writer(rejects)) if rejects else None
        for pair, reason in pair_filter.run(pairs):
            if reason is None:
                kept.write("\t".join(pair.fields()) + "\n")
            elif rejected is not None:
                rejected.write("\t".join([reason, *pair.fields()]) + "\n")
    report = pair_filter.report
    if report_path is not None:
        write_json(report_path, report_document(cfg, report))
    dropped = {k: v for k, v in report.rejected.items() if v}
    log.info("kept %d of %d pairs; rejected: %s", report.kept, report.total,
             ", ".join(f"{k} {v}" for k, v in dropped.items()) or "none")
    return report
