"""Recording what a test's collects return (pytest_sparkpar.row_capture), in fresh interpreters:
which DataFrame class is patched depends on what the process has imported."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("pyspark")

from pytest_sparkpar import compat  # noqa: E402

# As a session from `getOrCreate` leaves it: pyspark.sql imported, no DataFrame made yet.
AFTER_A_SESSION = """
import pyspark.sql
from pytest_sparkpar.row_capture import recording

with recording():
    from pyspark.sql.classic.dataframe import DataFrame
    print(DataFrame.collect.__name__)
print(DataFrame.collect.__name__)
"""

WITHOUT_SPARK = """
import sys
from pytest_sparkpar.row_capture import recording

with recording() as rows:
    pass
print(sorted(m for m in sys.modules if m.startswith("pyspark")), rows.results)
"""


def run(code: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


@pytest.mark.skipif(compat.spark_major_minor() < (4, 0), reason="pyspark.sql.classic is 4.x")
def test_the_first_dataframe_of_a_test_body_is_recorded_after_a_bare_session_start():
    # patched within the block, the original again after it
    assert run(AFTER_A_SESSION) == ["rows_of", "collect"]


def test_a_test_without_spark_imports_no_pyspark():
    assert run(WITHOUT_SPARK) == ["[] []"]
