"""An SCD2 table flags one version of each entity as current: rows filtered to `is_current = true`
hold one row per entity id, so "the latest row per id" over them has nothing to choose between.
The near misses (another key, the past versions, an id rewritten) are still reported, at the
window call."""

from __future__ import annotations

import textwrap

import pytest

from sparkpar_lint.analysis import analyze

LATEST_CURRENT = textwrap.dedent(
    """\
    from pyspark.sql import SparkSession, Window, functions as F

    spark = SparkSession.builder.getOrCreate()
    silver = spark.read.format("delta").load("silver/drivers").filter({flag})
    silver = silver.withColumn({rewrite}).filter(F.col("loaded_at") > F.lit("2024-01-01"))
    w = Window.partitionBy({key}).orderBy(F.col("loaded_at").desc())
    latest = silver.withColumn("rn", F.row_number().over(w)).filter(F.col("rn") == 1).drop("rn")
    latest.write.mode("overwrite").saveAsTable("gold.dim_driver")
    """
)
BASE = {"flag": 'F.col("is_current") == F.lit(True)', "rewrite": '"name", F.trim("name")', "key": '"driver_id"'}
ONE_CURRENT_PER_ID = {
    "lit(True)": {},
    "True": {"flag": 'F.col("is_current") == True'},
    "sql text": {"flag": '"is_current = true"'},
    "current_flag = 1": {"flag": 'F.col("current_flag") == 1'},
    "id recast": {"rewrite": '"driver_id", F.col("driver_id").cast("long")'},
}
MAY_TIE = {
    "not an id": {"key": '"city"'},
    "past versions": {"flag": 'F.col("is_current") == F.lit(False)'},
    "id rewritten": {"rewrite": '"driver_id", F.upper(F.col("region"))'},
    "two keys": {"key": '"driver_id", "region"'},
}


def _spx104(shape: dict[str, str]) -> list[tuple[int, int]]:
    source = LATEST_CURRENT.format(**{**BASE, **shape})
    return [(f.span.line, f.span.column) for f in analyze("job.py", source) if f.rule_id == "SPX104"]


@pytest.mark.parametrize("shape", ONE_CURRENT_PER_ID.values(), ids=ONE_CURRENT_PER_ID.keys())
def test_latest_of_the_current_versions_per_id_is_not_reported(shape):
    assert _spx104(shape) == []


@pytest.mark.parametrize("shape", MAY_TIE.values(), ids=MAY_TIE.keys())
def test_the_near_misses_are_still_reported_at_the_window(shape):
    assert _spx104(shape) == [(7, 33)]
