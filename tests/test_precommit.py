"""The pre-commit hooks, end to end with real pre-commit on a git repository holding a job, a
notebook and a .sql file: the local configuration docs/integrations.md gives (run as written), and
`pre-commit try-repo`, which installs sparkpar from a clean copy of this repository.

try-repo is slow (pre-commit pip-installs sparkpar's core: libcst, click, rich); PRE_COMMIT_HOME is
shared across the session so the environment is built once.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "sparkpar tests",
    "GIT_AUTHOR_EMAIL": "tests@example.invalid",
    "GIT_COMMITTER_NAME": "sparkpar tests",
    "GIT_COMMITTER_EMAIL": "tests@example.invalid",
}


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env={**os.environ, **GIT_IDENTITY})


def _tracked_copy(destination: Path) -> Path:
    """This repository's tracked files (as in the working tree) committed into a fresh git repo."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.fail("test_precommit needs git and a git checkout of sparkpar")
    listing = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, check=True, capture_output=True)
    for name in filter(None, listing.stdout.decode().split("\0")):
        source = REPO / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    _git(destination, "init", "-q")
    _git(destination, "add", ".")
    _git(destination, "commit", "-q", "-m", "sparkpar under test")
    return destination


@pytest.fixture(scope="session")
def pre_commit_home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("pre-commit-home")


FIRST_AFTER_SORT = 'out = df.orderBy("ts").groupBy("k").agg(F.first("v").alias("v"))'
FIXED_LINE = 'out = df.groupBy("k").agg(F.min(F.struct("ts", "v")).getField("v").alias("v"))'
TOP_PAGES = "CREATE OR REPLACE TABLE top_pages AS\nSELECT page, count(*) AS n\nFROM events\nGROUP BY page\nLIMIT 5;\n"


def _notebook(code: str) -> str:
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": code}
    document = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(document, indent=1) + "\n"


def _project(root: Path) -> Path:
    """A git repository with a broken job, a clean job, a notebook and a .sql file, all staged."""
    root.mkdir()
    (root / "good_job.py").write_text("from pyspark.sql import SparkSession\nspark = None\n")
    (root / "bad_job.py").write_text("from pyspark.sql import functions as F\ndef job(df:\n")
    (root / "report.ipynb").write_text(
        _notebook(f"from pyspark.sql import functions as F\ndf = spark.table('events')\n{FIRST_AFTER_SORT}")
    )
    (root / "top_pages.sql").write_text(TOP_PAGES)
    _git(root, "init", "-q")
    _git(root, "add", ".")
    return root


def _pre_commit(project: Path, *args: str, home: Path) -> tuple[int, str]:
    env = {**os.environ, "PRE_COMMIT_HOME": str(home)}
    env.pop("VIRTUAL_ENV", None)
    completed = subprocess.run(
        [sys.executable, "-m", "pre_commit", *args, "--all-files", "--verbose"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    return completed.returncode, completed.stdout + completed.stderr


def _assert_every_kind_checked(output: str) -> None:
    # The hook itself exited 1 (findings), not 2 (an error of ours).
    assert "exit code: 1" in output, output
    assert "bad_job.py:2:" in output and "SPX901" in output, output
    assert "report.ipynb:cell 1:3:" in output and "SPX101" in output, output
    assert "top_pages.sql:5:1: SPX106" in output, output
    assert "good_job.py:" not in output, output


def _documented_yaml() -> list[str]:
    text = (REPO / "docs" / "integrations.md").read_text()
    section = text.split("\n## pre-commit\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```yaml\n(.*?)```", section, re.DOTALL)


def test_documented_local_hooks_check_notebooks_and_sql_and_fix_them(tmp_path):
    # The snippet as a user copies it: the first block, then the fix hook appended to its list.
    if shutil.which("sparkpar") is None:
        pytest.fail("the documented hook runs the `sparkpar` on PATH; install sparkpar first")
    lint_hook, fix_hook = _documented_yaml()[:2]
    project = _project(tmp_path / "project")
    (project / ".pre-commit-config.yaml").write_text(lint_hook + fix_hook)
    home = tmp_path / "pre-commit-home"

    code, output = _pre_commit(project, "run", "sparkpar", home=home)
    assert code == 1, output
    _assert_every_kind_checked(output)

    code, output = _pre_commit(project, "run", "sparkpar-fix", home=home)
    assert code == 1 and "files were modified by this hook" in output, output
    (cell,) = json.loads((project / "report.ipynb").read_text())["cells"]
    assert "".join(cell["source"]).endswith(FIXED_LINE), cell
    assert (project / "top_pages.sql").read_text() == TOP_PAGES  # no safe fix for a LIMIT


@pytest.mark.slow
@pytest.mark.network  # pre-commit pip-installs sparkpar
def test_published_hooks_check_notebooks_and_sql(tmp_path, pre_commit_home):
    hook_repo = _tracked_copy(tmp_path / "sparkpar")
    project = _project(tmp_path / "project")

    code, output = _pre_commit(project, "try-repo", str(hook_repo), "sparkpar", home=pre_commit_home)
    assert code == 1, output
    _assert_every_kind_checked(output)

    code, output = _pre_commit(project, "try-repo", str(hook_repo), "sparkpar-fix", home=pre_commit_home)
    assert code == 1 and "files were modified by this hook" in output, output
    (cell,) = json.loads((project / "report.ipynb").read_text())["cells"]
    assert "".join(cell["source"]).endswith(FIXED_LINE), cell
