"""Directed audit, end to end: `pytest --sparkpar-confirm` re-runs only the tests that execute a
lint finding, writes a verdict for every finding, and `sparkpar lint --verdicts` shows them (real
pytest in a subprocess, real Spark on the plugin's local-cluster, the real CLI)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_plugin import outcomes, run_pytest

pytestmark = pytest.mark.spark
pytest_plugins = ["pytester"]

RUNS = 4

JOBS = """
from pyspark.sql import functions as F


def numbered(readings):
    return readings.withColumn("row_id", F.monotonically_increasing_id())


def latest_reading(readings):
    return readings.orderBy("ts").groupBy("sensor").agg(F.last("value").alias("value"))


def total_per_sensor(readings):
    return readings.groupBy("sensor").agg(F.sum("value").alias("total"))


def first_seen_page(visits):
    return visits.orderBy("ts").groupBy("user").agg(F.first("page").alias("page"))
"""

# Each test compares with what its first run as written saw, so it passes as written.
TESTS = """
import json
from pathlib import Path

from jobs.daily import latest_reading, numbered, total_per_sensor

HERE = Path(__file__).parent


def first_seen(name, value):
    path = HERE / f"{name}.json"
    if not path.exists():
        path.write_text(json.dumps(value))
    return json.loads(path.read_text())


def log(name):
    with (HERE / "calls.log").open("a") as calls:
        calls.write(name + "\\n")


def test_row_ids(spark):
    readings = spark.createDataFrame([(i % 4, i, float(i)) for i in range(40)], "sensor int, ts int, value double")
    ids = sorted(r.row_id for r in numbered(readings).collect())
    assert ids == first_seen("ids", ids)


def test_latest_with_one_reading_per_sensor(spark):
    log("latest")
    readings = spark.createDataFrame([(s, 10, float(s)) for s in range(4)], "sensor int, ts int, value double")
    assert sorted(tuple(r) for r in latest_reading(readings).collect()) == [(s, float(s)) for s in range(4)]


def test_totals(spark):
    log("totals")
    readings = spark.createDataFrame([(i % 4, i, 1.0) for i in range(40)], "sensor int, ts int, value double")
    assert sorted(tuple(r) for r in total_per_sensor(readings).collect()) == [(s, 10.0) for s in range(4)]
"""


@pytest.fixture(scope="module")
def confirmed(tmp_path_factory):
    project = tmp_path_factory.mktemp("confirm")
    (project / "jobs").mkdir()
    (project / "jobs" / "__init__.py").write_text("")
    (project / "jobs" / "daily.py").write_text(JOBS)
    (project / "tests").mkdir()
    (project / "tests" / "test_daily.py").write_text(TESTS)
    (project / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["."]\n')
    result = run_pytest(project, "-q", "--sparkpar-confirm", "--sparkpar-seed=7", f"--sparkpar-runs={RUNS}")
    return project, result


def _verdicts(project: Path) -> dict[tuple[str, int], str]:
    data = json.loads((project / ".sparkpar" / "verdicts.json").read_text())
    return {(entry["rule"], entry["line"]): entry["verdict"] for entry in data["verdicts"].values()}


def test_every_finding_gets_a_verdict(confirmed):
    project, result = confirmed
    assert outcomes(result.stdout) == {
        "test_row_ids": "FAILED",
        "test_latest_with_one_reading_per_sensor": "PASSED",
        "test_totals": "PASSED",
    }, result.stdout[-4000:]
    assert _verdicts(project) == {
        ("SPX105", 6): "confirmed",  # the only finding its test reaches; the ids changed
        ("SPX107", 10): "not-reproduced",  # one reading per sensor: no order to lose
        ("SPX101", 10): "not-reproduced",
        ("SPX107", 18): "unreached",  # no test calls first_seen_page
        ("SPX101", 18): "unreached",
    }
    assert re.search(
        r"^sparkpar: 5 lint findings in the tested modules: 1 confirmed, 0 implicated, 2 not-reproduced, "
        r"2 unreached; verdicts in .*verdicts\.json$",
        result.stdout,
        re.M,
    ), result.stdout[-2000:]


def test_only_tests_that_reach_a_finding_are_rerun(confirmed):
    project, _ = confirmed
    calls = (project / "tests" / "calls.log").read_text().split()
    assert calls.count("totals") == 1  # reaches no finding: run once, unperturbed
    assert calls.count("latest") == 1 + RUNS  # as written, then each targeted run


def test_lint_reads_the_verdicts(confirmed):
    project, _ = confirmed
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "sparkpar"),
            "lint",
            "--no-cache",
            "--format",
            "json",
            "--verdicts",
            ".sparkpar/verdicts.json",
            "jobs/",
        ],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    findings = {(f["rule"], f["line"]): f for f in json.loads(done.stdout)}
    assert {key: f["verdict"] for key, f in findings.items()} == _verdicts(project)
    confirmed_message = findings[("SPX105", 6)]["message"]
    assert "confirmed by test `tests/test_daily.py::test_row_ids` with seed 7" in confirmed_message, confirmed_message
    assert "--sparkpar-seed=7" in confirmed_message
    assert "not reproduced: 4 targeted runs" in findings[("SPX101", 10)]["message"]
    assert "no test executes this line" in findings[("SPX101", 18)]["message"]


def test_xdist_workers_verdicts_are_merged_into_one_file(pytester):
    """Each worker runs its share of the tests; the controller writes every worker's verdicts."""
    (pytester.path / "jobs").mkdir()
    (pytester.path / "jobs" / "__init__.py").write_text("")
    (pytester.path / "jobs" / "daily.py").write_text(JOBS)
    head, _, cases = TESTS.partition("\n\ndef test_row_ids")
    ids, _, rest = ("def test_row_ids" + cases).partition("\n\ndef test_latest")
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_ids.py").write_text(head + "\n\n" + ids)
    (pytester.path / "tests" / "test_sensors.py").write_text(head + "\n\ndef test_latest" + rest)
    pytester.makeini("[pytest]\npythonpath = .\n")
    result = pytester.runpytest_subprocess(
        "-p", "xdist", "-n", "2", "--dist", "loadfile", "-v", "--sparkpar-confirm", "--sparkpar-seed=7",
        f"--sparkpar-runs={RUNS}", "--sparkpar-master=local[2]",
    )  # fmt: skip
    output = result.stdout.str()
    workers = set(re.findall(r"^\[(gw\d)\] .*(?:PASSED|FAILED)", output, re.M))
    assert workers == {"gw0", "gw1"}, output[-4000:]  # both workers ran tests
    assert _verdicts(pytester.path) == {
        ("SPX105", 6): "confirmed",
        ("SPX107", 10): "not-reproduced",
        ("SPX101", 10): "not-reproduced",
        ("SPX107", 18): "unreached",
        ("SPX101", 18): "unreached",
    }
    entries = json.loads((pytester.path / ".sparkpar" / "verdicts.json").read_text())["verdicts"].values()
    (confirmed,) = [e for e in entries if e["verdict"] == "confirmed"]
    assert confirmed["tests"] == ["tests/test_ids.py::test_row_ids"] and "--sparkpar-seed=7" in confirmed["replay"]
    assert "sparkpar: 5 lint findings in the tested modules: 1 confirmed, 0 implicated, 2 not-reproduced" in output


# The order rows come back in is not promised without a sort: here the first run sees them one
# way and every later run the other, as a job's rows do when shuffle blocks arrive in another
# order on a busy cluster. The check that a test is repeatable then fails on order alone.
UNSTABLE_ORDER_TESTS = """
import json
from pathlib import Path

from pyspark.sql import functions as F

from jobs.daily import latest_reading, numbered

HERE = Path(__file__).parent
CALLS = {"ids": 0, "latest": 0}


def first_seen(name, value):
    path = HERE / f"{name}.json"
    if not path.exists():
        path.write_text(json.dumps(value))
    return json.loads(path.read_text())


def as_returned(name, frame, column):
    CALLS[name] += 1
    order = F.col(column).asc() if CALLS[name] == 1 else F.col(column).desc()
    return [list(row) for row in frame.orderBy(order).collect()]


def test_row_ids_in_unstable_order(spark):
    readings = spark.createDataFrame([(i % 4, i, float(i)) for i in range(40)], "sensor int, ts int, value double")
    rows = as_returned("ids", numbered(readings).select("ts", "row_id"), "ts")
    assert rows == first_seen("ids", rows)


def test_latest_in_unstable_order(spark):
    readings = spark.createDataFrame([(s, 10, float(s)) for s in range(4)], "sensor int, ts int, value double")
    rows = as_returned("latest", latest_reading(readings), "sensor")
    assert rows == first_seen("latest", rows)
"""


def test_rows_reordered_when_run_again_still_get_a_verdict(pytester):
    """Run again unperturbed, each test fails on row order alone. The perturbed run is then judged
    against the first run as written: the row ids changed (confirmed), the latest readings
    were only reordered (the test's own order dependence: not reproduced); neither is unreached."""
    (pytester.path / "jobs").mkdir()
    (pytester.path / "jobs" / "__init__.py").write_text("")
    (pytester.path / "jobs" / "daily.py").write_text(JOBS)
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_daily.py").write_text(UNSTABLE_ORDER_TESTS)
    pytester.makeini("[pytest]\npythonpath = .\n")
    result = pytester.runpytest_subprocess(
        "-rA", "--sparkpar-confirm", "--sparkpar-seed=7", f"--sparkpar-runs={RUNS}", "--sparkpar-master=local[2]"
    )
    output = result.stdout.str()
    assert outcomes(output) == {
        "test_row_ids_in_unstable_order": "FAILED",
        "test_latest_in_unstable_order": "FAILED",
    }, output[-4000:]
    assert "the job's output changed" in output and "depends on row order" in output, output[-4000:]
    assert _verdicts(pytester.path) == {
        ("SPX105", 6): "confirmed",
        ("SPX107", 10): "not-reproduced",
        ("SPX101", 10): "not-reproduced",
        ("SPX107", 18): "unreached",  # no test calls first_seen_page
        ("SPX101", 18): "unreached",
    }, output[-4000:]
