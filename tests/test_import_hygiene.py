"""The linter and the runtime that fixed jobs import pull in nothing from the `pytest` extra.

tests/test_core_install.py proves the same in a virtualenv that lacks those packages; this is the
fast check, run in the test environment (where they are installed, so an import would show).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("pyspark", "pandas", "pyarrow", "hypothesis", "numpy", "pytest", "pytest_sparkpar", "pygls")


@pytest.mark.parametrize(
    "statement",
    [
        "import sparkpar_lint.runtime.pulses",
        "import sparkpar_lint.cli, sparkpar_lint.analysis, sparkpar_lint.fixes.engine; "
        "from sparkpar_lint.rules import all_rules; all_rules()",
        "from sparkpar_lint.cli import main; main(['lint', '--help'], standalone_mode=False)",
    ],
)
def test_no_test_dependency_is_imported(statement, tmp_path):
    code = f"import sys\n{statement}\nprint(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == "[]"
