"""Throughput of a `sparkpar fix` output against a hand-written fix and the unsafe original.

The workload is shaped like the Yahoo streaming benchmark: ad events -> filter views -> join with
campaigns -> windowed count per campaign, plus an order-dependent stage (the last ad seen per
campaign window, after a sort the shuffle discards). The fixed job is produced by running
`sparkpar fix` on the original's source, then all three run in one Spark session on the same
cached input, in round robin. Prints rows/s per variant, the ratios and the machine's load
average; asserts nothing.

    python bench/fix_overhead.py [--rows 2000000] [--repeats 3]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

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
        for pipeline in variants.values():
            pipeline(events, campaigns).write.format("noop").mode("overwrite").save()  # warm-up
        # Round robin, not one variant after another: on a shared machine the load drifts, and a
        # drift must not land on one variant only.
        seconds: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(args.repeats):
            for name, pipeline in variants.items():
                start = time.perf_counter()
                pipeline(events, campaigns).write.format("noop").mode("overwrite").save()
                seconds[name].append(time.perf_counter() - start)
        throughput = {}
        for name, taken in seconds.items():
            throughput[name] = args.rows / statistics.median(taken)
            print(f"{name:26s} median {statistics.median(taken):6.2f} s  {throughput[name]:12,.0f} rows/s")
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


if __name__ == "__main__":
    main()
