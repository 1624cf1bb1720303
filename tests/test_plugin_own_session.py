"""Existing tests that build their own session with hard-coded settings (`master("local[1]")`,
`shuffle.partitions=1` in a conftest fixture): with --sparkpar-determinism the session runs on the
plugin's master instead, the perturbed runs vary `spark.default.parallelism` and the file split
size too, and the report says what was overridden. Also `--sparkpar-only` (tests that never use
Spark are deselected) and `--sparkpar-budget` (a per-test time limit on the re-runs). Real pytest
in subprocesses, real Spark on local[2] (the plugin's master here, for speed)."""

from __future__ import annotations

import re

import pytest
from test_plugin import outcomes, run_pytest

pytestmark = pytest.mark.spark

SEED = 5
RUNS = 8

CONFTEST = """
import pytest
from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def session():
    return SparkSession.builder.master("local[1]").config("spark.sql.shuffle.partitions", "1").getOrCreate()
"""

TESTS = """
import operator
import time
from pathlib import Path

from pyspark.sql import functions as F

LOG = Path(__file__).with_name("calls.log")


def test_runs_on(session):
    with LOG.open("a") as log:
        log.write(f"master={session.sparkContext.master} "
                  f"shuffle={session.conf.get('spark.sql.shuffle.partitions')} "
                  f"parallelism={session.sparkContext.defaultParallelism}\\n")


def test_groups_in_key_order(session):
    rows = session.createDataFrame([(i % 5, i) for i in range(20)], "k int, v int").groupBy("k").count().collect()
    # One shuffle partition happens to hand the groups back in key order.
    assert [r.k for r in rows] == [0, 1, 2, 3, 4]


def test_rdd_keys_in_order(session):
    pairs = session.sparkContext.parallelize([(i % 5, i) for i in range(20)])
    # reduceByKey without a partition count uses spark.default.parallelism (1 on local[1]).
    assert [k for k, _ in pairs.reduceByKey(operator.add).collect()] == [0, 1, 2, 3, 4]


def test_row_numbers_from_a_file(session, tmp_path):
    path = tmp_path / "events.csv"
    path.write_text("".join(f"{i},{i * 7}\\n" for i in range(3000)))
    rows = session.read.csv(str(path), schema="id int, v int").withColumn("n", F.monotonically_increasing_id())
    # A small file is one input partition, so the ids happen to be 0, 1, 2, ...
    assert [r.n for r in rows.collect()] == list(range(3000))


def test_sorted_output(session, tmp_path):
    path = tmp_path / "events.csv"
    path.write_text("".join(f"{i % 7},{i}\\n" for i in range(300)))
    df = session.read.csv(str(path), schema="k int, v int")
    assert [r.k for r in df.groupBy("k").count().orderBy("k").collect()] == list(range(7))


def test_slow(session):
    session.range(3).count()
    time.sleep(1)


def test_never_spark():
    with LOG.open("a") as log:
        log.write("plain\\n")
"""

ORDER_DEPENDENT = ("test_groups_in_key_order", "test_rdd_keys_in_order", "test_row_numbers_from_a_file")


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    directory = tmp_path_factory.mktemp("own_session")
    (directory / "conftest.py").write_text(CONFTEST)
    (directory / "test_project.py").write_text(TESTS)
    return directory


def take_log(directory) -> list[str]:
    log = directory / "calls.log"
    lines = log.read_text().splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    return lines


@pytest.fixture(scope="module")
def plain(project):
    result = run_pytest(project, "-k", "not slow")
    return result, take_log(project)


@pytest.fixture(scope="module")
def audited(project, plain):
    result = run_pytest(
        project,
        "-k",
        "not slow",
        "--sparkpar-determinism",
        "--sparkpar-only",
        "--sparkpar-master=local[2]",
        f"--sparkpar-seed={SEED}",
        f"--sparkpar-runs={RUNS}",
    )
    return result, take_log(project)


def test_as_written_every_test_passes_on_its_own_local1_session(plain):
    result, log = plain
    assert set(outcomes(result.stdout).values()) == {"PASSED"}, result.stdout[-4000:]
    assert len(outcomes(result.stdout)) == 6
    assert "master=local[1] shuffle=1 parallelism=1" in log and "plain" in log, log


def test_perturbed_runs_fail_the_order_dependent_tests_only(audited):
    result, _ = audited
    assert outcomes(result.stdout) == {
        "test_runs_on": "PASSED",
        "test_groups_in_key_order": "FAILED",
        "test_rdd_keys_in_order": "FAILED",
        "test_row_numbers_from_a_file": "FAILED",
        "test_sorted_output": "PASSED",
    }, result.stdout[-6000:] + result.stderr[-2000:]


def test_the_session_runs_on_the_plugins_master_with_the_tests_own_settings(audited):
    _, log = audited
    # The run as written: the builder's local[1] is replaced, its shuffle.partitions=1 and the
    # parallelism of local[1] are kept (re-runs of test_runs_on log their perturbation's values).
    assert log[0] == "master=local[2] shuffle=1 parallelism=1", log


def test_sparkpar_only_deselects_tests_that_never_use_spark(audited):
    result, log = audited
    assert "plain" not in log
    assert re.search(r"\b2 deselected\b", result.stdout), result.stdout[-2000:]  # and test_slow, by -k
    assert "test_never_spark" not in outcomes(result.stdout)


def report_of(stdout: str, test: str) -> str:
    start = stdout.index(f"_ {test} _")
    end = stdout.find("\n___", start + 1)
    return stdout[start : end if end != -1 else None]


def test_report_says_what_was_overridden(audited):
    result, _ = audited
    report = report_of(result.stdout, "test_groups_in_key_order")
    assert "test_project.py::test_groups_in_key_order is order-dependent" in report, report
    overrides = re.search(r"\(overrides the test's own session settings: (.*)\)", report)
    assert overrides, report
    assert "spark.sql.shuffle.partitions=1" in overrides.group(1), report
    assert "master local[1] -> local[2]" in overrides.group(1), report


def test_default_parallelism_and_split_size_are_what_broke(audited):
    result, _ = audited
    # Only spark.default.parallelism moves an RDD reduceByKey's partitions; only the split size
    # cuts a 27 KB file into several input partitions (every other conf keeps it whole).
    rdd = report_of(result.stdout, "test_rdd_keys_in_order")
    parallelism = re.search(r"spark\.default\.parallelism=(\d+)", rdd)
    assert parallelism and int(parallelism.group(1)) in (2, 3, 4), rdd
    files = report_of(result.stdout, "test_row_numbers_from_a_file")
    split = re.search(r"spark\.sql\.files\.maxPartitionBytes=(\w+)", files)
    assert split and split.group(1) in ("2k", "16k"), files


SLOW_CHECK = """
import time


def slow_totals(df):
    time.sleep(1.5)  # every run, permuted or not, costs at least this
    return df.groupBy("k").sum("v")


def test_slow_check(sparkpar):
    sparkpar.check(slow_totals, {"df": [(i % 3, i) for i in range(30)]}, schema="k int, v int")
"""


@pytest.fixture(scope="module")
def budgeted(tmp_path_factory):
    """Both budget scenarios in one pytest run (one Spark start): an existing test's re-runs and a
    check's permuted runs, each cut short by the same --sparkpar-budget."""
    directory = tmp_path_factory.mktemp("budget")
    (directory / "conftest.py").write_text(CONFTEST)
    (directory / "test_project.py").write_text(TESTS)
    (directory / "test_check.py").write_text(SLOW_CHECK)
    return run_pytest(
        directory,
        "-k",
        "slow",
        "--sparkpar-determinism",
        "--sparkpar-master=local[2]",
        f"--sparkpar-runs={RUNS}",
        "--sparkpar-budget=2.5",
    )


def test_budget_runs_only_the_slow_tests(budgeted):
    assert outcomes(budgeted.stdout) == {"test_slow": "PASSED", "test_slow_check": "PASSED"}, budgeted.stdout[-3000:]
    assert "at most 2.5 s of re-runs per existing test" in budgeted.stdout


def test_budget_stops_the_re_runs_of_a_slow_test(budgeted):
    # Each re-run sleeps 1 s, so 8 cannot fit in 2.5 s; at least one starts.
    ran = re.search(
        rf"sparkpar: (\d) of {RUNS} perturbed runs fitted in the --sparkpar-budget of 2.5 s", budgeted.stdout
    )
    assert ran and 1 <= int(ran.group(1)) < RUNS, budgeted.stdout[-3000:]


def test_budget_stops_the_permuted_runs_of_a_slow_check(budgeted):
    # Each run sleeps 1.5 s and at most one per thread is in flight, so 8 cannot fit in 2.5 s.
    ran = re.search(
        rf"sparkpar: (\d) of {RUNS} permuted runs fitted in the --sparkpar-budget of 2.5 s", budgeted.stdout
    )
    assert ran and 1 <= int(ran.group(1)) < RUNS, budgeted.stdout[-3000:]
