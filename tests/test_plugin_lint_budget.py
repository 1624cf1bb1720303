"""The plugin's "likely cause" section runs the linter the way `sparkpar lint` does: each file in a
worker process within the time and memory budget, so a hostile or huge module a test imports costs
one line of the report, never the pytest run (real files, real pytest, real Spark on local[2])."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_command_budget import STALLING
from test_plugin import outcomes, run_pytest

from pytest_sparkpar.report import lint_findings
from samples import BAD_JOB
from sparkpar_lint.runner import check_files

# A project module of 20,000 lines: Python imports it in a second or two, the analyser needs far
# longer than the 2 s budget the run below gives it.
HUGE_HELPERS = (
    "from pyspark.sql import functions as F\n\n\ndef counts_per_key(df):\n    return df.groupBy('k').count()\n"
    + "".join(
        f"\n\ndef job_{i}(df):\n    df = df.withColumn('a', F.col('x') + {i}).filter(F.col('a') > 0)\n"
        f"    return df.groupBy('k').agg(F.max('v'))\n"
        for i in range(4000)
    )
)

ORDER_DEPENDENT_TEST = """
import huge_helpers


def test_reorder_bug(spark):
    df = spark.createDataFrame([(i % 5, i) for i in range(20)], "k int, v int")
    rows = huge_helpers.counts_per_key(df).collect()
    assert [r.k for r in rows] == [2, 4, 0, 1, 3]
"""


def test_check_files_reports_each_hostile_file_in_one_line_and_checks_the_rest(tmp_path):
    (tmp_path / "bad.py").write_text(BAD_JOB)
    (tmp_path / "hang.py").write_text(STALLING)
    os.mkfifo(tmp_path / "fifo.py")
    paths = [str(tmp_path / name) for name in ("hang.py", "fifo.py", "missing.py", "bad.py")]
    results = check_files(paths, file_timeout=2)
    assert [r.path for r in results] == paths
    hang, fifo, missing, bad = results
    assert hang.error == f"{paths[0]}: analysis stopped after 2 s (--file-timeout); the file was not checked"
    assert fifo.error == f"{paths[1]}: not a regular file (a named pipe); skipped"
    assert missing.error.startswith(f"{paths[2]}: cannot read")
    assert bad.error is None and "SPX101" in [f.rule_id for f in bad.findings]


def test_spawned_workers_import_the_callers_sparkpar_not_one_earlier_on_the_path(tmp_path, monkeypatch):
    # A test project's conftest may put a source checkout first on sys.path; a spawned worker
    # importing that copy (without its rule data) reported an import error instead of findings.
    shadow = tmp_path / "shadow" / "sparkpar_lint"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('the shadowing copy was imported')\n")
    monkeypatch.syspath_prepend(str(shadow.parent))
    (tmp_path / "bad.py").write_text(BAD_JOB)
    [bad] = check_files([str(tmp_path / "bad.py")], file_timeout=60)
    assert bad.error is None and "SPX101" in [f.rule_id for f in bad.findings]


@pytest.mark.spark
def test_a_huge_imported_module_costs_one_report_line_not_the_run(tmp_path):
    (tmp_path / "huge_helpers.py").write_text(HUGE_HELPERS)
    (tmp_path / "test_uses_helpers.py").write_text(ORDER_DEPENDENT_TEST)
    result = run_pytest(
        tmp_path,
        "--sparkpar-determinism",
        "--sparkpar-master=local[2]",
        "--sparkpar-seed=11",
        "--sparkpar-runs=8",
        "-o",
        "sparkpar_file_timeout=2",
    )
    assert outcomes(result.stdout) == {"test_reorder_bug": "FAILED"}, result.stdout[-4000:]
    cause = result.stdout.split("── likely cause")[1]
    huge = str(Path(tmp_path / "huge_helpers.py"))
    assert f"{huge}: analysis stopped after 2 s (--file-timeout); the file was not checked" in cause, cause
    assert "test_uses_helpers.py" in cause  # the test module itself was still linted


def test_likely_cause_lines_show_control_characters_as_symbols(tmp_path):
    hostile = tmp_path / "a\x1b[2J\n::error::b.py"
    hostile.write_text(BAD_JOB)
    cause = lint_findings([str(hostile)])
    assert cause is not None and "SPX101" in cause
    assert "\x1b" not in cause and not any(line.startswith("::") for line in cause.splitlines()), cause
    assert "a␛[2J␊::error::b.py" in cause
