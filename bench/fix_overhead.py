"""Throughput of a `sparkpar fix` output against a hand-written fix and the unsafe original.

The workload is shaped like the Yahoo streaming benchmark: ad events -> filter views -> join with
campaigns -> windowed count per campaign, plus an order-dependent stage (the last ad seen per
campaign window, after a sort the shuffle discards). The fixed job is produced by running
`sparkpar fix` on the original's source, then all three run in one Spark session on the same
cached input, in round robin. Prints rows/s per variant, the ratios and the machine's load
average; asserts nothing.

    python bench/fix_overhead.py [--rows 10000000] [--repeats 5] [--workload aggregate|dedup]

A run of 2,000,000 rows lasts about half a second per variant: two identical variants then
differed by 10-15% on an idle machine, so the default is 10,000,000 rows, median of 5.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ORIGINAL = """\
from pyspark.sql import functions as F


def pipeline(events, campaigns):
    views = events.filter(F.col("event_type") == "view").join(campaigns, "ad_id")
    ordered = views.orderBy("event_time")
    return ordered.groupBy("campaign_id", F.window("event_time", "10 seconds")).agg(
        F.count("*").alias("views"),
        F.last("ad_id").alias("last_ad"),
    )
"""

# What a person writes: max_by on the sort column. Ties on event_time stay arbitrary, which the
# sparkpar fix does not allow; HAND_WRITTEN_TIES breaks them the same way sparkpar does.
HAND_WRITTEN = """\
from pyspark.sql import functions as F


def pipeline(events, campaigns):
    views = events.filter(F.col("event_type") == "view").join(campaigns, "ad_id")
    return views.groupBy("campaign_id", F.window("event_time", "10 seconds")).agg(
        F.count("*").alias("views"),
        F.max_by("ad_id", "event_time").alias("last_ad"),
    )
"""


HAND_WRITTEN_TIES = HAND_WRITTEN.replace(
    'F.max_by("ad_id", "event_time")', 'F.max_by("ad_id", F.struct("event_time", "ad_id"))'
)


# The tie-breaker's cost: keep each user's newest event, read from Parquet. With the schema
# stated in the file, sparkpar breaks ties on event_time with a struct of the other columns;
# without it, with the whole row as JSON. Same data, same plan but for the tie-breaker.
DEDUP_TYPED = """\
from pyspark.sql import functions as F


def pipeline(spark, path):
    events = spark.read.schema("ad_id bigint, event_type string, event_time timestamp, user_id bigint").parquet(path)
    newest = events.orderBy(F.col("event_time").desc())
    return newest.dropDuplicates(["user_id"])
"""
DEDUP_UNTYPED = DEDUP_TYPED.replace(
    'spark.read.schema("ad_id bigint, event_type string, event_time timestamp, user_id bigint")', "spark.read"
)


def load(name: str, source: str, folder: Path):
    path = folder / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.pipeline


def _load() -> str:
    """The 1/5/15-minute load averages: figures taken on a busy machine are noise-bound."""
    try:
        return " ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "unknown"


def _throughput(variants: dict, inputs: tuple, rows: int, repeats: int) -> dict[str, float]:
    """Rows/s per variant (median of `repeats`), each run written to the noop sink after one
    warm-up; prints a line per variant."""
    for pipeline in variants.values():
        pipeline(*inputs).write.format("noop").mode("overwrite").save()  # warm-up
    # Round robin, not one variant after another: on a shared machine the load drifts, and a
    # drift must not land on one variant only.
    seconds: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(repeats):
        for name, pipeline in variants.items():
            start = time.perf_counter()
            pipeline(*inputs).write.format("noop").mode("overwrite").save()
            seconds[name].append(time.perf_counter() - start)
    throughput = {name: rows / statistics.median(taken) for name, taken in seconds.items()}
    for name, taken in seconds.items():
        print(f"{name:26s} median {statistics.median(taken):6.2f} s  {throughput[name]:12,.0f} rows/s")
    return throughput


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--workload",
        choices=("aggregate", "dedup"),
        default="aggregate",
        help="aggregate: SPX101's last-per-window fix (default); dedup: SPX102's tie-breakers",
    )
    args = parser.parse_args()
    if args.workload == "dedup":
        dedup(args)
        return

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from sparkpar_lint.fixes.engine import fix_source
    from sparkpar_lint.rules import all_rules

    fixed = fix_source("original.py", ORIGINAL, {r.id for r in all_rules()}, unsafe=True)
    if not fixed.changed:
        sys.exit("sparkpar fix changed nothing in the original pipeline")
    print("sparkpar fix applied:", "; ".join(f.fix.description for f in fixed.applied))

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("sparkpar-fix-overhead")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    print(f"load average at start: {_load()}")
    events = (
        spark.range(args.rows)
        .select(
            (F.col("id") % 1000).alias("ad_id"),
            F.when(F.col("id") % 3 == 0, "view").otherwise("click").alias("event_type"),
            (F.col("id") / 100).cast("timestamp").alias("event_time"),
            (F.col("id") % 7919).alias("user_id"),
        )
        .cache()
    )
    campaigns = spark.range(1000).select(F.col("id").alias("ad_id"), (F.col("id") % 100).alias("campaign_id")).cache()
    events.count(), campaigns.count()

    with tempfile.TemporaryDirectory() as folder:
        variants = {
            "original (unsafe)": load("original", ORIGINAL, Path(folder)),
            "sparkpar fix": load("fixed", fixed.fixed, Path(folder)),
            "hand-written fix": load("hand", HAND_WRITTEN, Path(folder)),
            "hand-written, ties broken": load("hand_ties", HAND_WRITTEN_TIES, Path(folder)),
        }
        throughput = _throughput(variants, (events, campaigns), args.rows, args.repeats)
    spark.stop()
    print(f"load average at end: {_load()}")
    print(
        f"sparkpar fix / hand-written fix throughput: {throughput['sparkpar fix'] / throughput['hand-written fix']:.3f}"
    )
    print(
        "sparkpar fix / hand-written fix with ties broken: "
        f"{throughput['sparkpar fix'] / throughput['hand-written, ties broken']:.3f}"
    )
    print(
        f"sparkpar fix / unsafe original throughput:  {throughput['sparkpar fix'] / throughput['original (unsafe)']:.3f}"
    )


def dedup(args) -> None:
    """SPX102's safe fix with the struct tie-breaker against the same fix with the JSON one, and
    against the unsafe original."""
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from sparkpar_lint.fixes.engine import fix_source

    typed = fix_source("typed.py", DEDUP_TYPED, {"SPX102"}).fixed
    untyped = fix_source("untyped.py", DEDUP_UNTYPED, {"SPX102"}).fixed
    if "F.struct(" not in typed or "to_json" not in untyped:
        sys.exit("sparkpar fix did not write the expected tie-breakers")
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("sparkpar-fix-overhead-dedup")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    print(f"load average at start: {_load()}")
    with tempfile.TemporaryDirectory() as folder:
        data = str(Path(folder) / "events.parquet")
        spark.range(args.rows).select(
            (F.col("id") % 1000).alias("ad_id"),
            F.when(F.col("id") % 3 == 0, "view").otherwise("click").alias("event_type"),
            (F.col("id") / 1000).cast("timestamp").alias("event_time"),  # 1000 events share a second
            (F.col("id") % 50_000).alias("user_id"),
        ).write.parquet(data)
        variants = {
            "original (unsafe)": load("original", DEDUP_TYPED, Path(folder)),
            "fix, struct tie-breaker": load("typed", typed, Path(folder)),
            "fix, JSON tie-breaker": load("untyped", untyped, Path(folder)),
        }
        throughput = _throughput(variants, (spark, data), args.rows, args.repeats)
    spark.stop()
    print(f"load average at end: {_load()}")
    struct, json = throughput["fix, struct tie-breaker"], throughput["fix, JSON tie-breaker"]
    print(f"struct tie-breaker / JSON tie-breaker throughput: {struct / json:.3f}")
    print(f"struct tie-breaker / unsafe original throughput: {struct / throughput['original (unsafe)']:.3f}")


if __name__ == "__main__":
    main()
