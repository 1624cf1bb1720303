"""`sparkpar lint --changed-since REF` in a real git repository: the files a branch changed, the
files importing them (directly or not), the notebooks `%run`-ning them, and nothing else."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "sparkpar tests",
    "GIT_AUTHOR_EMAIL": "tests@example.invalid",
    "GIT_COMMITTER_NAME": "sparkpar tests",
    "GIT_COMMITTER_EMAIL": "tests@example.invalid",
}
# Every file holds this finding, so the findings name exactly the files that were checked.
FIRST_AFTER_SORT = 'out = df.orderBy("ts").groupBy("k").agg(F.first("v"))'
PREAMBLE = "from pyspark.sql import functions as F\n"
FILES = {
    "pkg/__init__.py": "",
    "pkg/helpers.py": f"{PREAMBLE}\n\ndef daily(df):\n    {FIRST_AFTER_SORT}\n    return out\n",
    "jobs/__init__.py": "",
    "jobs/uses_helper.py": f"{PREAMBLE}from pkg.helpers import daily\n\ndf = spark.table('t')\nkept = daily(df)\n{FIRST_AFTER_SORT}\n",
    "jobs/through_job.py": f"{PREAMBLE}from jobs.uses_helper import kept\n\ndf = spark.table('t')\n{FIRST_AFTER_SORT}\n",
    "jobs/unrelated.py": f"{PREAMBLE}df = spark.table('t')\n{FIRST_AFTER_SORT}\n",
    "notebooks/setup.py": "# Databricks notebook source\nFRACTION = 0.1\n",
    "notebooks/report.py": f"%run ./setup\n\n{PREAMBLE}df = spark.table('t')\n{FIRST_AFTER_SORT}\n",
    "notebooks/alone.py": f"%run ./elsewhere\n\n{PREAMBLE}df = spark.table('t')\n{FIRST_AFTER_SORT}\n",
}


def _git(cwd, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env={**os.environ, **GIT_IDENTITY})


@pytest.fixture
def repo(tmp_path):
    for name, text in FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "notebooks" / "elsewhere.py").write_text("# Databricks notebook source\nX = 1\n")
    _git(tmp_path, "init", "-q", "-b", "main")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "base")
    _git(tmp_path, "checkout", "-q", "-b", "feature")
    return tmp_path


def _checked(sparkpar_cli, *args: str) -> set[str]:
    result = sparkpar_cli("lint", "--no-cache", "--select", "SPX101", "--format", "json", *args)
    assert result.exit_code in (0, 1), result.output
    return {finding["path"] for finding in json.loads(result.stdout)}


def test_changed_files_their_importers_and_run_notebooks_are_checked(sparkpar_cli, repo):
    assert len(_checked(sparkpar_cli, ".")) == 6  # without the option: every file with the finding
    (repo / "pkg" / "helpers.py").write_text(FILES["pkg/helpers.py"] + "\n# tuned\n")
    _git(repo, "commit", "-qam", "tune the helper")
    (repo / "notebooks" / "setup.py").write_text("# Databricks notebook source\nFRACTION = 0.2\n")  # not committed
    (repo / "jobs" / "new_job.py").write_text(FILES["jobs/unrelated.py"])  # untracked
    assert _checked(sparkpar_cli, "--changed-since", "main", ".") == {
        "pkg/helpers.py",
        "jobs/uses_helper.py",
        "jobs/through_job.py",  # imports the helper's importer
        "notebooks/report.py",  # %run ./setup
        "jobs/new_job.py",
    }
    # PATHS still bound the run: a dependent outside them is not checked.
    assert _checked(sparkpar_cli, "--changed-since", "main", "jobs") == {
        "jobs/uses_helper.py",
        "jobs/through_job.py",
        "jobs/new_job.py",
    }


def test_a_branch_that_changed_nothing_checks_nothing(sparkpar_cli, repo):
    result = sparkpar_cli("lint", "--no-cache", "--changed-since", "main", "--format", "concise", ".")
    assert result.exit_code == 0 and result.stdout == "", result.output


@pytest.mark.parametrize(
    ("setup", "ref", "message"), [(True, "no-such-branch", "no-such-branch"), (False, "main", "not a git repository")]
)
def test_bad_ref_or_no_repository_is_one_clear_error(sparkpar_cli, tmp_path, setup, ref, message):
    if setup:
        (tmp_path / "job.py").write_text(FILES["jobs/unrelated.py"])
        _git(tmp_path, "init", "-q", "-b", "main")
        _git(tmp_path, "add", ".")
        _git(tmp_path, "commit", "-q", "-m", "base")
    result = sparkpar_cli("lint", "--changed-since", ref, ".")
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("sparkpar: error: --changed-since: ") and message in result.stderr.lower()
    assert "Traceback" not in result.output


def test_fix_rewrites_only_the_changed_files_and_their_dependents(sparkpar_cli, repo):
    (repo / "pkg" / "helpers.py").write_text(FILES["pkg/helpers.py"] + "\n# tuned\n")
    result = sparkpar_cli("fix", "--select", "SPX101", "--changed-since", "main", ".")
    assert result.exit_code == 0, result.output
    rewritten = {name for name, text in FILES.items() if (repo / name).read_text() != text}
    assert rewritten == {"pkg/helpers.py", "jobs/uses_helper.py", "jobs/through_job.py"}
