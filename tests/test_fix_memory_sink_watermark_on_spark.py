"""The SPX204 fix for an event-time window count written in complete mode to a memory table that no
code of the module reads (the job watches the query's progress only), run on Spark. As on the
console, the fix adds a watermark and update mode: fed the same files batch by batch, the fixed
query runs on Spark's real memory sink, drops the windows the watermark has passed from its state,
and emits every on-time window's latest count; the original keeps every window for ever."""

from __future__ import annotations

import pytest

from spark_harness import feed_json_batches
from sparkpar_lint.fixes.engine import fix_source
from sparkpar_lint.rules import all_rules

pytestmark = pytest.mark.spark

JOB = """\
from pyspark.sql.functions import window


def start(spark, source):
    events = spark.readStream.schema("ts timestamp, sensor string").json(source)
    # readings per five-minute bucket of event time, watched through the query's progress
    return events.groupBy(window("ts", "5 minutes")).count() \\
        .writeStream \\
        .outputMode("complete") \\
        .format("memory") \\
        .queryName("probe") \\
        .start()
"""

# One file per micro-batch. After the second, the watermark is 10:30 - 10 minutes = 10:20.
BATCHES = [["10:00", "10:01", "10:07"], ["10:30"], ["10:21", "10:25"]]


def _run(spark, code: str, tmp_path, name: str):
    namespace: dict = {}
    exec(compile(code.replace('"probe"', f'"{name}"'), name, "exec"), namespace)
    source = tmp_path / f"{name}-in"
    source.mkdir()
    query = namespace["start"](spark, str(source))
    batches = [[{"ts": f"2024-05-01 {t}:00", "sensor": "s1"} for t in times] for times in BATCHES]
    state_rows = feed_json_batches(query, source, batches)
    latest: dict[str, int] = {}  # window start -> the last count the sink received for it
    for row in spark.table(name).collect():
        latest[row["window"]["start"].strftime("%H:%M")] = row["count"]
    return latest, state_rows


def test_the_fixed_memory_query_bounds_its_state(cluster_spark, tmp_path):
    outcome = fix_source("job.py", JOB, {"SPX204"}, unsafe=True)
    fixed = outcome.fixed
    assert (
        '    return events.withWatermark("ts", "10 minutes").groupBy(window("ts", "5 minutes")).count() \\\n'
        "        .writeStream \\\n"
        '        .outputMode("update") \\\n'
    ) in fixed
    assert "# readings per five-minute bucket" in fixed
    # Silent, stable, and no other rule's finding appears.
    rules = {rule.id for rule in all_rules()}
    again = fix_source("job.py", fixed, rules, unsafe=True)
    assert again.fixed == fixed and not [f for f in again.remaining if f.rule_id == "SPX204"]
    before = {f.rule_id for f in fix_source("job.py", JOB, rules).remaining}
    assert {f.rule_id for f in again.remaining} <= before

    original, original_state = _run(cluster_spark, JOB, tmp_path, "original_probe")
    answer, state = _run(cluster_spark, fixed, tmp_path, "fixed_probe")

    assert original == {"10:00": 2, "10:05": 1, "10:30": 1, "10:20": 1, "10:25": 1}
    assert original_state == 5
    # Every on-time window reached the sink with its full count; the two windows that ended
    # before the 10:20 watermark left the state.
    assert answer == original
    assert state == 3
