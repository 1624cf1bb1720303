"""The sequence column an unsafe fix adds lives only on the chain that needs it: DataFrames that
other statements read (distinct, temp views, writes) are left as they were, and a union gets
it on every side at once (it is taken after the union)."""

from __future__ import annotations

import pytest

from sparkpar_lint.analysis import analyze
from sparkpar_lint.fixes.engine import fix_source

HEADER = "from pyspark.sql import SparkSession, functions as F\n\nspark = SparkSession.builder.getOrCreate()\n"

SHARED = {
    "distinct": 'visits.distinct().write.parquet("unique_visits")\n',
    "temp view": 'visits.createOrReplaceTempView("visits")\n',
    "show": "visits.show()\n",
    "dropDuplicates": 'visits.dropDuplicates(["user", "page"]).count()\n',
}


def changed_lines(before: str, after: str) -> list[str]:
    return [line for line in after.splitlines() if line not in before.splitlines()]


@pytest.mark.parametrize("reader", SHARED, ids=list(SHARED))
def test_a_shared_dataframe_is_not_given_the_sequence(reader: str):
    code = (
        HEADER
        + 'visits = spark.read.parquet("visits").select("user", "page")\n'
        + SHARED[reader]
        + 'first_pages = visits.groupBy("user").agg(F.first("page"))\n'
    )
    fixed = fix_source("job.py", code, {"SPX101"}, unsafe=True).fixed
    assert 'visits = spark.read.parquet("visits").select("user", "page")\n' in fixed
    assert SHARED[reader] in fixed
    sequence_lines = [line for line in fixed.splitlines() if "_sparkpar_seq" in line]
    assert sequence_lines and all(line in changed_lines(code, fixed) for line in sequence_lines)
    assert fixed.endswith(
        "first_pages = (\n"
        '    visits.withColumn("_sparkpar_seq", F.monotonically_increasing_id())\n'
        '    .groupBy("user")\n'
        '    .agg(F.min(F.struct("_sparkpar_seq", "page")).getField("page").alias("first(page)"))\n'
        ")\n"
    )
    assert [f for f in analyze("job.py", fixed) if f.rule_id == "SPX101"] == []


def test_a_union_gets_the_sequence_after_it_on_every_side():
    code = (
        HEADER
        + 'a = spark.read.parquet("a")\n'
        + 'b = spark.read.parquet("b")\n'
        + "both = a.unionByName(b)\n"
        + 'first_pages = both.groupBy("user").agg(F.first("page"))\n'
    )
    fixed = fix_source("job.py", code, {"SPX101"}, unsafe=True).fixed
    for line in ('a = spark.read.parquet("a")\n', 'b = spark.read.parquet("b")\n', "both = a.unionByName(b)\n"):
        assert line in fixed
    assert 'both.withColumn("_sparkpar_seq", F.monotonically_increasing_id())' in fixed


def test_the_sequence_is_dropped_right_after_the_deduplication():
    code = (
        HEADER
        + 'clicks = spark.read.parquet("clicks")\n'
        + 'clicks.write.parquet("raw_copy")\n'
        + 'one = clicks.dropDuplicates(["session"])\n'
    )
    fixed = fix_source("job.py", code, {"SPX102"}, unsafe=True).fixed
    assert 'clicks = spark.read.parquet("clicks")\nclicks.write.parquet("raw_copy")\n' in fixed
    assert fixed.rstrip().endswith('.drop("_sparkpar_rn", "_sparkpar_seq")\n)')


def test_a_grouping_other_statements_share_gets_no_sequence_fix():
    code = (
        HEADER
        + 'visits = spark.read.parquet("visits")\n'
        + 'by_user = visits.groupBy("user")\n'
        + "counts = by_user.count()\n"
        + 'firsts = by_user.agg(F.first("page"))\n'
    )
    fixed = fix_source("job.py", code, {"SPX101"}, unsafe=True).fixed
    # No sequence on rows another statement counts: the fix falls back to `min`, which adds no column.
    assert "_sparkpar_seq" not in fixed
    assert fixed.endswith(
        'by_user = visits.groupBy("user")\ncounts = by_user.count()\nfirsts = by_user.agg(F.min("page").alias("first(page)"))\n'
    )


def test_the_sequence_fix_raises_no_finding_of_another_rule():
    code = (
        HEADER
        + 'visits = spark.read.parquet("visits").filter("page IS NOT NULL").select("user", "page")\n'
        + "visits.show()\n"
        + 'first_pages = visits.groupBy("user").agg(F.first("page"))\n'
    )
    before = {(f.rule_id) for f in analyze("job.py", code)}
    fixed = fix_source("job.py", code, {"SPX101"}, unsafe=True).fixed
    assert "_sparkpar_seq" in fixed
    after = {(f.rule_id) for f in analyze("job.py", fixed)}
    assert after <= before - {"SPX101"}
