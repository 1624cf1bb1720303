"""The pytest plugin, through real pytest runs in subprocesses (Spark's JVM is per process).

Starting Spark dominates the cost (local[2] ~6 s, local-cluster 15–60 s on a busy 2-core box), so
the scenarios share one test file run twice: once with --sparkpar-determinism, once without.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# Every test here starts Spark in a pytest subprocess.
pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[1]
SEED = 4242
RUNS = 6

SCENARIOS = """
import operator

import pytest
from hypothesis import strategies as st

from tests.plugin_jobs import (
    bad_first_after_orderby, bad_stream_dedup, fixed_first_after_orderby, fixed_stream_dedup,
)


def check_module(sparkpar, module):
    return sparkpar.check(
        module.job, module.INPUTS, output=getattr(module, "OUTPUT", None),
        streaming=getattr(module, "STREAMING", False),
        output_mode=getattr(module, "OUTPUT_MODE", "append"),
    )


def test_bad_batch(sparkpar):
    rows = check_module(sparkpar, bad_first_after_orderby)
    assert len(rows) == 7


def test_fixed_batch(sparkpar):
    rows = check_module(sparkpar, fixed_first_after_orderby)
    assert sorted(r.k for r in rows) == list(range(7))


def test_bad_streaming(sparkpar):
    check_module(sparkpar, bad_stream_dedup)


def test_fixed_streaming(sparkpar):
    rows = check_module(sparkpar, fixed_stream_dedup)
    assert len(rows) == 6


def test_strategy_input_fixed_job(sparkpar):
    rows = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 1000), st.integers(0, 9)), min_size=1, max_size=30)
    sparkpar.check(fixed_first_after_orderby.job, {"df": rows}, schema="k int, ts int, v int")


def test_job_raises(sparkpar):
    def broken(df):
        raise ValueError("the job's own error")

    sparkpar.check(broken, {"df": [(1, 2)]}, schema="a int, b int")


def test_spark_fixture(spark):
    assert spark.range(3).count() == 3
    # The plugin's local JVMs, driver and executors, run the quick JIT tier only, and the Python
    # workers come from its daemon, where a worker freezes what survived its last task.
    driver = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    assert "-XX:TieredStopAtLevel=1" in list(driver.getInputArguments())

    def worker_facts(_):
        # a Python worker is forked by its executor's daemon, which that executor's JVM started
        import gc
        import os

        def parent(pid):
            with open(f"/proc/{pid}/stat") as stat:
                ppid = stat.read().rsplit(")", 1)[1].split()[1]
            with open(f"/proc/{ppid}/cmdline") as cmdline:
                return ppid, cmdline.read().split("\\0")

        daemon, daemon_arguments = parent(os.getpid())
        return daemon_arguments, parent(daemon)[1], gc.get_freeze_count()

    facts = spark.sparkContext.parallelize(range(4), 4).map(worker_facts).collect()
    assert all("pytest_sparkpar.worker_daemon" in daemon for daemon, _, _ in facts), facts
    assert all("-XX:TieredStopAtLevel=1" in jvm for _, jvm, _ in facts), facts
    assert any(frozen > 0 for _, _, frozen in facts), facts  # the session's start ran tasks


def test_combiner_subtraction(sparkpar):
    sparkpar.check_combiner(lambda a, b: a - b, values=st.integers())


def test_combiner_addition(sparkpar):
    sparkpar.check_combiner(operator.add, values=st.integers())
"""

# The installed sparkpar_lint is imported before the checkout goes first on the path (for
# tests.plugin_jobs): the checkout's copy has no packaged rule data.
CONFTEST = f"""
import sys

import sparkpar_lint

sys.path.insert(0, {str(ROOT)!r})
"""


def run_pytest(directory: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", *args]
    return subprocess.run(
        command, cwd=directory, capture_output=True, text=True, timeout=1500, env=dict(os.environ, **(env or {}))
    )


def outcomes(stdout: str) -> dict[str, str]:
    return {name: status for status, name in re.findall(r"^(PASSED|FAILED|ERROR) \S*::(\w+)", stdout, re.M)}


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("sparkpar_plugin")
    (directory / "conftest.py").write_text(CONFTEST)
    (directory / "test_scenarios.py").write_text(textwrap.dedent(SCENARIOS))
    return directory


@pytest.fixture(scope="module")
def with_determinism(project) -> subprocess.CompletedProcess:
    return run_pytest(
        project,
        "--sparkpar-determinism",
        f"--sparkpar-seed={SEED}",
        f"--sparkpar-runs={RUNS}",
        # The budget covers the whole shrink. On a loaded machine it fits the first cut (a
        # sequential run and up to six interleavings of the first 1/16 of the rows) and
        # some of hypothesis making a small input smaller, two Spark jobs a candidate.
        "--sparkpar-shrink-seconds=8",
    )


@pytest.fixture(scope="module")
def without_determinism(project) -> subprocess.CompletedProcess:
    return run_pytest(project, f"--sparkpar-seed={SEED}")


def test_determinism_run_fails_exactly_the_bad_jobs(with_determinism):
    assert outcomes(with_determinism.stdout) == {
        "test_bad_batch": "FAILED",
        "test_fixed_batch": "PASSED",
        "test_bad_streaming": "FAILED",
        "test_fixed_streaming": "PASSED",
        "test_strategy_input_fixed_job": "PASSED",
        "test_job_raises": "FAILED",
        "test_spark_fixture": "PASSED",
        "test_combiner_subtraction": "FAILED",
        "test_combiner_addition": "PASSED",
    }, with_determinism.stdout[-6000:] + with_determinism.stderr[-3000:]


def test_header_shows_seed_and_master(with_determinism, without_determinism):
    assert (
        f"sparkpar: determinism on, {RUNS} runs per check, seed {SEED}, master local-cluster[2,1,1024]"
        in with_determinism.stdout
    )
    assert (
        f"sparkpar: determinism off (sequential runs only), seed {SEED}, master local[2]" in without_determinism.stdout
    )


def failure_section(stdout: str, test: str) -> str:
    start = stdout.index(f"_ {test} _")
    end = stdout.find("\n___", start + 1)
    return stdout[start : end if end != -1 else None]


def test_report_has_outputs_interleaving_replay_and_cause(with_determinism):
    report = failure_section(with_determinism.stdout, "test_bad_batch")
    for expected in (
        "sequential output vs permuted output",
        "── interleaving",
        "spark.sql.shuffle.partitions=",
        f"seed: {SEED}",
        f"pytest test_scenarios.py::test_bad_batch --sparkpar-determinism --sparkpar-seed={SEED} --sparkpar-runs={RUNS}",
        "── input (minimal, shrunk by hypothesis)",
        "rows (shrunk from 300)",
    ):
        assert expected in report, report
    # The plugin's own frames are not the story: no traceback into pytest_sparkpar.
    assert "pytest_sparkpar/check.py" not in report
    if "likely cause" in report:  # only when the analyzer imports and runs
        assert "bad_first_after_orderby.py:11" in report


def test_streaming_report_shows_micro_batches(with_determinism):
    report = failure_section(with_determinism.stdout, "test_bad_streaming")
    assert "micro-batch" in report, report


def test_job_error_is_the_jobs_own(with_determinism):
    report = failure_section(with_determinism.stdout, "test_job_raises")
    assert "ValueError: the job's own error" in report
    assert 'raise ValueError("the job\'s own error")' in report


def test_combiner_counterexample_is_minimal(with_determinism):
    report = failure_section(with_determinism.stdout, "test_combiner_subtraction")
    assert "breaks associativity" in report or "breaks commutativity" in report, report
    assert "minimal counterexample" in report and f"seed: {SEED}" in report


def test_without_determinism_only_sequential_runs(without_determinism):
    result = outcomes(without_determinism.stdout)
    failed = sorted(name for name, status in result.items() if status != "PASSED")
    assert failed == ["test_combiner_subtraction", "test_job_raises"], without_determinism.stdout[-6000:]


def test_replay_with_the_reported_seed_reproduces(project, with_determinism):
    report = failure_section(with_determinism.stdout, "test_bad_batch")
    command = re.search(r"^pytest (test_scenarios.py::test_bad_batch .*)$", report, re.M).group(1).split()
    replay = run_pytest(project, *command, "--sparkpar-shrink-seconds=0")
    assert outcomes(replay.stdout) == {"test_bad_batch": "FAILED"}, replay.stdout[-4000:]
    assert f"seed: {SEED}" in replay.stdout
