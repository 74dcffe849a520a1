"""Filter pairs and write the kept ones, the rejects and the report (atomically)."""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

from bitextmine.filter.config import FilterConfig, FilterReport
from bitextmine.filter.rules import PairFilter
from bitextmine.io.atomic import atomic_text_writer, refuse_overwriting_inputs, sidecar_path, write_json
from bitextmine.io.lock import output_locks
from bitextmine.io.pairs import Pair, read_pairs

log = logging.getLogger(__name__)


def report_document(cfg: FilterConfig, report: FilterReport) -> dict:
    """The filter's settings and counts, as the JSON report holds them."""
    return {"config": cfg.to_dict(), **report.to_dict()}


def filter_file(input: str, cfg: FilterConfig, output: str, json_out: str | None = None,
                rejects: str | None = None) -> FilterReport:
    """``bitextmine filter``: the pairs of ``input`` filtered into ``output``, the report to
    ``json_out`` (default: OUTPUT.filter.json beside a regular output). Outputs that would
    replace the input are refused before any work; all are locked while they are written."""

    json_path = json_out if json_out is not None else sidecar_path(output, ".filter.json")
    outputs = [output, json_path, rejects]
    refuse_overwriting_inputs(outputs, [input])
    with output_locks(outputs):
        return filter_pairs_to_files(read_pairs(input), cfg, output, json_path, rejects)


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
