"""SPX101's fixes keep the names Spark gives unnamed aggregates: run on Spark, the fixed job's
columns are the original's (`last(page)`, `first(ts)`, `collect_list(page)`), so later code that
reads them by name, `show()` and written schemas see no change. The same for SQL text: the
rewritten call is aliased (AS `first(Page)`) to the name Spark gave the original."""

from __future__ import annotations

import pytest

from sparkpar_lint.fixes.engine import fix_source

pytestmark = pytest.mark.spark

JOB = """\
from pyspark.sql import functions as F


def per_user(events):
    ordered = events.orderBy("ts")
    return ordered.groupBy("user").agg(F.last("page"), F.first("ts"), F.collect_list("page"))


def overall(events):
    return events.orderBy("ts").select(F.max("ts"), F.last("page"))
"""


def test_the_fixed_aggregates_keep_the_original_column_names(cluster_spark):
    fixed = fix_source("job.py", JOB, {"SPX101"}, unsafe=True).fixed
    assert '.alias("last(page)")' in fixed and '.alias("collect_list(page)")' in fixed
    events = cluster_spark.createDataFrame(
        [("u1", 1, "home"), ("u1", 2, "cart"), ("u2", 1, "home")], "user string, ts int, page string"
    )
    original, rewritten = {}, {}
    exec(compile(JOB, "original", "exec"), original)
    exec(compile(fixed, "fixed", "exec"), rewritten)
    for name in ("per_user", "overall"):
        before, after = original[name](events), rewritten[name](events)
        assert after.columns == before.columns, name
    by_user = {row["user"]: row for row in rewritten["per_user"](events).collect()}
    assert by_user["u1"]["last(page)"] == "cart" and by_user["u1"]["first(ts)"] == 1
    assert by_user["u1"]["collect_list(page)"] == ["home", "cart"]
    assert rewritten["overall"](events).first()["last(page)"] == "cart"


SQL_JOB = """\
from pyspark.sql import SparkSession

spark = SparkSession.builder.getOrCreate()


def queries():
    return [
        spark.sql("SELECT user, FIRST(Page) FROM page_visits GROUP BY user"),
        spark.sql("SELECT user, last(page) AS latest FROM page_visits GROUP BY user"),
        spark.sql("SELECT user, array_agg(v.page) FROM page_visits AS v GROUP BY user"),
        spark.sql("SELECT user, last(page) FROM (SELECT * FROM page_visits ORDER BY ts) GROUP BY user"),
        spark.sql("SELECT user, collect_list(page), collect_list(ts) FROM page_visits GROUP BY user"),
        spark.sql("SELECT user, first(`the page`) FROM page_visits GROUP BY user"),
    ]
"""


def test_the_fixed_sql_aggregates_keep_the_original_column_names(cluster_spark):
    outcome = fix_source("job.py", SQL_JOB, {"SPX101"}, unsafe=True)
    assert len(outcome.applied) == 6 and "AS `first(Page)`" in outcome.fixed and " AS latest" in outcome.fixed
    cluster_spark.createDataFrame(
        [("u1", 1, "home", "h"), ("u1", 2, "cart", "c"), ("u2", 1, "home", "h")],
        "user string, ts int, page string, `the page` string",
    ).createOrReplaceTempView("page_visits")
    original, rewritten = {}, {}
    exec(compile(SQL_JOB, "original", "exec"), original)
    exec(compile(outcome.fixed, "fixed", "exec"), rewritten)
    before, after = original["queries"](), rewritten["queries"]()
    assert [q.columns for q in after] == [q.columns for q in before]
    assert after[0].columns == ["user", "first(Page)"] and after[2].columns == ["user", "collect_list(page)"]
    assert {row["user"]: row["last(page)"] for row in after[3].collect()} == {"u1": "cart", "u2": "home"}
