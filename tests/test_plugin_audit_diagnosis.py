"""The audit of existing tests says why a perturbed run failed, reads unittest outcomes the way
pytest does, and prints what it cost even with -q (real pytest in a subprocess, real Spark on
local[2])."""

from __future__ import annotations

import re

import pytest
from test_plugin import outcomes, run_pytest

pytestmark = pytest.mark.spark

RUNS = 4

# Each test compares with what its first run as written saw (kept in a file beside it), so it
# passes as written whatever order this machine's Spark happens to give.
SUITE = """
import json
import unittest
from pathlib import Path

from pyspark.sql import SparkSession, functions as F

HERE = Path(__file__).parent


def first_seen(name, value):
    path = HERE / f"{name}.json"
    if not path.exists():
        path.write_text(json.dumps(value))
    return json.loads(path.read_text())


class GroupedCounts(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.spark = SparkSession.builder.getOrCreate()

    def test_keys_in_arrival_order(self):
        df = self.spark.createDataFrame([(i % 7, i) for i in range(70)], "k int, v int")
        keys = [r.k for r in df.groupBy("k").count().collect()]
        self.assertEqual(keys, first_seen("keys", keys))

    def test_broken_as_written(self):
        with (HERE / "calls.log").open("a") as log:
            log.write("broken\\n")
        self.spark.range(3).count()
        self.fail("this test fails on every run")


def test_ids_of_rows(spark):
    df = spark.createDataFrame([(i,) for i in range(40)], "v int")
    ids = sorted(r.id for r in df.withColumn("id", F.monotonically_increasing_id()).collect())
    assert ids == first_seen("ids", ids)


def test_rdd_keys_taken_in_arrival_order(spark):
    counts = spark.sparkContext.parallelize([(i % 7, 1) for i in range(70)]).reduceByKey(lambda a, b: a + b)
    keys = [key for key, _ in counts.take(10)]  # all seven keys, in the order the shuffle left them
    assert keys == first_seen("rdd_keys", keys)
"""


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    directory = tmp_path_factory.mktemp("diagnosis")
    (directory / "test_suite.py").write_text(SUITE)
    return run_pytest(
        directory,
        "-q",
        "--sparkpar-determinism",
        "--sparkpar-master=local[2]",
        "--sparkpar-seed=5",
        f"--sparkpar-runs={RUNS}",
    ), directory


def _report(stdout: str, name: str) -> str:
    start = stdout.index(f"_ {name} _")
    end = stdout.find("\n___", start + 1)
    return stdout[start : end if end > 0 else None]


def test_unittest_outcomes_are_read_as_pytest_reads_them(audited):
    result, directory = audited
    assert outcomes(result.stdout) == {
        "test_keys_in_arrival_order": "FAILED",
        "test_broken_as_written": "FAILED",
        "test_ids_of_rows": "FAILED",
        "test_rdd_keys_taken_in_arrival_order": "FAILED",
    }, result.stdout[-4000:]
    # A TestCase failure is recorded on the item, not raised: the audit must see it and not re-run.
    assert (directory / "calls.log").read_text().split() == ["broken"]
    assert "this test fails on every run" in _report(result.stdout, "GroupedCounts.test_broken_as_written")


def test_rows_in_another_order_are_the_tests_own_order_dependence(audited):
    result, _ = audited
    report = _report(result.stdout, "GroupedCounts.test_keys_in_arrival_order")
    assert "test_keys_in_arrival_order is order-dependent, in the test rather than the job" in report, report
    assert "── diagnosis" in report and "the test, not the job, depends on row order" in report, report
    assert "ignore_row_order=True" in report and "sorted(df.collect())" in report, report


def test_rows_an_rdd_take_returned_in_another_order_are_the_tests_own_too(audited):
    result, _ = audited
    report = _report(result.stdout, "test_rdd_keys_taken_in_arrival_order")
    assert "is order-dependent, in the test rather than the job" in report, report
    assert "the test, not the job, depends on row order" in report, report


def test_other_rows_are_the_jobs_order_dependence(audited):
    result, _ = audited
    report = _report(result.stdout, "test_ids_of_rows")
    assert "test_ids_of_rows is order-dependent: it passes as written" in report, report
    assert "the job's output changed: collect() #1 returned rows the run as written did not return" in report, report


def test_summary_line_with_quiet_output(audited):
    result, _ = audited
    line = re.search(
        r"^sparkpar: audited (\d+) existing Spark tests with (\d+) perturbed runs in [\d.]+ s \(seed 5\): "
        r"(\d+) order-dependent or not retry-safe$",
        result.stdout,
        re.M,
    )
    assert line, result.stdout[-3000:]
    tests, runs, failed = map(int, line.groups())
    # The broken test is not audited; each of the other three stops at its first failing run.
    assert (tests, failed) == (3, 3) and 3 <= runs <= 3 * RUNS, line.group(0)


EXPECTS_FAILURE = """
from pathlib import Path

import pytest

ATTEMPTS = Path(__file__).with_name("attempts.log")


def fail(row):
    with ATTEMPTS.open("a") as log:
        log.write("attempt\\n")
    raise ValueError("bad row")


def test_bad_rows_fail_the_job(spark):
    with pytest.raises(Exception, match="bad row"):
        spark.range(1).rdd.map(fail).count()
"""


def test_a_job_expected_to_fail_is_not_retried_on_a_cluster_master(tmp_path):
    # local-cluster tries a failing task spark.task.maxFailures (4) times by default; the plugin's
    # session tries it once, as local[N] does, so each run of the test costs one attempt.
    (tmp_path / "test_expects_failure.py").write_text(EXPECTS_FAILURE)
    result = run_pytest(tmp_path, "--sparkpar-determinism", "--sparkpar-seed=3", "--sparkpar-runs=2")
    assert outcomes(result.stdout) == {"test_bad_rows_fail_the_job": "PASSED"}, result.stdout[-3000:]
    assert "local-cluster" in result.stdout, result.stdout[:2000]
    # the run as written and its two perturbed runs
    assert (tmp_path / "attempts.log").read_text().split() == ["attempt"] * 3
