"""The SPX204 fix run on Spark: an event-time window count shown on the console in complete mode
gets a watermark and update mode. Fed the same files batch by batch, the fixed query keeps only
the windows the watermark has not passed, and a row later than the delay whose window is already
closed is not counted, as the rule doc's Fix safety says; the original keeps every window.

Spark's console sink prints from the JVM, out of a test's reach, so the test swaps it for a
`foreachBatch` function that receives exactly the rows the console would print."""

from __future__ import annotations

import pytest

from spark_harness import feed_json_batches
from sparkpar_lint.fixes.engine import fix_source

pytestmark = pytest.mark.spark

JOB = """\
from pyspark.sql.functions import window


def start(spark, source, show):
    events = spark.readStream \\
        .schema("ts timestamp, sensor string") \\
        .json(source)
    # readings per five-minute bucket of event time
    buckets = events.groupBy(window("ts", "5 minutes")).count()
    return buckets.writeStream \\
        .outputMode("complete") \\
        .format("console") \\
        .start()
"""

# One file per micro-batch. After the second, the watermark is 10:30 - 10 minutes = 10:20.
BATCHES = [
    ["10:00", "10:01", "10:07"],
    ["10:30"],
    ["10:02", "10:21", "10:25"],  # 10:02 is 28 minutes late: its window closed at 10:20
]


def _run(spark, code: str, tmp_path, name: str):
    namespace: dict = {}
    exec(compile(code.replace('.format("console")', ".foreachBatch(show)"), name, "exec"), namespace)
    source = tmp_path / f"{name}-in"
    source.mkdir()
    latest: dict[str, int] = {}  # window start -> count last printed for it

    def show(batch, batch_id):
        for row in batch.collect():
            latest[row["window"]["start"].strftime("%H:%M")] = row["count"]

    query = namespace["start"](spark, str(source), show)
    batches = [[{"ts": f"2024-05-01 {t}:00", "sensor": "s1"} for t in times] for times in BATCHES]
    state_rows = feed_json_batches(query, source, batches)
    return latest, state_rows


def test_the_fixed_query_bounds_its_state_and_drops_only_the_row_past_the_delay(cluster_spark, tmp_path):
    fixed = fix_source("job.py", JOB, {"SPX204"}, unsafe=True).fixed
    assert 'events.withWatermark("ts", "10 minutes").groupBy(' in fixed
    assert '.outputMode("update") \\\n        .format("console")' in fixed

    original, original_state = _run(cluster_spark, JOB, tmp_path, "original")
    answer, state = _run(cluster_spark, fixed, tmp_path, "fixed")

    # The original counts the late row and keeps all five windows for the life of the query.
    assert original == {"10:00": 3, "10:05": 1, "10:30": 1, "10:20": 1, "10:25": 1}
    assert original_state == 5
    # The fixed query drops the row whose window the watermark had passed, counts the rows less
    # late than the delay, and has dropped the two windows that ended before 10:20.
    assert answer == {"10:00": 2, "10:05": 1, "10:30": 1, "10:20": 1, "10:25": 1}
    assert state == 3
