"""SPX204's deduplication fixtures on Spark: under a watermark, a `dropDuplicates` whose key
leaves out the watermarked column keeps every key for ever, and the fixed twin, with the column in
the key, lets the watermark drop old entries. Files are fed day by day and the state operator's
row count is read from the query's progress."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "spx204"


def _state_after_each_day(spark, fixture: str, tmp_path: Path) -> list[int]:
    """Three devices a day, each read once, and one reading of the day re-sent."""
    unique_readings = runpy.run_path(str(FIXTURES / fixture))["unique_readings"]
    source = tmp_path / fixture
    source.mkdir()
    query = unique_readings(spark, str(source)).writeStream.format("noop").start()
    counts = []
    try:
        for day in range(1, 5):
            rows = [
                {"device": f"d{day}-{n}", "reading": 1.5, "read_at": f"2024-05-0{day} 1{n}:00:00"} for n in range(3)
            ]
            rows.append(rows[0])
            (source / f"part-{day}.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
            query.processAllAvailable()
            counts.append(sum(op["numRowsTotal"] for op in query.lastProgress["stateOperators"]))
    finally:
        query.stop()
    return counts


def test_a_key_without_the_watermarked_column_keeps_every_key(cluster_spark, tmp_path):
    bad = _state_after_each_day(cluster_spark, "bad_gateway_resends.py", tmp_path)
    fixed = _state_after_each_day(cluster_spark, "fixed_gateway_resends.py", tmp_path)
    # Every (device, reading) pair stays: 3, 6, 9, 12.
    assert bad == [3, 6, 9, 12]
    # With `read_at` in the key, entries older than the watermark are dropped.
    assert fixed[-1] < bad[-1]
