"""How fast is `sparkpar lint` next to parsing alone?

    python bench/lint_speed.py [--corpus DIR] [--jobs N]

Prints, from one run: files and lines, LibCST parse-only time, cold lint time (fresh empty cache),
warm lint time (everything cached), and the ratios cold / parse-only (target <= 1.5) and
warm / cold (target <= 0.1). Parse-only goes through the runner's own `map_in_workers` with the
same worker count and chunking as the lint run, so both sides pay the same process start-up and
transfer costs. Each figure is wall time and CPU time (this process and its workers, user +
system): on a shared machine the wall-time ratio swings with the load, the CPU-time one far less.
Figures only: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import libcst

from sparkpar_lint import runner
from sparkpar_lint.config import Config
from sparkpar_lint.decoding import decode
from sparkpar_lint.discovery import discover
from sparkpar_lint.rules import all_rules


def default_corpus() -> Path:
    import importlib.util

    return Path(importlib.util.find_spec("pyspark").origin).parent


def parse_only(path: str) -> int:
    with open(path, "rb") as handle:
        data = handle.read()
    if not runner._MENTIONS_SPARK.search(data):
        return 0  # the linter skips these too, so parse-only must as well
    libcst.parse_module(decode(data))
    return 1


def parse_only_collector_paused(path: str) -> int:
    """As parse_only, with the garbage collector paused as sparkpar's own parse does: the fair
    baseline for what the analysis itself adds."""
    gc.disable()
    try:
        return parse_only(path)
    finally:
        gc.enable()


def cpu_seconds() -> float:
    """CPU used so far by this process and its finished children (worker processes)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=None, help="default: installed pyspark")
    parser.add_argument("--jobs", type=int, default=os.cpu_count(), help="worker processes")
    args = parser.parse_args()
    corpus = args.corpus or default_corpus()
    files = discover([str(corpus)], root=corpus).files
    lines = sum(Path(f).read_bytes().count(b"\n") for f in files)
    rule_ids = {rule.id for rule in all_rules()}
    config = Config(root=corpus)
    print(f"corpus: {corpus}")
    print(f"files: {len(files)}  lines: {lines}  workers: {args.jobs}  cores: {os.cpu_count()}")

    start, start_cpu = time.perf_counter(), cpu_seconds()
    parsed = sum(runner.map_in_workers(parse_only, files, args.jobs))
    parse_time, parse_cpu = time.perf_counter() - start, cpu_seconds() - start_cpu
    start, start_cpu = time.perf_counter(), cpu_seconds()
    sum(runner.map_in_workers(parse_only_collector_paused, files, args.jobs))
    paused_time, paused_cpu = time.perf_counter() - start, cpu_seconds() - start_cpu
    with tempfile.TemporaryDirectory() as cache_dir:
        start, start_cpu = time.perf_counter(), cpu_seconds()
        cold = runner.run([str(corpus)], config, rule_ids, cache_dir=Path(cache_dir), jobs=args.jobs)
        cold_time, cold_cpu = time.perf_counter() - start, cpu_seconds() - start_cpu
        start, start_cpu = time.perf_counter(), cpu_seconds()
        warm = runner.run([str(corpus)], config, rule_ids, cache_dir=Path(cache_dir), jobs=args.jobs)
        warm_time, warm_cpu = time.perf_counter() - start, cpu_seconds() - start_cpu

    print(f"load average: {os.getloadavg()[0]:.1f}")
    print(f"parse-only:  {parse_time:7.2f} s wall {parse_cpu:7.2f} s CPU  ({parsed} files parsed)")
    print(f"parse-only, collector paused: {paused_time:7.2f} s wall {paused_cpu:7.2f} s CPU")
    print(
        f"lint cold:   {cold_time:7.2f} s wall {cold_cpu:7.2f} s CPU  ({len(cold.findings)} findings, "
        f"{len(cold.all_errors)} errors)"
    )
    print(f"lint warm:   {warm_time:7.2f} s wall {warm_cpu:7.2f} s CPU  ({warm.cache_hits} cache hits)")
    print(f"cold / parse-only: {cold_time / parse_time:.2f} wall {cold_cpu / parse_cpu:.2f} CPU  (target <= 1.5)")
    print(
        f"cold / parse-only with the collector paused: {cold_time / paused_time:.2f} wall "
        f"{cold_cpu / paused_cpu:.2f} CPU"
    )
    print(f"warm / cold:       {warm_time / cold_time:.3f} wall {warm_cpu / cold_cpu:.3f} CPU (target <= 0.1)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
