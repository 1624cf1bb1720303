"""On Spark: SPX105's row-hash fixes (a draw, a random split, ids with no key) give one answer
under every partitioning, where the original's answer changes with it."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from spark_harness import load_job, run  # noqa: E402
from sparkpar_lint.fixes.engine import fix_source  # noqa: E402

RUNS = 5
_INPUTS = """\
from pyspark.sql import functions as F

INPUTS = {"readings": [{"sensor": f"s{i % 13}", "value": float(i % 29)} for i in range(600)]}
SCHEMA = {"readings": "sensor string, value double"}

"""

SAMPLE = (
    _INPUTS
    + """\
def job(spark, readings):
    return readings.withColumn("draw", F.rand(seed=7)).filter("draw < 0.3")
"""
)

SPLIT = (
    _INPUTS
    + """\
def job(spark, readings):
    rows = spark.table("readings")  # read here: a DataFrame, not an RDD
    train, test = rows.randomSplit([0.7, 0.3])
    return train.withColumn("part", F.lit("train")).unionByName(test.withColumn("part", F.lit("test")))
"""
)

RDD_SPLIT = (
    _INPUTS
    + """\
def job(spark, readings):
    pairs = spark.table("readings").rdd.map(lambda r: (r.sensor, r.value))
    train, test = pairs.randomSplit([0.7, 0.3])
    return train.map(lambda p: (*p, "train")).union(test.map(lambda p: (*p, "test")))
"""
)

# Many rows with copies (600 readings, 377 distinct), from a table: ids numbered among copies.
IDS = (
    _INPUTS
    + """\
def job(spark, readings):
    rows = spark.table("readings")
    return rows.withColumn("reading_id", F.monotonically_increasing_id())
"""
)

# Distinct rows whose select names no plain columns: the id is a hash of the whole row.
DISTINCT_IDS = (
    _INPUTS
    + """\
def job(spark, readings):
    rows = spark.table("readings").select(F.upper("sensor").alias("sensor"), "value").distinct()
    return rows.withColumn("reading_id", F.monotonically_increasing_id())
"""
)


def _jobs(tmp_path: Path, code: str, expected: str):
    outcome = fix_source("job.py", code, {"SPX105"}, unsafe=True)
    assert [f.rule_id for f in outcome.applied] == ["SPX105"]
    assert expected in outcome.fixed
    (tmp_path / "original.py").write_text(code, "utf-8")
    (tmp_path / "fixed.py").write_text(outcome.fixed, "utf-8")
    return load_job(tmp_path / "original.py"), load_job(tmp_path / "fixed.py")


def _outputs(spark, job) -> list[list]:
    return [run(spark, job, seed) for seed in [None, *range(RUNS)]]


@pytest.mark.spark
def test_hashed_draw_samples_the_same_rows_under_every_partitioning(cluster_spark, tmp_path: Path):
    original, fixed = _jobs(tmp_path, SAMPLE, 'F.pmod(F.xxhash64("*", F.lit(7)), 2**53) / 2**53')
    before, after = _outputs(cluster_spark, original), _outputs(cluster_spark, fixed)
    assert any(o != before[0] for o in before)  # the seeded draw follows the partitioning
    assert all(o == after[0] for o in after)
    assert all(0 <= draw < 0.3 for _, _, draw in after[0]) and 100 < len(after[0]) < 260


@pytest.mark.spark
def test_hashed_split_keeps_each_row_in_one_split_under_every_partitioning(cluster_spark, tmp_path: Path):
    original, fixed = _jobs(tmp_path, SPLIT, 'rows.filter(F.pmod(F.xxhash64("*"), 100) >= 70)')
    before, after = _outputs(cluster_spark, original), _outputs(cluster_spark, fixed)
    assert any(o != before[0] for o in before)
    assert all(o == after[0] for o in after)
    # Every reading in exactly one split; copies of a reading together.
    rows = load_job(tmp_path / "original.py").INPUTS["readings"]
    assert Counter((s, v) for s, v, _ in after[0]) == Counter((r["sensor"], r["value"]) for r in rows)
    assert all(len({p for s, v, p in after[0] if (s, v) == key}) == 1 for key in {(s, v) for s, v, _ in after[0]})


@pytest.mark.spark
def test_hashed_rdd_split_keeps_each_value_in_one_split_under_every_partitioning(cluster_spark, tmp_path: Path):
    original, fixed = _jobs(
        tmp_path, RDD_SPLIT, "pairs.filter(lambda item: zlib.crc32(repr(item).encode()) % 100 < 70)"
    )
    before, after = _outputs(cluster_spark, original), _outputs(cluster_spark, fixed)
    assert any(o != before[0] for o in before)
    assert all(o == after[0] for o in after)
    rows = load_job(tmp_path / "original.py").INPUTS["readings"]
    assert Counter((s, v) for s, v, _ in after[0]) == Counter((r["sensor"], r["value"]) for r in rows)


@pytest.mark.spark
def test_ids_numbered_among_copies_are_unique_and_the_same_under_every_partitioning(cluster_spark, tmp_path: Path):
    original, fixed = _jobs(tmp_path, IDS, 'Window.partitionBy(F.struct("*")).orderBy(F.struct("*"))')
    before, after = _outputs(cluster_spark, original), _outputs(cluster_spark, fixed)
    assert any(o != before[0] for o in before)
    assert all(o == after[0] for o in after)
    assert len({reading_id for _, _, reading_id in after[0]}) == 600  # unique, copies included
    assert sorted(r[:2] for r in after[0]) == sorted(r[:2] for r in before[0])


@pytest.mark.spark
def test_ids_of_distinct_rows_are_hashes_of_the_row(cluster_spark, tmp_path: Path):
    original, fixed = _jobs(tmp_path, DISTINCT_IDS, 'F.xxhash64("*")')
    before, after = _outputs(cluster_spark, original), _outputs(cluster_spark, fixed)
    assert any(o != before[0] for o in before)
    assert all(o == after[0] for o in after)
    assert len({reading_id for _, _, reading_id in after[0]}) == len(after[0]) == 13 * 29
