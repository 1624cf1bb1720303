"""The SPX204 fix for a sorted window count shown on the console in complete mode, run on Spark:
the sort moves into a `foreachBatch` that sorts and shows each micro-batch, the query gets a
watermark and update mode. Fed the same files batch by batch, each batch prints the windows that
changed in it, in the sort's order, with the counts the original prints for them; the row whose
window the watermark has passed is not counted; the state holds only the open windows.

The fixed code runs as `sparkpar fix` wrote it (its `show()` prints from Python, where the test
reads it); the original's console sink prints from the JVM, so there it is swapped for a
`foreachBatch` function that receives exactly the rows the console would print."""

from __future__ import annotations

import pytest

from spark_harness import feed_json_batches
from sparkpar_lint.fixes.engine import fix_source

pytestmark = pytest.mark.spark

JOB = """\
from pyspark.sql import functions as F


def start(spark, source):
    events = spark.readStream.schema("ts timestamp, sensor string").json(source)
    # readings per five-minute bucket, newest first
    buckets = (
        events.groupBy(F.window("ts", "5 minutes"))
        .count()
        .select(F.date_format("window.start", "HH:mm").alias("start"), "count")
        .orderBy(F.col("start").desc())
    )
    return (
        buckets.writeStream.outputMode("complete")
        .format("console")
        .option("truncate", "false")
        .start()
    )
"""

# One file per micro-batch. After the second, the watermark is 10:30 - 10 minutes = 10:20.
BATCHES = [
    ["10:00", "10:01", "10:07"],
    ["10:30"],
    ["10:02", "10:21", "10:25"],  # 10:02 is 28 minutes late: its window closed at 10:20
]


def _batches():
    return [[{"ts": f"2024-05-01 {t}:00", "sensor": "s1"} for t in times] for times in BATCHES]


def _tables(printed: str) -> list[list[tuple[str, int]]]:
    """The rows of each table `show()` printed, in order: `|10:05|1    |` lines between borders."""
    tables: list[list[tuple[str, int]]] = []
    for line in printed.splitlines():
        if line.startswith("+-"):
            continue
        if line.startswith("|start"):
            tables.append([])
        elif line.startswith("|"):
            start, count = (cell.strip() for cell in line.strip("|").split("|"))
            tables[-1].append((start, int(count)))
    return tables


def test_each_batch_shows_its_changed_windows_sorted_and_the_state_is_bounded(cluster_spark, tmp_path, capsys):
    fixed = fix_source("job.py", JOB, {"SPX204"}, unsafe=True).fixed
    assert (
        '        buckets.writeStream.outputMode("update")\n'
        '        .foreachBatch(lambda batch, _: batch.orderBy(F.col("start").desc()).show(truncate=False))\n'
    ) in fixed
    assert ".orderBy" not in fixed.split("buckets = (")[1].split("return")[0]
    assert "# readings per five-minute bucket, newest first" in fixed

    namespace: dict = {}
    exec(compile(fixed, "fixed", "exec"), namespace)
    (tmp_path / "fixed").mkdir()
    capsys.readouterr()
    query = namespace["start"](cluster_spark, str(tmp_path / "fixed"))
    state = feed_json_batches(query, tmp_path / "fixed", _batches())
    printed = _tables(capsys.readouterr().out)

    original_tables: list[list[tuple[str, int]]] = []

    def show(batch, batch_id):
        original_tables.append([(row["start"], row["count"]) for row in batch.collect()])

    namespace = {"show": show}
    exec(compile(JOB.replace('.format("console")', ".foreachBatch(show)"), "original", "exec"), namespace)
    (tmp_path / "original").mkdir()
    query = namespace["start"](cluster_spark, str(tmp_path / "original"))
    original_state = feed_json_batches(query, tmp_path / "original", _batches())

    # The original re-prints every window each batch, newest first, and keeps them all.
    assert original_tables[-1] == [("10:30", 1), ("10:25", 1), ("10:20", 1), ("10:05", 1), ("10:00", 3)]
    # The fixed query prints the windows each batch changed, newest first; the late 10:02 row is
    # not counted, and the windows that ended before the 10:20 watermark have left the state.
    # (A batch Spark runs only because the watermark moved prints an empty table, as on the console.)
    printed = [table for table in printed if table]
    assert printed == [[("10:05", 1), ("10:00", 2)], [("10:30", 1)], [("10:25", 1), ("10:20", 1)]]
    assert state == 3 < original_state
