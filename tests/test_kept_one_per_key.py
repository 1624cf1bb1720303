"""Rows filtered to one `row_number()` per key (`filter(col("rn") == 1)`, the "latest row per key"
step) are unique on that key: a later `dropDuplicates([key])` drops nothing and a later window
partitioned by the key holds one row, so neither is reported. The near misses keep two rows of a
key (numbered per a finer partition, or `rn <= 2`) and are still reported at the same place."""

from __future__ import annotations

import textwrap

import pytest

from sparkpar_lint.analysis import analyze

LATEST = textwrap.dedent(
    """\
    from pyspark.sql import SparkSession, Window, functions as F

    spark = SparkSession.builder.getOrCreate()
    versions = spark.read.table("silver.drivers")
    w = Window.partitionBy({partition}).orderBy(F.col("loaded_at").desc())
    latest = versions.withColumn("rn", F.row_number().over(w)).filter({kept}).drop("rn")
    erased = latest.filter(F.col("is_deleted") == F.lit(True)).select("driver_id", "deleted_at").dropDuplicates(["driver_id"])
    erased.write.mode("append").saveAsTable("gdpr_events")
    ranked = latest.withColumn("first", F.first("licence").over(Window.partitionBy("driver_id").orderBy("hired_at")))
    ranked.write.mode("overwrite").saveAsTable("drivers_current")
    """
)
ONE_PER_KEY = {
    "rn == 1": {"partition": '"driver_id"', "kept": 'F.col("rn") == 1'},
    "rn == lit(1)": {"partition": '"driver_id"', "kept": 'F.col("rn") == F.lit(1)'},
    "sql text": {"partition": '"driver_id"', "kept": '"rn = 1"'},
}
TWO_PER_KEY = {
    "numbered per region": {"partition": '"driver_id", "region"', "kept": 'F.col("rn") == 1'},
    "two kept": {"partition": '"driver_id"', "kept": 'F.col("rn") <= 2'},
}


def _found(shape: dict[str, str]) -> list[tuple[str, int, int]]:
    findings = analyze("job.py", LATEST.format(**shape))
    return sorted((f.rule_id, f.span.line, f.span.column) for f in findings if f.rule_id in ("SPX102", "SPX104"))


@pytest.mark.parametrize("shape", ONE_PER_KEY.values(), ids=ONE_PER_KEY.keys())
def test_rows_kept_one_per_key_have_no_duplicates_or_ties_on_it(shape):
    # Only the latest-row window itself is reported (its order may tie); nothing downstream.
    assert _found(shape) == [("SPX104", 6, 35)]


@pytest.mark.parametrize("shape", TWO_PER_KEY.values(), ids=TWO_PER_KEY.keys())
def test_rows_that_keep_two_per_key_are_still_reported(shape):
    assert _found(shape) == [("SPX102", 7, 93), ("SPX104", 6, 35), ("SPX104", 9, 36)]
