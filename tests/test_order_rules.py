"""Order rules (SPX102, SPX104, SPX106, SPX107): what one example per finding cannot express.

Several rules on one chain, several findings in one file, and the exact spans of related locations.
"""

from __future__ import annotations

from sparkpar_lint.analysis import analyze
from sparkpar_lint.model import Severity, Span

PRELUDE = (
    "from pyspark.sql import SparkSession, Window, functions as F\n"
    "spark = SparkSession.builder.getOrCreate()\n"
    'events = spark.read.parquet("events")\n'
)


def _found(code: str) -> list[tuple[str, int, int]]:
    return [(f.rule_id, f.span.line, f.span.column) for f in analyze("job.py", code)]


def test_sort_then_dedup_is_both_a_discarded_sort_and_an_arbitrary_duplicate():
    code = PRELUDE + 'latest = events.orderBy(F.desc("ts")).dropDuplicates(["user"])\n'
    assert _found(code) == [("SPX107", 4, 16), ("SPX102", 4, 38)]
    spx102 = next(f for f in analyze("job.py", code) if f.rule_id == "SPX102")
    assert spx102.severity is Severity.ERROR
    assert spx102.related[0].span == Span(4, 16, 4, 37)


def test_sort_discarded_points_at_the_whole_discarding_call():
    code = PRELUDE + 'ranked = events.sort("ts")\nranked.repartition(8, "user").write.parquet("o")\n'
    (finding,) = [f for f in analyze("job.py", code) if f.rule_id == "SPX107"]
    assert finding.span == Span(4, 16, 4, 26)
    assert finding.related[0].span == Span(5, 7, 5, 29)


def test_sort_is_wasted_only_when_every_branch_discards_it():
    both = PRELUDE + 'ranked = events.orderBy("ts")\nranked.repartition(4)\nranked.groupBy("user").agg(F.sum("n"))\n'
    assert [r for r, *_ in _found(both)] == ["SPX107"]
    one_uses = both + "ranked.take(3)\n"
    assert "SPX107" not in [r for r, *_ in _found(one_uses)]


def test_sort_discarded_names_the_step_that_reads_the_lost_order():
    code = (
        PRELUDE
        + 'users = spark.read.parquet("users")\nrows = events.orderBy("ts").join(users, "id").collect()\n'
        + "publish(rows)\n"
    )
    (finding,) = [f for f in analyze("job.py", code) if f.rule_id == "SPX107"]
    assert [r.span.line for r in finding.related] == [5, 5]
    assert "`collect` then reads rows in arbitrary order" in finding.message
    assert finding.links.outcomes and finding.links.observed


def test_sort_the_optimizer_removes_is_reported_only_when_its_order_is_read_later():
    dropped = (
        PRELUDE + 'users = spark.read.parquet("users")\nevents.orderBy("ts").join(users, "id").write.parquet("o")\n'
    )
    assert "SPX107" not in [r for r, *_ in _found(dropped)]
    as_text = dropped.replace('.parquet("o")', '.csv("o")')
    assert [r for r, *_ in _found(as_text)] == ["SPX107"]


def test_sort_nothing_reads_assumes_a_reader_of_the_result():
    code = PRELUDE + 'events.orderBy("ts").repartition(8).write.parquet("o")\n'
    (finding,) = [f for f in analyze("job.py", code) if f.rule_id == "SPX107"]
    assert not finding.links.outcomes
    assert "holds if a reader of this result expects the order the sort gave" in finding.message


def test_every_positional_read_after_one_shuffle_is_reported():
    code = (
        PRELUDE
        + 'counts = events.groupBy("page").count()\n'
        + "a = counts.first()\nb = counts.head(3)\nc = counts.collect()[0]\nd = counts.tail(2)\n"
    )
    assert [(r, line) for r, line, _ in _found(code)] == [
        ("SPX106", 5),
        ("SPX106", 6),
        ("SPX106", 7),
        ("SPX106", 8),
    ]


def test_per_key_sort_is_not_a_total_order_for_a_limit():
    code = PRELUDE + 'events.repartition(4, "user").sortWithinPartitions("user", "ts").limit(5).write.parquet("top")\n'
    assert [r for r, *_ in _found(code)] == ["SPX106"]


def test_window_spec_from_a_helper_reports_the_call_and_the_spec():
    code = (
        PRELUDE
        + 'def per_user():\n    return Window.partitionBy("user")\n'
        + 'events.select(F.collect_list("page").over(per_user()), F.last("ts").over(per_user()))\n'
    )
    findings = [f for f in analyze("job.py", code) if f.rule_id == "SPX104"]
    assert [(f.span.line, f.span.column) for f in findings] == [(6, 14), (6, 55)]
    assert all(f.related[0].span.line == 5 for f in findings)
    assert "SPX101" not in {f.rule_id for f in analyze("job.py", code)}


def test_dedup_without_sort_is_a_warning():
    code = PRELUDE + 'events.dropDuplicates(["user"]).write.parquet("o")\n'
    (finding,) = analyze("job.py", code)
    assert (finding.rule_id, finding.severity) == ("SPX102", Severity.WARNING)


def test_zipped_lists_need_every_null_dropped():
    # dropna(how="all") keeps a row whose price alone is null: collect_list skips it and the
    # zipped pairs shift, so both lists are reported; how="any" (the default) drops it.
    zipped = (
        '.groupBy("basket").agg(F.collect_list("item").alias("items"), F.collect_list("price").alias("prices"))'
        '.select(F.explode(F.arrays_zip("items", "prices")).alias("line")).write.parquet("o")\n'
    )
    some = PRELUDE + 'spark.read.parquet("lines").dropna(how="all")' + zipped
    every = PRELUDE + 'spark.read.parquet("lines").dropna(how="any")' + zipped
    assert [r for r, *_ in _found(some)] == ["SPX101", "SPX101"]
    assert [r for r, *_ in _found(every)] == []
