"""On Spark: the cheaper tie-breaker (a struct of the typed columns), the whole row as JSON and
the lists fixed together in SQL text give one answer under every interleaving, and it is the
answer the original gives when its rows arrive in the order the fix chose."""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from spark_harness import load_job, run  # noqa: E402
from sparkpar_lint.fixes.engine import fix_source  # noqa: E402

RUNS = 6

HEARTBEATS = """\
from pyspark.sql import functions as F

INPUTS = {
    "heartbeats": [
        {"device": f"d{i % 7}", "ts": i // 21, "status": f"s{(i * 13) % 5}", "battery": float((i * 7) % 11)}
        for i in range(420)
    ]
}
SCHEMA = {"heartbeats": "device string, ts long, status string, battery double"}


def job(spark, heartbeats):
    typed = spark.createDataFrame(heartbeats.rdd, "device string, ts long, status string, battery double")
    latest = (
        typed.orderBy(F.col("ts").desc())  # newest first; several beats share a second
        .dropDuplicates(["device"])
    )
    return latest
"""

# No schema in the file: the whole row as JSON decides. Per device, the beats of its newest second
# differ only in the microseconds of `seen`, which to_json's default format leaves out.
MICROSECONDS = """\
from datetime import datetime

from pyspark.sql import functions as F

INPUTS = {
    "heartbeats": [
        {"device": f"d{i % 4}", "ts": 1, "seen": datetime(2024, 3, 1, 12, 0, 0, 1000 + (i * 37) % 100)}
        for i in range(40)
    ]
}
SCHEMA = {"heartbeats": "device string, ts long, seen timestamp"}


def job(spark, heartbeats):
    return heartbeats.orderBy(F.col("ts").desc()).dropDuplicates(["device"])
"""

# The same rows numbered in SQL text, ordered by the partition key alone.
MICROSECONDS_SQL = MICROSECONDS.replace(
    '    return heartbeats.orderBy(F.col("ts").desc()).dropDuplicates(["device"])\n',
    # Triple-quoted, one clause a line: the fix breaks a line the tie-breaker would take past 100.
    "    return spark.sql(\n"
    '        """\n'
    "        SELECT device, ts, seen\n"
    "        FROM (\n"
    "            SELECT *, row_number() OVER (PARTITION BY device ORDER BY device) AS rn\n"
    "            FROM heartbeats\n"
    "        )\n"
    "        WHERE rn = 1\n"
    '        """\n'
    "    )\n",
)

BASKETS = """\
from pyspark.sql import functions as F

INPUTS = {
    "lines": [
        {"basket": f"b{i % 6}", "item": f"item{i:03d}", "price": None if i % 5 == 0 else float(i)}
        for i in range(120)
    ]
}
SCHEMA = {"lines": "basket string, item string, price double"}


def job(spark, lines):
    return lines.groupBy("basket").agg(F.expr("collect_list(item) AS items"), F.expr("collect_list(price) AS prices"))
"""


def _fixed_job(tmp_path: Path, code: str, rule: str):
    outcome = fix_source("job.py", code, {rule}, unsafe=True)
    assert outcome.applied and {f.rule_id for f in outcome.applied} == {rule}
    path = tmp_path / "fixed_job.py"
    path.write_text(outcome.fixed, "utf-8")
    return outcome.fixed, load_job(path)


@pytest.mark.spark
def test_struct_tie_breaker_keeps_one_row_per_device(cluster_spark, tmp_path: Path):
    fixed, job = _fixed_job(tmp_path, HEARTBEATS, "SPX102")
    assert 'F.struct("status", "battery")' in fixed and "to_json" not in fixed
    outputs = [run(cluster_spark, job, seed) for seed in [None, *range(RUNS)]]
    assert all(output == outputs[0] for output in outputs)
    # The newest beat per device; among beats of that second, the smallest (status, battery):
    # the row the original keeps when tied rows arrive in that order.
    rows = load_job(_write(tmp_path, "original.py", HEARTBEATS)).INPUTS["heartbeats"]
    expected = {}
    for row in sorted(rows, key=lambda r: (-r["ts"], r["status"], r["battery"])):
        expected.setdefault(row["device"], row)
    assert sorted(outputs[0], key=repr) == sorted(
        ((r["device"], r["ts"], r["status"], r["battery"]) for r in expected.values()), key=repr
    )


@pytest.mark.spark
def test_json_tie_breaker_tells_rows_a_microsecond_apart(cluster_spark, tmp_path: Path):
    fixed, job = _fixed_job(tmp_path, MICROSECONDS, "SPX102")
    assert "to_json" in fixed and "SSSSSS" in fixed
    outputs = [run(cluster_spark, job, seed) for seed in [None, *range(RUNS)]]
    assert all(output == outputs[0] for output in outputs)
    # The earliest beat per device: JSON of equal devices and seconds orders by `seen`.
    assert sorted(outputs[0]) == sorted(
        (f"d{d}", 1, datetime(2024, 3, 1, 12, 0, 0, min(1000 + (i * 37) % 100 for i in range(d, 40, 4))))
        for d in range(4)
    )


@pytest.mark.spark
def test_json_tie_breaker_in_sql_text_tells_rows_a_microsecond_apart(cluster_spark, tmp_path: Path):
    assert MICROSECONDS_SQL != MICROSECONDS
    fixed, job = _fixed_job(tmp_path, MICROSECONDS_SQL, "SPX104")
    assert "ORDER BY device, to_json(struct(*),\n" in fixed and "map('timestampFormat'" in fixed
    outputs = [run(cluster_spark, job, seed) for seed in [None, *range(RUNS)]]
    assert all(output == outputs[0] for output in outputs)
    assert sorted(outputs[0]) == sorted(
        (f"d{d}", 1, datetime(2024, 3, 1, 12, 0, 0, min(1000 + (i * 37) % 100 for i in range(d, 40, 4))))
        for d in range(4)
    )


@pytest.mark.spark
def test_lists_in_sql_text_still_line_up(cluster_spark, tmp_path: Path):
    fixed, job = _fixed_job(tmp_path, BASKETS, "SPX101")
    assert fixed.count("array_sort(collect_list(struct(item, price)))") == 2
    outputs = [run(cluster_spark, job, seed) for seed in [None, *range(RUNS)]]
    assert all(output == outputs[0] for output in outputs)
    # The original's answer for rows arriving sorted by (item, price), nulls left out per list.
    original = load_job(_write(tmp_path, "original.py", BASKETS))
    assert outputs[0] == run(cluster_spark, original, None, arrival="ascending")


def _write(folder: Path, name: str, code: str) -> Path:
    path = folder / name
    path.write_text(code, "utf-8")
    return path
