"""The suite's own grouping (tests/conftest.py) keeps the tests that share a module-scoped
fixture on one pytest-xdist worker, so the fixture (a pytest run in a subprocess, a server, a
wheel) is built once. Run through real pytest-xdist on two workers: when the grouping silently
stops working (as with pytest 9.2 and pytest-xdist 3.8), a module's tests spread over both."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

SUITE_CONFTEST = Path(__file__).parent / "conftest.py"

CONFTEST = f"""
import importlib.util

spec = importlib.util.spec_from_file_location("suite_conftest", {str(SUITE_CONFTEST)!r})
suite = importlib.util.module_from_spec(spec)
spec.loader.exec_module(suite)
pytest_collection_modifyitems = suite.pytest_collection_modifyitems
"""

SHARED = """
import time

import pytest


@pytest.fixture(scope="module")
def built():
    return object()


@pytest.mark.parametrize("i", range(6))
def test_uses_the_module_fixture(built, i):
    time.sleep(0.05)
"""

ALONE = """
import time

import pytest


@pytest.mark.parametrize("i", range(12))
def test_on_its_own(i):
    time.sleep(0.05)
"""


def test_tests_sharing_a_module_fixture_run_on_one_worker(tmp_path):
    (tmp_path / "conftest.py").write_text(CONFTEST)
    for name in ("test_shared_a.py", "test_shared_b.py"):
        (tmp_path / name).write_text(textwrap.dedent(SHARED))
    (tmp_path / "test_alone.py").write_text(textwrap.dedent(ALONE))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup", "-v"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    ran = re.findall(r"^\[(gw\d)\] \[\s*\d+%\] PASSED (test_\w+)\.py::", done.stdout, re.M)
    workers: dict[str, set[str]] = {}
    for worker, module in ran:
        workers.setdefault(module, set()).add(worker)
    assert sum(1 for _ in ran) == 24, done.stdout[-3000:]
    assert len(workers["test_shared_a"]) == 1 and len(workers["test_shared_b"]) == 1, workers
    assert workers["test_alone"] == {"gw0", "gw1"}, workers  # the others still spread


SLOW_SHARED = """
import time

import pytest

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def built():
    return object()


@pytest.mark.parametrize("i", range(2))
def test_slow_group(built, i, started):
    started("slow")
    time.sleep(0.05)
"""

STARTED = """
import pytest


@pytest.fixture
def started(request):
    def log(name):
        with open(request.config.rootpath / "started.log", "a") as out:
            out.write(name + "\\n")

    return log
"""


def test_the_slow_group_starts_first_whatever_the_group_sizes(tmp_path):
    # The suite's own addopts: pytest-xdist would otherwise hand out the groups with most tests
    # first, and a slow group of few tests last of them.
    addopts = tomllib.loads((SUITE_CONFTEST.parents[1] / "pyproject.toml").read_text())["tool"]["pytest"][
        "ini_options"
    ]["addopts"]
    (tmp_path / "pytest.ini").write_text(f"[pytest]\naddopts = {addopts}\nmarkers =\n    slow: slow\n")
    (tmp_path / "conftest.py").write_text(CONFTEST + STARTED)
    for name, tests in (("test_big_a.py", 6), ("test_big_b.py", 5)):
        shared = textwrap.dedent(SHARED).replace("range(6)", f"range({tests})")
        (tmp_path / name).write_text(shared.replace("built, i):", "built, i, started):\n    started('other')"))
    (tmp_path / "test_z_slow.py").write_text(textwrap.dedent(SLOW_SHARED))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    started = (tmp_path / "started.log").read_text().split()
    assert len(started) == 13 and "slow" in started[:2], started
