"""`sparkpar.check` with SQL jobs, through a real pytest run in a subprocess on Spark."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[1]

SCENARIOS = """
ROWS = [(f"s{i % 5}", (i * 37) % 601, i % 13) for i in range(600)]
SCHEMA = "store string, sold_at int, amount int"


def test_bad_sql_string(sparkpar):
    sparkpar.check(
        "SELECT store, last(amount) AS amount FROM (SELECT * FROM sales ORDER BY sold_at) GROUP BY store",
        {"sales": ROWS}, schema=SCHEMA,
    )


def test_fixed_sql_function(sparkpar):
    def latest_amounts():
        return "SELECT store, max(struct(sold_at, amount)).amount AS amount FROM sales GROUP BY store"

    rows = sparkpar.check(latest_amounts, {"sales": ROWS}, schema=SCHEMA)
    assert len(rows) == 5
"""


def test_sql_jobs_over_named_views(tmp_path):
    (tmp_path / "conftest.py").write_text(f"import sys\nimport sparkpar_lint\nsys.path.insert(0, {str(ROOT)!r})\n")
    (tmp_path / "test_sql_jobs.py").write_text(textwrap.dedent(SCENARIOS))
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-rA",
        "--sparkpar-determinism",
        "--sparkpar-seed=7",
        "--sparkpar-runs=6",
        "--sparkpar-shrink-seconds=0",
    ]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=1200, env=dict(os.environ))
    found = {name: status for status, name in re.findall(r"^(PASSED|FAILED|ERROR) \S*::(\w+)", result.stdout, re.M)}
    assert found == {"test_bad_sql_string": "FAILED", "test_fixed_sql_function": "PASSED"}, result.stdout[-5000:]
