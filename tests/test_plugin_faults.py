"""`--sparkpar-faults`: an executor of the local-cluster is killed mid-stage during extra runs of
each check. A random-salt aggregation gives the same totals under every permuted interleaving,
so plain runs pass it; a lost executor makes Spark recompute its map outputs with new salts and
the totals change. The fixed twin (salt from the row) survives the same faults."""

from __future__ import annotations

import re

import pytest
from spark_servers import run_checks
from test_plugin import outcomes

pytestmark = [pytest.mark.spark, pytest.mark.slow]

CHECKS = """
from tests.plugin_jobs import bad_retry_salt, fixed_retry_salt


def test_random_salt(sparkpar):
    sparkpar.check(bad_retry_salt.job, bad_retry_salt.INPUTS)


def test_salt_from_the_row(sparkpar):
    rows = sparkpar.check(fixed_retry_salt.job, fixed_retry_salt.INPUTS)
    assert sorted((r.shop, r.rows) for r in rows) == [(shop, 100) for shop in range(20)]
"""

FAULT_RUNS = 4


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    return run_checks(
        tmp_path_factory.mktemp("faults"),
        CHECKS,
        "--sparkpar-faults",
        f"--sparkpar-fault-runs={FAULT_RUNS}",
        "--sparkpar-runs=2",
        "--sparkpar-seed=3",
    )


def test_fault_runs_catch_the_random_salt_and_pass_its_fix(checked):
    assert outcomes(checked.stdout) == {"test_random_salt": "FAILED", "test_salt_from_the_row": "PASSED"}, (
        checked.stdout[-6000:] + checked.stderr[-3000:]
    )


def test_report_blames_the_lost_executor_not_the_interleaving(checked):
    report = checked.stdout[checked.stdout.index("_ test_random_salt _") :]
    # Reported only after the plain permuted runs all matched, and confirmed by the same
    # interleaving re-run without the fault.
    assert (
        "an executor killed mid-stage (--sparkpar-faults) changed its output: Spark's retry recomputed rows "
        "differently; the same interleaving without the fault gives the sequential output"
    ) in report, report
    assert re.search(r"\nfault: executor process(es)? \d+( and \d+)? killed \(SIGKILL\) in stage \d+", report), report
    assert f"--sparkpar-faults --sparkpar-fault-runs={FAULT_RUNS}" in report  # the replay command keeps the mode
