"""The SPX204 fix for a streaming deduplication on an id run on Spark: the rows' schema gives them
one event-time column, so `dropDuplicates(["event_id"])` becomes a watermark and
`dropDuplicatesWithinWatermark`. Fed the same files batch by batch, the fixed query drops a copy
that arrives within the delay as the original does, keeps fewer ids in its state, and lets through
only a copy later than the delay and drops a row later than the watermark, as the rule doc's Fix
safety says; the original remembers every id for ever.

The console sink prints from the JVM, so the test swaps it for a `foreachBatch` function that
receives exactly the rows the console would print."""

from __future__ import annotations

import pytest

from spark_harness import feed_json_batches
from sparkpar_lint.fixes.engine import fix_source

pytestmark = pytest.mark.spark

JOB = """\
def start(spark, source, show):
    events = spark.readStream \\
        .schema("event_id string, event_time timestamp, page string") \\
        .json(source)
    unique = events \\
        .dropDuplicates(["event_id"])  # the producer resends on timeouts
    return unique.writeStream \\
        .format("console") \\
        .start()
"""

# One file per micro-batch, each row (id, HH:MM). After the second the watermark is 10:20.
BATCHES = [
    [("e1", "10:00"), ("e2", "10:01")],
    [("e1", "10:05"), ("e3", "10:30")],  # e1's copy, five minutes on: within the delay
    [("e2", "10:02"), ("e1", "10:35"), ("e4", "10:25")],  # e2 is past the watermark; e1 35 minutes on
]


def _run(spark, code: str, tmp_path, name: str):
    namespace: dict = {}
    exec(compile(code.replace('.format("console")', ".foreachBatch(show)"), name, "exec"), namespace)
    source = tmp_path / f"{name}-in"
    source.mkdir()
    shown: list[tuple[str, str]] = []

    def show(batch, batch_id):
        shown.extend((row["event_id"], row["event_time"].strftime("%H:%M")) for row in batch.collect())

    query = namespace["start"](spark, str(source), show)
    batches = [[{"event_id": i, "event_time": f"2024-05-01 {t}:00", "page": "p"} for i, t in rows] for rows in BATCHES]
    state_rows = feed_json_batches(query, source, batches)
    return sorted(shown), state_rows


def test_the_fixed_dedup_bounds_its_state_and_lets_through_only_a_copy_past_the_delay(cluster_spark, tmp_path):
    fixed = fix_source("job.py", JOB, {"SPX204"}, unsafe=True).fixed
    assert (
        '    unique = events \\\n        .withWatermark("event_time", "10 minutes") \\\n'
        '        .dropDuplicatesWithinWatermark(["event_id"])  # the producer resends on timeouts\n'
    ) in fixed

    original, original_state = _run(cluster_spark, JOB, tmp_path, "original")
    answer, state = _run(cluster_spark, fixed, tmp_path, "fixed")

    assert original == [("e1", "10:00"), ("e2", "10:01"), ("e3", "10:30"), ("e4", "10:25")]
    assert original_state == 4
    # The copy within the delay is still dropped; the copy 35 minutes on is let through.
    assert answer == [("e1", "10:00"), ("e1", "10:35"), ("e2", "10:01"), ("e3", "10:30"), ("e4", "10:25")]
    assert state < original_state
