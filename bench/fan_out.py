"""CPU of `sparkpar lint` on files whose findings grow with their length, next to LibCST's parse.

    python bench/fan_out.py [--sizes 250,1000,4000] [--sparkpar PATH-TO-sparkpar]

Three shapes, each at every size N (written into a temporary directory):
- fan-out: N lines `oN = df.orderBy('ts').groupBy('k').agg(F.first('v'))`, every aggregate on
  one shared DataFrame, two findings a line;
- union: one `spark.sql` of N `SELECT ... first(v) ... GROUP BY` joined by UNION ALL;
- statements: a `.sql` file of N views, each with a `first` over a sorted subquery.
Prints, per shape and size, the lint's CPU (user + system, its worker included; a fresh process,
as a user runs it), CPU per line (per SELECT, per statement), and the ratio to LibCST's parse CPU
of the same file (for the `.sql` file: of its text as one `spark.sql` string). Target (issue #29):
CPU per line about flat as N grows, and the 4,000-line fan-out file within 3x the parse. Figures
only: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile


def fan_out(lines: int) -> str:
    head = "from pyspark.sql import functions as F\ndf = spark.read.parquet('x')\n"
    return head + "".join(f"o{i} = df.orderBy('ts').groupBy('k').agg(F.first('v'))\n" for i in range(lines - 2))


def union(selects: int) -> str:
    query = " UNION ALL ".join(f"SELECT k, first(v) AS v{i} FROM t{i} GROUP BY k" for i in range(selects))
    return f'from pyspark.sql import SparkSession\nspark = SparkSession.builder.getOrCreate()\ndf = spark.sql("""{query}""")\n'


def statements(count: int) -> str:
    view = (
        "CREATE OR REPLACE TEMP VIEW v{i} AS SELECT k, first(v) AS f FROM (SELECT * FROM t ORDER BY ts) GROUP BY k;\n"
    )
    return "".join(view.format(i=i) for i in range(count))


SHAPES = {"fan-out": (fan_out, "py"), "union": (union, "py"), "statements": (statements, "sql")}


def cpu_of(command: list[str]) -> tuple[float, int]:
    """CPU seconds (user + system, children included) and exit status of a fresh process."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    return usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status)


def parse_command(path: str) -> list[str]:
    """LibCST's parse of the file (a `.sql` file: of its text as one `spark.sql` string, the
    nearest Python module)."""
    if path.endswith(".sql"):
        with open(path) as handle:
            text = handle.read()
        path = path[: -len(".sql")] + "_as_python.py"
        with open(path, "w") as handle:
            handle.write(f'spark.sql("""{text}""")\n')
    return [sys.executable, "-c", f"import libcst; libcst.parse_module(open({path!r}).read())"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="250,1000,4000")
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--sparkpar", default=shutil.which("sparkpar") or "sparkpar")
    args = parser.parse_args()
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}  cores: {os.cpu_count()}")
    print(f"{'shape':<11} {'N':>6} {'lint CPU s':>10} {'ms per N':>9} {'parse CPU s':>11} {'lint/parse':>10}  exit")
    with tempfile.TemporaryDirectory() as directory:
        for shape in args.shapes.split(","):
            make, suffix = SHAPES[shape]
            for size in (int(s) for s in args.sizes.split(",")):
                path = os.path.join(directory, f"{shape}_{size}.{suffix}")
                with open(path, "w") as handle:
                    handle.write(make(size))
                lint, status = cpu_of([args.sparkpar, "lint", "--no-cache", "--format", "json", path])
                parse, _ = cpu_of(parse_command(path))
                print(
                    f"{shape:<11} {size:>6} {lint:>10.2f} {1000 * lint / size:>9.2f} {parse:>11.2f}"
                    f" {lint / parse:>10.2f}  {status}"
                )


if __name__ == "__main__":
    main()
