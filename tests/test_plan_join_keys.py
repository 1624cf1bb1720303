"""Join keys for the planner: `on` names, SQL conditions in `F.expr`, and Column conditions."""

from __future__ import annotations

import json
import subprocess
import sys

import libcst as cst
import pytest

from sparkpar_lint.plan.join_keys import join_keys


def _keys(code: str) -> tuple[str, ...]:
    call = cst.parse_expression(code)
    assert isinstance(call, cst.Call)
    return join_keys(call)


@pytest.mark.parametrize(
    ("code", "keys"),
    [
        ('a.join(b, "id")', ("id",)),
        ('a.join(b, ["id", "ad"], "left")', ("id", "ad")),
        ('a.join(b, on=("id",), how="inner")', ("id",)),
        ('a.join(b, F.expr("a.id = b.id AND a.ad <=> b.ad AND a.ts > b.ts"))', ("id", "ad")),
        ('a.join(b, expr("(x.id = y.id) and x.v > 3"), "left")', ("id",)),
        ('a.join(b, F.col("a.id") == F.col("b.id"))', ("id",)),
        ('a.join(b, (a["id"] == b["id"]) & (a.ad == b.ad) & (a.v > 3))', ("id", "ad")),
        ("a.join(b, a.id.eqNullSafe(b.id))", ("id",)),
        ('a.join(b, on=a.id == b.id, how="left")', ("id",)),
    ],
)
def test_join_keys_are_read_from_names_and_conditions(code, keys):
    assert _keys(code) == keys


@pytest.mark.parametrize(
    "code",
    [
        "a.join(b)",  # a cross join
        'a.join(b, F.expr("a.uid = b.user_id"))',  # different names: no single repartition key
        'a.join(b, F.expr("a.id = b.id OR a.ad = b.ad"))',  # not an equi-join
        'a.join(b, F.expr("a.id > b.id"))',
        'a.join(b, F.expr("a.id = = b.id"))',  # not SQL: nothing read, no error
        "a.join(b, (a.id == b.id) | (a.ad == b.ad))",
        "a.join(b, cond)",  # a condition built elsewhere
        "a.join(b, F.expr(text))",
    ],
)
def test_joins_without_a_readable_shared_key_have_none(code):
    assert _keys(code) == ()


JOB = """from pyspark.sql import functions as F


def job(spark, data):
    a = spark.read.parquet(data["a"]).alias("a")
    b = spark.read.parquet(data["b"]).alias("b")
    joined = a.join(b, F.expr("a.id = b.id"))
    return joined.groupBy("user").count()
"""


def test_plan_no_longer_calls_an_expr_join_unknown_state(tmp_path):
    job = tmp_path / "job.py"
    job.write_text(JOB, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", "from sparkpar_lint.cli import main; main()", "plan", str(job), "--format", "json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    (join,) = [r for r in report["regions"] if "join:7" in r["operators"]]
    # The join is keyed now; what keeps it serial is its selectivity (a join can multiply rows).
    assert join["state"] == "partitioned"
    assert "unknown or non-partitioned state" not in join["serial_reason"]
    assert "selectivity may exceed one" in join["serial_reason"]
