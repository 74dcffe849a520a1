"""`bitextmine prepare` end to end on plain text: sentences per second, language ID included.

    python -m benchmarks.prepare_speed [--sentences 300000] [--langs ces deu zho] [--workers N] [--repeats 3]

The input is one document a line (2-10 sentences each), written from the language's
reference lines (tests/support/prepare_sets.py; Czech news counted four times over its
Tatoeba lines, so that the text is mostly news-length), each sentence given a distinct
number before its final punctuation so that nothing repeats; documents are cycled
through reshuffles of the lines until ``--sentences`` is reached. The command runs in a
fresh process (its start, the language model's loading and the workers' start included)
with default settings; the rate is segmented sentences per wall-clock second, and per
second of CPU time of the command and its workers (the steadier figure on a shared
machine). The load average before each run is printed: other work on the machine slows
the wall-clock rate. Peak RSS is the largest resident size any of the command's processes
reached so far in this benchmark's process (run the sizes in increasing order to see whether
it grows with the input).
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.support.prepare_sets import DEFAULT_DATA, documents, sources

WEIGHTS = {"news": 4}  # news lines counted this many times over the other sources'


def make_input(lang: str, sentences: int, path: Path, data: Path) -> int:
    """Write the documents; the characters per sentence."""
    pool = [line for source, lines in sources(lang, data).items() for line in lines * WEIGHTS.get(source, 1)]
    rng = random.Random(0)
    separator = "" if lang == "zho" else " "
    written, chars, round_ = 0, 0, 0
    with path.open("w", encoding="utf-8") as out:
        while written < sentences:
            rng.shuffle(pool)
            for doc in documents(pool, seed=round_):
                numbered = [f"{s[:-1]} {written + i}{s[-1]}" if s[-1] in ".?!。？！।" else f"{s} {written + i}"
                            for i, s in enumerate(doc)]
                text = separator.join(numbered)
                out.write(text + "\n")
                written += len(doc)
                chars += len(text)
                if written >= sentences:
                    break
            round_ += 1
    return chars // written


def run_once(path: Path, lang: str, workers: int | None) -> dict:
    output = Path(tempfile.mkdtemp(prefix="prepare-speed-"))
    command = [sys.executable, "-m", "bitextmine", "prepare", str(path), "-o", str(output / "out"), "--lang", lang,
               "-q", "--json", str(output / "report.json")]
    if workers:
        command += ["--workers", str(workers)]
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    import json

    report = json.loads((output / "report.json").read_text())
    shutil.rmtree(output)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "load": load, "sentences": report["sentences"], "kept": report["kept"],
            "rss_mb": after.ru_maxrss / 1024}  # the largest of the command's processes so far (kB on Linux)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sentences", type=int, default=300_000)
    parser.add_argument("--langs", nargs="*", default=["ces", "deu", "zho"])
    parser.add_argument("--workers", type=int, default=None, help="default: the command's own (one per CPU)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs, {len(os.sched_getaffinity(0))} usable")
    print("| language | chars/sentence | sentences | kept | load before | wall s | sentences/s | CPU s | "
          "sentences per CPU-s | peak RSS MB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for lang in args.langs:
            path = Path(tmp) / f"{lang}.txt"
            width = make_input(lang, args.sentences, path, args.data)
            for _ in range(args.repeats):
                r = run_once(path, lang, args.workers)
                print(f"| {lang} | {width} | {r['sentences']:,} | {r['kept']:,} | {r['load']:.1f} | {r['wall']:.1f} | "
                      f"{r['sentences'] / r['wall']:,.0f} | {r['cpu']:.1f} | {r['sentences'] / r['cpu']:,.0f} | "
                      f"{r['rss_mb']:.0f} |",
                      flush=True)


if __name__ == "__main__":
    main()
