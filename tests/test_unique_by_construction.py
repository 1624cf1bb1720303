"""A window ordered by a column the rows were built unique on (within each of its partitions)
has no ties: one row per `groupBy` key, a `row_number()`, a `monotonically_increasing_id()`.
Each shape has a near miss that may tie, still reported with the condition it assumed."""

from __future__ import annotations

import json

HEADER = """\
from pyspark.sql import SparkSession, Window, functions as F

spark = SparkSession.builder.getOrCreate()
events = spark.read.parquet("events")
"""
BY_USER = 'Window.partitionBy("user")'
UNIQUE = {
    "daily.py": 'rows = events.groupBy("user", F.to_date("ts").alias("day")).agg(F.count("*").alias("visits"))\n'
    f'rows.withColumn("n", F.row_number().over({BY_USER}.orderBy("day"))).write.parquet("out")\n',
    "numbered.py": f'rows = events.withColumn("r", F.row_number().over({BY_USER}.orderBy("ts", "page")))\n'
    f'rows.withColumn("n", F.first("page").over({BY_USER}.orderBy("r"))).write.parquet("out")\n',
    "ids.py": 'rows = events.orderBy("ts", "page").withColumn("seq_no", F.monotonically_increasing_id())\n'
    f'rows.withColumn("n", F.row_number().over({BY_USER}.orderBy("seq_no"))).write.parquet("out")\n',
}
MAY_TIE = {
    # One row per user and day, but the window is per user and ordered by the hour.
    "hourly.py": 'rows = events.groupBy("user", "day", "hour").agg(F.count("*").alias("visits"))\n'
    f'rows.withColumn("n", F.row_number().over({BY_USER}.orderBy("hour"))).write.parquet("out")\n',
    # Numbered per user and day: two days of one user both have an `r` of 1.
    "per_day.py": 'rows = events.withColumn("r", F.row_number().over(Window.partitionBy("user", "day").orderBy("ts")))\n'
    f'rows.withColumn("n", F.first("page").over({BY_USER}.orderBy("r"))).write.parquet("out")\n',
    # The id written over by a coarser value.
    "bucketed.py": 'rows = events.withColumn("seq_no", F.monotonically_increasing_id())\n'
    'rows = rows.withColumn("seq_no", F.col("seq_no") % 7)\n'
    f'rows.withColumn("n", F.row_number().over({BY_USER}.orderBy("seq_no"))).write.parquet("out")\n',
}


def test_orders_unique_by_construction_are_no_ties_and_near_misses_are(sparkpar_cli, tmp_path):
    for name, body in {**UNIQUE, **MAY_TIE}.items():
        (tmp_path / name).write_text(HEADER + body)
    result = sparkpar_cli(
        "lint", ".", "--format", "json", "--no-cache", "--min-confidence", "medium", "--select", "SPX104"
    )
    assert result.exit_code == 1, result.output
    findings = {f["path"]: f for f in json.loads(result.stdout)}
    assert sorted(findings) == sorted(MAY_TIE)
    order = {"hourly.py": "hour", "per_day.py": "r", "bucketed.py": "seq_no"}
    for name, finding in findings.items():
        assert finding["confidence"] == "medium"
        assert finding["links"]["outcomes"] == "assumed"
        assert finding["message"].endswith(
            f"(holds if rows tied on `{order[name]}` within a `user` partition can differ)"
        )
