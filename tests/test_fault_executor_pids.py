"""The fault injector kills only its own application's executors. Two local-clusters started in
the same second share an application id (`app-<second>-0000`), so the executors are told apart by
the port in their `--driver-url`. Real processes stand in for the executor JVMs: /proc is read as
the injector reads it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pytest_sparkpar.faults import EXECUTOR_MAIN, executor_pids

# The second in the id is this process's pid: two runs of these tests at once (two xdist workers,
# two checkouts on one machine) would otherwise start look-alike executors each finds as its own.
APP = f"app-{os.getpid():014d}-0000"


def _executor_like(port: int) -> subprocess.Popen:
    """A process whose command line has an executor's main class and options (and waits).
    Returns once the child has written a line: until its exec is done, /proc shows the parent's
    command line, and the injector would rightly not see an executor there."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; print(flush=True); sys.stdin.read()",
            EXECUTOR_MAIN.decode(),
            "--driver-url",
            f"spark://CoarseGrainedScheduler@127.0.0.1:{port}",
            "--executor-id",
            "0",
            "--app-id",
            APP,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    process.stdout.readline()
    return process


@pytest.fixture
def two_applications():
    ours, theirs = _executor_like(41001), _executor_like(42002)
    yield ours, theirs
    for process in (ours, theirs):
        process.stdin.close()
        process.wait(timeout=10)
        process.stdout.close()


def test_executors_of_another_driver_with_the_same_application_id_are_not_ours(two_applications):
    ours, theirs = two_applications
    assert executor_pids(APP, "41001") == [ours.pid]
    assert executor_pids(APP, "42002") == [theirs.pid]


def test_a_port_that_only_ends_like_ours_is_another_driver(two_applications):
    assert executor_pids(APP, "1001") == []
    assert executor_pids(APP.replace("-0000", "-0001"), "41001") == []
