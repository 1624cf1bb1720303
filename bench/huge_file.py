"""Time and peak memory of `sparkpar lint` on one very large file, next to LibCST's own parse.

    python bench/huge_file.py [--lines 50000] [--sparkpar PATH-TO-sparkpar]

Target (issue #18): at most 2x LibCST's parse time and memory. Each figure comes from a fresh
process (wall time; peak RSS from wait4, which covers the lint's worker process too)."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

TEMPLATE = """
def job_{i}(spark):
    df = spark.read.parquet("in_{i}")
    df = df.withColumn("a", F.col("x") + {i}).filter(F.col("a") > 0)
    out = df.{order}groupBy("k").agg(F.{agg}("v").alias("m"))
    return out
"""


def write_job(path: str, lines: int) -> int:
    parts = ["from pyspark.sql import functions as F\n"]
    count, i = 1, 0
    while count < lines:
        bad = i % 50 == 0  # a finding now and then, so positions are resolved as in real use
        parts.append(TEMPLATE.format(i=i, order='orderBy("ts").' if bad else "", agg="first" if bad else "max"))
        count += TEMPLATE.count("\n")
        i += 1
    with open(path, "w") as handle:
        handle.write("".join(parts))
    return count


def measure(command: list[str]) -> tuple[float, float, float, int]:
    """Wall seconds, CPU seconds (user + system, the lint's worker included: steadier than wall
    time on a shared machine), peak RSS in MB, exit status."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    return elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, process.returncode


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=50_000)
    parser.add_argument("--sparkpar", default=shutil.which("sparkpar") or "sparkpar")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "huge_job.py")
        lines = write_job(path, args.lines)
        parse = [sys.executable, "-c", f"import libcst; libcst.parse_module(open({path!r}).read())"]
        parse_wall, parse_cpu, parse_mb, _ = measure(parse)
        lint_wall, lint_cpu, lint_mb, status = measure(
            [args.sparkpar, "lint", "--no-cache", "--format", "concise", "--file-timeout", "0", path]
        )
    print(f"file: {lines:,} lines; load average {os.getloadavg()[0]:.1f}")
    print(f"libcst parse alone : {parse_wall:7.2f} s wall {parse_cpu:7.2f} s CPU {parse_mb:7.0f} MB peak")
    print(f"sparkpar lint      : {lint_wall:7.2f} s wall {lint_cpu:7.2f} s CPU {lint_mb:7.0f} MB peak (exit {status})")
    print(f"ratio              : {lint_cpu / parse_cpu:7.2f}x CPU time {lint_mb / parse_mb:7.2f}x memory")


if __name__ == "__main__":
    main()
