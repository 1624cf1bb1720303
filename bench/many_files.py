"""Wall time, CPU and memory of `sparkpar lint` on a tree of many small job files.

    python bench/many_files.py [--sizes 1000,10000] [--huge] [--jobs N] [--sparkpar PATH]
    python bench/many_files.py --write DIR --sizes 30000   # only write the tree, for a profiler

Writes N small PySpark job files into a temporary directory (a project with a pyproject.toml):
packages of 100 files, each with a helper module the jobs import (half from their own package,
a tenth from the neighbouring one); one job in four aggregates a sorted frame (a finding), the
rest are clean, and one file in ten names no Spark API at all. Each size is linted twice by the
real CLI, `sparkpar lint DIR --format json`: first with an empty cache directory (cold), then
again with the cache it wrote (warm). Prints, per size and run, wall seconds, CPU seconds (user +
system, workers included), milliseconds of wall and CPU per file, the peak RSS of the largest
process, and the ratio of CPU per file to the previous size's (1.0 = linear). `--huge` adds
100,000 files. Figures only: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

PACKAGE_SIZE = 100

HELPER = """\
from pyspark.sql import functions as F


def latest(df):
    return df.orderBy("ts").groupBy("k").agg(F.first("v").alias("v"))


def totals(df):
    return df.groupBy("k").agg(F.sum("v").alias("total"))
"""

# {imports} {read} {body}: a job of ten-odd lines.
JOB = """\
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
{imports}

spark = SparkSession.builder.appName("job_{n}").getOrCreate()
events = spark.read.parquet("s3://bucket/events/{n}")
{body}
result.write.mode("overwrite").parquet("s3://bucket/out/{n}")
"""

FINDING = 'result = events.orderBy("ts").groupBy("k").agg(F.first("v").alias("v"))'
CLEAN = 'result = events.groupBy("k").agg(F.sum("v").alias("total"))'
PLAIN = "def add(a, b):\n    return a + b\n"


def job(package: int, n: int, packages: int) -> str:
    if n % 10 == 9:
        return PLAIN  # a utility module: no Spark at all
    if n % 10 == 3 and packages > 1:
        imports, body = f"from pkg{(package + 1) % packages}.helpers import totals", "result = totals(events)"
    elif n % 2 == 0:
        imports, body = f"from pkg{package}.helpers import latest", "result = latest(events)"
    else:
        imports, body = "", FINDING if n % 4 == 1 else CLEAN
    return JOB.format(imports=imports, body=body, n=n)


def write_tree(directory: str, files: int) -> None:
    """`files` Python files (helpers and `__init__.py` included) under `directory`."""
    with open(os.path.join(directory, "pyproject.toml"), "w") as handle:
        handle.write('[project]\nname = "many-jobs"\nversion = "0"\n')
    packages = max(1, -(-files // PACKAGE_SIZE))
    written = 0
    for package in range(packages):
        folder = os.path.join(directory, f"pkg{package}")
        os.mkdir(folder)
        for name, text in (("__init__.py", ""), ("helpers.py", HELPER)):
            with open(os.path.join(folder, name), "w") as handle:
                handle.write(text)
        written += 2
        for n in range(min(PACKAGE_SIZE - 2, files - written)):
            with open(os.path.join(folder, f"job_{n}.py"), "w") as handle:
                handle.write(job(package, n, packages))
        written += PACKAGE_SIZE - 2


def measure(command: list[str], cwd: str) -> tuple[float, float, float, int]:
    """Wall seconds, CPU seconds (user + system, reaped workers included), peak RSS in MB of the
    largest process, exit status."""
    start = time.monotonic()
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.monotonic() - start
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--huge", action="store_true", help="also 100,000 files")
    parser.add_argument("--jobs", type=int, help="--jobs for sparkpar (default: its own)")
    parser.add_argument("--sparkpar", default=shutil.which("sparkpar") or "sparkpar")
    parser.add_argument("--write", metavar="DIR", help="only write the tree of the first size into DIR")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")] + ([100_000] if args.huge else [])
    if args.write:
        os.makedirs(args.write, exist_ok=True)
        write_tree(args.write, sizes[0])
        return
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}  cores: {os.cpu_count()}")
    print(
        f"{'files':>7} {'cache':<5} {'wall s':>8} {'CPU s':>8} {'wall ms/f':>9} {'CPU ms/f':>9}"
        f" {'peak MB':>8} {'CPU/f ratio':>11}  exit"
    )
    previous: dict[str, float] = {}
    for size in sizes:
        with tempfile.TemporaryDirectory() as directory:
            tree = os.path.join(directory, "tree")
            os.mkdir(tree)
            write_tree(tree, size)
            command = [args.sparkpar, "lint", "tree", "--format", "json", "--cache-dir", "cache"]
            command += ["--jobs", str(args.jobs)] if args.jobs else []
            for run in ("cold", "warm"):
                wall, cpu, peak, status = measure(command, directory)
                per_file = cpu / size
                ratio = f"{per_file / previous[run]:.2f}" if run in previous else "-"
                previous[run] = per_file
                print(
                    f"{size:>7} {run:<5} {wall:>8.1f} {cpu:>8.1f} {1000 * wall / size:>9.2f}"
                    f" {1000 * per_file:>9.2f} {peak:>8.0f} {ratio:>11}  {status}",
                    flush=True,
                )


if __name__ == "__main__":
    sys.exit(main())
