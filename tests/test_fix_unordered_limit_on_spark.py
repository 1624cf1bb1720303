"""On Spark: SPX106's deterministic pick gives one answer under every partitioning, and it is the
pick the fix names: the first keys in order, with the counts the job computes (worked out here
in Python from the fixture's rows, not by Spark)."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
sys.path.insert(0, str(Path(__file__).parent))
from spark_harness import load_job, run  # noqa: E402
from sparkpar_lint.fixes.engine import fix_source  # noqa: E402

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _first_keys(keys, n: int) -> list[tuple]:
    return sorted(Counter(keys).items())[:n]


def _pages(module) -> list[tuple]:
    return _first_keys((row["page"] for row in module.INPUTS["views"]), 10)


def _codes(module) -> list[tuple]:
    return _first_keys((row["code"] for row in module.INPUTS["log_lines"]), 5)


CASES = {
    "spx106/bad_top_pages.py": ('.orderBy("page").limit(10)', _pages),
    "sql/bad_top_pages_sql.py": ("ORDER BY page\n", _pages),
    "spx106/bad_sample_error_codes.py": ("takeOrdered(5, key=lambda pair: (pair[0] is not None, pair[0]))", _codes),
}


@pytest.mark.spark
@pytest.mark.parametrize("name", list(CASES))
def test_the_fixed_pick_is_the_first_keys_under_every_partitioning(cluster_spark, name: str, tmp_path: Path):
    path = FIXTURES / name
    outcome = fix_source(str(path), path.read_text("utf-8"), {"SPX106"}, unsafe=True)
    written, expected = CASES[name]
    assert written in outcome.fixed
    fixed = tmp_path / path.name
    fixed.write_text(outcome.fixed, "utf-8")
    job = load_job(fixed)
    answers = [run(cluster_spark, job, seed) for seed in (None, 0, 1, 2, 3)]
    assert all(answer == answers[0] for answer in answers)
    assert sorted(answers[0]) == expected(job)


DISTINCT_PICK = (
    "from pyspark.sql import functions as F\n\n\n"
    "def some_users(spark, path):\n"
    '    return spark.read.parquet(path).select("user_id").distinct().limit(3)\n'
)


@pytest.mark.spark
def test_the_fixed_pick_after_distinct_still_removes_duplicates(cluster_spark, tmp_path: Path):
    outcome = fix_source("job.py", DISTINCT_PICK, {"SPX106"}, unsafe=True)
    assert outcome.changed
    namespace: dict = {}
    exec(compile(outcome.fixed, "job.py", "exec"), namespace)
    rows = [(user, visit) for user in ("a", "b", "c", "d", "e") for visit in range(4)]
    answers = []
    for n in (1, 3, 7):
        path = str(tmp_path / f"events{n}")
        cluster_spark.createDataFrame(rows, ["user_id", "visit"]).repartition(n).write.parquet(path)
        answers.append([row.user_id for row in namespace["some_users"](cluster_spark, path).collect()])
    assert answers[0] == ["a", "b", "c"]  # three distinct users, the first in the whole row's order
    assert all(answer == answers[0] for answer in answers)
