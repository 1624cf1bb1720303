"""Seconds of `sparkpar lint` on one method chain of N calls, with a finding at its end.

    python bench/long_chain.py [--calls 300,1000,3000,10000] [--sparkpar PATH-TO-sparkpar]

Target (issue #18): time linear in the chain's length. LibCST's own parse of one chain grows
faster than quadratically (0.4 s at 300 calls, minutes at 3,000); sparkpar parses long chains a
segment at a time (`sparkpar_lint/long_chains.py`). Each figure comes from a fresh process: CPU
seconds (user + system, the lint's worker included; steadier than wall time on a shared
machine). The finding's line is checked, so a figure is never that of a failed run."""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import tempfile
import time

HEADER = 'from pyspark.sql import SparkSession, functions as F\nspark = SparkSession.builder.getOrCreate()\ndf = spark.read.parquet("x")\n'


def write_chain(path: str, calls: int) -> int:
    """The chain, ending in an order-dependent aggregate; returns the line it is on."""
    links = "".join(f"    .withColumn('c{i}', F.lit({i}))\n" for i in range(calls))
    with open(path, "w") as handle:
        handle.write(HEADER + "out = (df\n" + links + "    .groupBy('k').agg(F.first('v'))\n)\n")
    return calls + 5


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", default="300,1000,3000,10000")
    parser.add_argument("--sparkpar", default=shutil.which("sparkpar") or "sparkpar")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} at the start")
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "chain.py")
        for calls in map(int, args.calls.split(",")):
            line = write_chain(path, calls)
            command = [args.sparkpar, "lint", "--no-cache", "--format", "concise", "--file-timeout", "0", path]
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            result = subprocess.run(command, capture_output=True, text=True, check=False)
            wall = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            found = f"chain.py:{line}:23: SPX101" in result.stdout
            outcome = "found" if found else "MISSING: " + (result.stderr or result.stdout)[:200]
            print(
                f"{calls:6,} calls: {cpu:7.2f} s CPU ({1e3 * cpu / calls:5.2f} ms/call), "
                f"{wall:7.2f} s wall; the finding at the end: {outcome}"
            )
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
