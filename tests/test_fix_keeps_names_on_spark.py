"""SPX101's fixes keep the names Spark gives unnamed aggregates: run on Spark, the fixed job's
columns are the original's (`last(page)`, `first(ts)`, `collect_list(page)`), so later code that
reads them by name, `show()` and written schemas see no change."""

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
