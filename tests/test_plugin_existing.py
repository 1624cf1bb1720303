"""Existing tests, unchanged: --sparkpar-determinism re-runs ordinary tests that use the `spark`
fixture under perturbed executions (real pytest in a subprocess, real Spark on local[2])."""

from __future__ import annotations

import re

import pytest
from test_plugin import outcomes, run_pytest

# Slow by design: the audit re-runs every Spark test of a project eight times, perturbed, in a
# pytest run of its own with its own Spark, after a run as written (about 36 s).
pytestmark = [pytest.mark.spark, pytest.mark.slow]

SEED = 11
RUNS = 8

ORDINARY_TESTS = """
from pathlib import Path

LOG = Path(__file__).with_name("calls.log")


def counts_per_key(df):
    return df.groupBy("k").count()


def test_reorder_bug(spark):
    df = spark.createDataFrame([(i % 5, i) for i in range(20)], "k int, v int")
    rows = counts_per_key(df).collect()
    # collect() after a groupBy has no defined order; this is the order the default
    # configuration (4 shuffle partitions, 4 input partitions) happens to give.
    assert [r.k for r in rows] == [2, 4, 0, 1, 3]


def test_builder_in_body():
    from pyspark.sql import SparkSession

    session = SparkSession.builder.getOrCreate()
    rows = counts_per_key(session.createDataFrame([(i % 5, i) for i in range(20)], "k int, v int")).collect()
    assert [r.k for r in rows] == [2, 4, 0, 1, 3]


def test_correct(spark):
    with LOG.open("a") as log:
        log.write("correct\\n")
    df = spark.createDataFrame([(i % 5, i) for i in range(20)], "k int, v int")
    assert sorted((r.k, r["count"]) for r in counts_per_key(df).collect()) == [(k, 4) for k in range(5)]


def test_writes_once(spark, tmp_path_factory):
    # Passes once; a second run in place would fail on the existing directory whatever the
    # configuration, so it is not an order-dependence finding.
    target = tmp_path_factory.getbasetemp() / "written"
    spark.range(3).write.mode("error").parquet(str(target))
    assert spark.read.parquet(str(target)).count() == 3


def test_never_spark():
    with LOG.open("a") as log:
        log.write("plain\\n")
    assert sum(range(5)) == 10
"""

# The project's own fixture with a hard-coded setting; the file runs after test_ordinary.py.
OWN_FIXTURE_TESTS = """
import pytest
from pyspark.sql import SparkSession


@pytest.fixture(scope="module")
def session():
    spark = SparkSession.builder.config("spark.sql.shuffle.partitions", "1").getOrCreate()
    yield spark
    spark.conf.set("spark.sql.shuffle.partitions", "4")


def test_own_fixture_reorder_bug(session):
    df = session.createDataFrame([(i % 5, i) for i in range(20)], "k int, v int")
    # One shuffle partition happens to hand the groups back in key order.
    assert [r.k for r in df.groupBy("k").count().collect()] == [0, 1, 2, 3, 4]
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    directory = tmp_path_factory.mktemp("existing")
    (directory / "test_ordinary.py").write_text(ORDINARY_TESTS)
    (directory / "test_own_fixture.py").write_text(OWN_FIXTURE_TESTS)
    plain = run_pytest(directory, "--sparkpar-master=local[2]")
    plain_log = (directory / "calls.log").read_text()
    (directory / "calls.log").unlink()
    checked = run_pytest(
        directory,
        "--sparkpar-determinism",
        "--sparkpar-master=local[2]",
        f"--sparkpar-seed={SEED}",
        f"--sparkpar-runs={RUNS}",
    )
    return plain, plain_log, checked, (directory / "calls.log").read_text()


def test_ordinary_tests_pass_as_written(runs):
    plain, plain_log, _, _ = runs
    assert outcomes(plain.stdout) == {
        "test_reorder_bug": "PASSED",
        "test_builder_in_body": "PASSED",
        "test_correct": "PASSED",
        "test_writes_once": "PASSED",
        "test_never_spark": "PASSED",
        "test_own_fixture_reorder_bug": "PASSED",
    }, plain.stdout[-4000:]
    assert plain_log.split() == ["correct", "plain"]


def test_reorder_bug_fails_under_determinism_and_the_correct_test_passes(runs):
    _, _, checked, _ = runs
    assert outcomes(checked.stdout) == {
        "test_reorder_bug": "FAILED",
        "test_builder_in_body": "FAILED",
        "test_correct": "PASSED",
        "test_writes_once": "PASSED",
        "test_never_spark": "PASSED",
        "test_own_fixture_reorder_bug": "FAILED",
    }, checked.stdout[-4000:]
    assert "sparkpar: not audited for order dependence: the test fails when run again in place" in checked.stdout


def test_report_names_perturbation_seed_replay_and_diff(runs):
    _, _, checked, _ = runs
    report = checked.stdout[checked.stdout.index("_ test_reorder_bug _") :]
    assert "test_ordinary.py::test_reorder_bug is order-dependent" in report, report
    assert re.search(
        r"── failing perturbation ─+\nspark.sql.shuffle.partitions=\d, spark.sql.adaptive.enabled=(true|false), "
        r"spark.sql.leafNodeDefaultParallelism=\d",
        report,
    ), report
    assert "assert [" in report and "== [2, 4, 0, 1, 3]" in report, report  # pytest's own assertion diff
    # The `spark` fixture's settings are the plugin's defaults, not the test's: nothing to list.
    own_section = report[: report.find("\n___", 1)]
    assert "overrides the test's own session settings" not in own_section, own_section
    assert f"seed: {SEED}" in report
    assert (
        f"pytest test_ordinary.py::test_reorder_bug --sparkpar-determinism --sparkpar-seed={SEED} --sparkpar-runs={RUNS}"
        in report
    )
    # the linter's findings on the test module (and project modules it imports) as the likely cause
    assert "── likely cause (sparkpar lint on the test and the project modules it imports)" in report, report
    assert "test_ordinary.py" in report.split("── likely cause")[1], report


def test_spark_tests_are_rerun_and_never_spark_tests_are_not(runs):
    # test_never_spark runs while a SparkSession is live, but runs no Spark job: not re-run.
    _, _, _, checked_log = runs
    calls = checked_log.split()
    assert calls.count("plain") == 1
    assert calls.count("correct") == 1 + RUNS


def test_project_fixture_is_audited_and_its_hard_coded_setting_overridden(runs):
    _, _, checked, _ = runs
    report = checked.stdout[checked.stdout.index("_ test_own_fixture_reorder_bug _") :]
    assert "test_own_fixture.py::test_own_fixture_reorder_bug is order-dependent" in report, report
    assert "(overrides the test's own session settings: spark.sql.shuffle.partitions=1" in report, report
