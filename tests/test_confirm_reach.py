"""Which lines reach a finding for `pytest --sparkpar-confirm` (pytest_sparkpar.confirm.Targets): a
finding in a function Spark runs in Python workers is reached where the driver hands it over."""

from __future__ import annotations

from pathlib import Path

from pytest_sparkpar.confirm import Targets

UDF_JOB = """\
from pyspark.sql import functions as F

visits = {}


@F.udf("long")
def visit_number(user):
    visits[user] = visits.get(user, 0) + 1
    return visits[user]


def job(events):
    return events.withColumn("visit", visit_number("user")).groupBy("visit").count()
"""

RDD_JOB = """\
seen = {}


def numbered(code):
    seen[code] = seen.get(code, 0) + 1
    return (code, seen[code])


def helper(code):
    return numbered(code)


def job(spark, codes):
    return spark.sparkContext.parallelize(codes).map(numbered).collect()
"""


def _reaching(tmp_path: Path, source: str, rule: str) -> set[int]:
    path = tmp_path / "job.py"
    path.write_text(source)
    targets = Targets.lint([str(path)], tmp_path, None)
    (target,) = [t for t in targets.targets if t.rule == rule]
    return {line for line, held in targets.lines[str(path)].items() if target in held}


def test_a_udf_body_is_reached_where_the_udf_is_used(tmp_path):
    # Lines 7-9 are the function (its definition is a related location); 13 uses the UDF.
    assert _reaching(tmp_path, UDF_JOB, "SPX201") == {7, 8, 9, 13}


def test_a_function_handed_to_spark_is_reached_where_it_is_handed_over_not_where_it_is_called(tmp_path):
    # `numbered(code)` in `helper` runs the body on this side, where the tracer sees it itself.
    assert _reaching(tmp_path, RDD_JOB, "SPX201") == {4, 5, 6, 14}
