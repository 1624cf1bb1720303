"""ruff and sparkpar on the same file: real `ruff check --fix` with RUF100 (unused `noqa`) must
leave sparkpar's suppressions in place when configured as docs/integrations.md says."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIRST_AFTER_SORT = 'df.orderBy("ts").groupBy("k").agg(F.first("v"))'
JOB = f"""\
from pyspark.sql import functions as F


def latest(df):
    return {FIRST_AFTER_SORT}  # noqa: E501, SPX101


def earliest(df):
    return {FIRST_AFTER_SORT}  # sparkpar: ignore[SPX101] -- one row per key upstream
"""
# E501 is selected but not raised (the lines are short), so RUF100 calls `E501` unused.
RUFF_SELECTION = 'select = ["E", "F", "RUF100"]\n'


def _documented_toml() -> str:
    text = (REPO / "docs" / "integrations.md").read_text()
    section = text.split("\n## ruff next to sparkpar\n", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```toml\n(.*?)```", section, re.DOTALL)
    return block


def _ruff_fix_then_lint(project: Path, ruff_settings: str, sparkpar_cli) -> tuple[str, str]:
    (project / "pyproject.toml").write_text(ruff_settings)
    (project / "job.py").write_text(JOB)
    ruff = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--fix", "--no-cache", "job.py"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ruff.returncode in (0, 1) and "error:" not in ruff.stderr.lower(), ruff.stderr
    lint = sparkpar_cli("lint", "--no-cache", "--select", "SPX101", "--format", "concise", "job.py")
    return (project / "job.py").read_text(), lint.stdout


def test_ruff_keeps_spx_codes_declared_external(sparkpar_cli, tmp_path):
    documented = _documented_toml()
    assert documented.startswith("[tool.ruff.lint]\n")
    fixed, findings = _ruff_fix_then_lint(tmp_path, documented + RUFF_SELECTION, sparkpar_cli)
    assert f"return {FIRST_AFTER_SORT}  # noqa: SPX101\n" in fixed  # RUF100 dropped E501 only
    assert "# sparkpar: ignore[SPX101] -- one row per key upstream" in fixed
    assert findings == ""


def test_without_external_ruff_strips_the_noqa_but_not_the_sparkpar_comment(sparkpar_cli, tmp_path):
    # Why the setting is documented: without it the first finding comes back after `ruff --fix`.
    fixed, findings = _ruff_fix_then_lint(tmp_path, "[tool.ruff.lint]\n" + RUFF_SELECTION, sparkpar_cli)
    assert "noqa" not in fixed
    assert "# sparkpar: ignore[SPX101] -- one row per key upstream" in fixed
    assert findings.startswith("job.py:5:") and findings.count("SPX101") == 1, findings
