"""The plugin next to the pytest plugins Spark projects already run: pytest-xdist (one seed for
every worker, failures reported by the controller) and pytest-spark (its `spark_session` fixture
and `spark_options`), each through real pytest with the real packages."""

from __future__ import annotations

import re

import pytest

pytest_plugins = ["pytester"]

# Each test records the seed its worker would replay with; four tests spread over two workers.
SEED_RECORDER = """
import pytest


@pytest.mark.parametrize("n", range(4))
def test_seed(sparkpar, worker_id, n, tmp_path_factory):
    record = tmp_path_factory.getbasetemp().parent.parent / f"seed-{worker_id}-{n}"
    record.write_text(str(sparkpar.settings.seed))
"""


def _header_seed(output: str) -> int:
    return int(re.search(r"^sparkpar: determinism .*, seed (\d+), master ", output, re.M).group(1))


@pytest.mark.parametrize("given", [None, 1234])
def test_xdist_workers_share_the_controllers_seed(pytester, given):
    pytester.makepyfile(test_seeds=SEED_RECORDER)
    args = ["-p", "xdist", "-n", "2", f"--basetemp={pytester.path / 'tmp'}"]
    if given is not None:
        args.append(f"--sparkpar-seed={given}")
    result = pytester.runpytest_subprocess(*args)
    result.assert_outcomes(passed=4)
    seed = _header_seed(result.stdout.str())
    assert given is None or seed == given
    records = sorted(pytester.path.glob("seed-*"))
    assert {r.name.split("-")[1] for r in records} == {"gw0", "gw1"}, records
    assert {int(r.read_text()) for r in records} == {seed}


ORDER_BUG = """
def test_reorder_bug(spark):
    df = spark.createDataFrame([(i % 5, i) for i in range(20)], "k int, v int")
    # collect() after a groupBy has no defined order; local[2] with 4 partitions gives this one.
    assert [r.k for r in df.groupBy("k").count().collect()] == [2, 4, 0, 1, 3]


def test_plain():
    assert sum(range(5)) == 10
"""


@pytest.mark.spark
def test_xdist_worker_failure_reaches_the_controller_with_the_shared_seed(pytester):
    pytester.makepyfile(test_jobs=ORDER_BUG)
    result = pytester.runpytest_subprocess(
        "-p", "xdist", "-n", "2", "--sparkpar-determinism", "--sparkpar-master=local[2]", "--sparkpar-runs=8"
    )
    result.assert_outcomes(passed=1, failed=1)
    output = result.stdout.str()
    assert "test_jobs.py::test_reorder_bug is order-dependent" in output, output[-4000:]
    # The replay command printed by the controller carries the seed the worker ran with.
    assert f"--sparkpar-seed={_header_seed(output)}" in output, output[-4000:]


# pytest-spark's session fixture, configured through `spark_options` in the ini file (its default
# Hive catalog would put a Derby metastore in the test directory; in-memory keeps it light).
PYTEST_SPARK_INI = """
[pytest]
spark_options =
    spark.master: local[1]
    spark.sql.shuffle.partitions: 1
    spark.sql.session.timeZone: Pacific/Auckland
    spark.sql.catalogImplementation: in-memory
"""
PYTEST_SPARK_TESTS = """
def test_options_reach_the_session(spark_session):
    assert spark_session.conf.get("spark.sql.session.timeZone") == "Pacific/Auckland"


def test_reorder_bug(spark_session):
    df = spark_session.createDataFrame([(i % 5, i) for i in range(20)], "k int, v int")
    # One shuffle partition happens to hand the groups back in key order.
    assert [r.k for r in df.groupBy("k").count().collect()] == [0, 1, 2, 3, 4]


def test_correct(spark_session):
    df = spark_session.createDataFrame([(i % 5, i) for i in range(20)], "k int, v int")
    assert sorted(r["count"] for r in df.groupBy("k").count().collect()) == [4] * 5
"""


# Slow by design: each is a pytest run of its own with pytest-spark and its own Spark (about 17 s).
@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("determinism", [False, True])
def test_pytest_spark_session_is_audited_and_keeps_its_options(pytester, determinism):
    pytester.makeini(PYTEST_SPARK_INI)
    pytester.makepyfile(test_pytest_spark=PYTEST_SPARK_TESTS)
    args = ["-rA"]  # pytest-spark loads itself through its entry point
    if determinism:
        args += ["--sparkpar-determinism", "--sparkpar-master=local[2]", "--sparkpar-runs=8"]
    result = pytester.runpytest_subprocess(*args)
    output = result.stdout.str()
    assert "Spark will be initialized with options:" in output, output[-4000:]
    if not determinism:
        result.assert_outcomes(passed=3)
        return
    # The session pytest-spark built is the one re-run under perturbation; its own options
    # (the time zone) still hold there, and its hard-coded shuffle.partitions=1 no longer hides the bug.
    result.assert_outcomes(passed=2, failed=1)
    assert "test_pytest_spark.py::test_reorder_bug is order-dependent" in output, output[-4000:]
