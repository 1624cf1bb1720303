"""Lint all of installed PySpark's own source: a large, real corpus that must give no internal
errors (findings are fine; their counts are printed for the log)."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

from sparkpar_lint import runner
from sparkpar_lint.config import Config
from sparkpar_lint.rules import all_rules

# ~120k lines of PySpark: about half a minute of analysis on an idle core.
pytestmark = pytest.mark.slow


def pyspark_dir() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        pytest.fail("this test lints installed PySpark: pip install '.[test]' installs it")
    return Path(spec.origin).parent


def test_installed_pyspark_lints_without_internal_errors():
    root = pyspark_dir()
    outcome = runner.run([str(root)], Config(root=root), {r.id for r in all_rules()})
    counts = collections.Counter(f.rule_id for f in outcome.findings)
    print(f"\n{outcome.files_checked} files, findings by rule: {dict(sorted(counts.items()))}")
    assert outcome.files_checked > 400
    assert outcome.all_errors == []
    # PySpark ships valid Python, so an unparsable file would be a bug of ours.
    assert counts["SPX901"] == 0
