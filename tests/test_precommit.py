"""The pre-commit hook, end to end: `pre-commit try-repo` installs sparkpar from a clean copy of
this repository into its own environment and runs the `sparkpar` hook on a bad job.

Slow-ish (pre-commit pip-installs sparkpar's core: libcst, click, rich); PRE_COMMIT_HOME is shared
across the session so the environment is built once.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.network]  # pre-commit pip-installs sparkpar

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


def test_hook_fails_on_a_bad_job_and_names_it(tmp_path, pre_commit_home):
    hook_repo = _tracked_copy(tmp_path / "sparkpar")
    project = tmp_path / "project"
    project.mkdir()
    (project / "good_job.py").write_text("from pyspark.sql import SparkSession\nspark = None\n")
    (project / "bad_job.py").write_text("from pyspark.sql import functions as F\ndef job(df:\n")
    _git(project, "init", "-q")
    _git(project, "add", ".")

    env = {**os.environ, "PRE_COMMIT_HOME": str(pre_commit_home)}
    env.pop("VIRTUAL_ENV", None)
    completed = subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo), "sparkpar", "--all-files", "--verbose"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 1, output
    # The hook itself exited 1 (findings), not 2 (an error of ours).
    assert "exit code: 1" in output, output
    assert "bad_job.py:2:" in output and "SPX901" in output, output
    assert "good_job.py:" not in output, output
