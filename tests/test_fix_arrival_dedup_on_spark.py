"""The SPX204 fix for a streaming deduplication on an id whose rows carry no event time but an
arrival time, a `withColumn(name, current_timestamp())` on the deduplication's own chain, run on
Spark: a watermark on the arrival time plus `dropDuplicatesWithinWatermark`. Fed the same files
batch by batch, the fixed query drops a copy that comes within the delay of the first, as the
original does, lets through one that comes after the delay has passed, and keeps fewer ids in its
state; the original remembers every id for ever.

The delay is set to two seconds (`watermark-delay`) so that the test can wait it out; the console
sink is swapped for a `foreachBatch` function that receives exactly the rows it would print."""

from __future__ import annotations

import pytest

from spark_harness import feed_json_batches
from sparkpar_lint.fixes.engine import fix_source
from sparkpar_lint.rules import all_rules
from sparkpar_lint.settings import AnalysisSettings

pytestmark = pytest.mark.spark

JOB = """\
from pyspark.sql import functions as F


def start(spark, source, show):
    events = spark.readStream.schema("event_id string, body string").json(source)
    received = events.withColumn("received_at", F.current_timestamp())
    unique = received.dropDuplicates(["event_id"])  # the producer resends on timeouts
    return unique.writeStream.format("console").start()
"""

DELAY = 2  # seconds
# One file per micro-batch; the pause before a batch, in seconds, lets the arrival time move on.
BATCHES = [
    (0, ["e1", "e2"]),
    (0, ["e1", "e3"]),  # e1's copy, within the delay of the first
    (3 * DELAY, ["e4"]),  # the watermark passes e1's arrival plus the delay
    (0, ["e5"]),  # the batch that lets the expired ids go
    (0, ["e1"]),  # e1's copy, long after the delay
]


def _run(spark, code: str, tmp_path, name: str):
    namespace: dict = {}
    exec(compile(code.replace('.format("console")', ".foreachBatch(show)"), name, "exec"), namespace)
    source = tmp_path / f"{name}-in"
    source.mkdir()
    shown: list[str] = []

    def show(batch, batch_id):
        shown.extend(row["event_id"] for row in batch.collect())

    query = namespace["start"](spark, str(source), show)
    batches = [[{"event_id": i, "body": "b"} for i in ids] for _, ids in BATCHES]
    state_rows = feed_json_batches(query, source, batches, [pause for pause, _ in BATCHES])
    return sorted(shown), state_rows


def test_a_copy_is_dropped_within_the_delay_of_its_arrival_and_old_ids_are_let_go(cluster_spark, tmp_path):
    settings = AnalysisSettings(watermark_delay=f"{DELAY} seconds")
    fixed = fix_source("job.py", JOB, {"SPX204"}, unsafe=True, settings=settings).fixed
    assert (
        "    unique = (\n"
        '        received.withWatermark("received_at", "2 seconds")\n'
        '        .dropDuplicatesWithinWatermark(["event_id"])\n'
        "    )  # the producer resends on timeouts\n"
    ) in fixed
    rules = {rule.id for rule in all_rules()}
    again = fix_source("job.py", fixed, rules, unsafe=True, settings=settings)
    assert again.fixed == fixed and "SPX204" not in {f.rule_id for f in again.remaining}
    assert {f.rule_id for f in again.remaining} <= {f.rule_id for f in fix_source("job.py", JOB, rules).remaining}

    original, original_state = _run(cluster_spark, JOB, tmp_path, "original")
    answer, state = _run(cluster_spark, fixed, tmp_path, "fixed")

    assert original == ["e1", "e2", "e3", "e4", "e5"]
    assert original_state == 5
    # The copy within the delay is still dropped; the one long after it is let through.
    assert answer == ["e1", "e1", "e2", "e3", "e4", "e5"]
    assert state < original_state
