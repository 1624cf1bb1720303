"""`sparkpar fix` takes every input `sparkpar lint` takes, the same way: the same files found
(excludes, `--changed-since`, symlinks), read and decoded (notebooks, SQL, PEP 263, bad bytes,
files that are not files), with the same error and warning lines and exit status 2 when one
file could not be handled. Each case runs both commands through the real CLI and compares."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
JOB = (
    "from pyspark.sql import functions as F\n"
    "\n"
    "def latest(orders):\n"
    '    return orders.orderBy("ts").groupBy("order").agg(F.last("status"))\n'
)


def _stderr_lines(result) -> list[str]:
    """The error and warning lines, the part of stderr lint and fix share."""
    return [line for line in result.stderr.splitlines() if line.startswith(("sparkpar: error:", "sparkpar: warning:"))]


def _both(sparkpar_cli, *args: str):
    lint = sparkpar_cli("lint", "--no-cache", "--format", "concise", *args)
    fix = sparkpar_cli("fix", "--diff", "--unsafe-fixes", *args)
    return lint, fix


def _rewritten(fix_result) -> set[str]:
    return {line[4:].split("\t")[0] for line in fix_result.stdout.splitlines() if line.startswith("+++ ")}


def _fixable_paths(lint_result) -> set[str]:
    """Files where lint reports a finding it says `sparkpar fix` can fix."""
    return {line.split(":")[0] for line in lint_result.stdout.splitlines() if "[*]" in line or "fixable" in line}


@pytest.mark.parametrize(
    "name",
    ["weekly_store_report.ipynb", "weekly_store_report_databricks.py"],
)
def test_a_notebook_is_fixed_where_lint_finds_the_fixable_finding(sparkpar_cli, tmp_path, name):
    shutil.copy(FIXTURES / "notebooks" / name, tmp_path / name)
    lint, fix = _both(sparkpar_cli, name)
    assert lint.exit_code == 1, lint.output
    assert fix.exit_code == 0, fix.output
    assert "SPX101" in lint.stdout
    assert _rewritten(fix) == {f"b/{name}"} or _rewritten(fix) == {name}, fix.stdout


def test_a_sql_file_is_read_as_lint_reads_it(sparkpar_cli, tmp_path):
    (tmp_path / "report.sql").write_text(
        "SELECT user, ntile(4) OVER (PARTITION BY user ORDER BY 'x') AS quartile FROM visits\n"
    )
    lint, fix = _both(sparkpar_cli, "--select", "SPX104", "report.sql")
    assert lint.exit_code == 1 and "report.sql:1" in lint.stdout, lint.output
    assert fix.exit_code == 0 and _rewritten(fix), fix.output
    assert "to_json(struct(*)" in fix.stdout.split("+++", 1)[1]


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("latin.py", b"import pyspark  # caf\xe9\n"),
        ("cookie.py", b"# -*- coding: no-such-codec -*-\nimport pyspark\n"),
        ("broken.ipynb", b'{"cells": [ spark'),
        ("latin_export.py", b"# Databricks notebook source\nspark.table('t')  # caf\xe9\n"),
    ],
)
def test_a_file_that_cannot_be_decoded_is_the_same_error(sparkpar_cli, tmp_path, name, data):
    (tmp_path / name).write_bytes(data)
    lint, fix = _both(sparkpar_cli, name)
    assert lint.exit_code == fix.exit_code == 2, (lint.output, fix.output)
    assert _stderr_lines(fix) == _stderr_lines(lint)
    assert _stderr_lines(fix)[0].startswith(f"sparkpar: error: {name}")
    assert "Traceback" not in fix.output


def test_a_declared_encoding_is_written_back_in_it(sparkpar_cli, tmp_path):
    job = tmp_path / "job.py"
    job.write_bytes(b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + JOB.encode())
    lint = sparkpar_cli("lint", "--no-cache", "--select", "SPX101", "job.py")
    fix = sparkpar_cli("fix", "--unsafe-fixes", "--select", "SPX101", "job.py")
    assert lint.exit_code == 1 and fix.exit_code == 0, fix.output
    assert job.read_bytes().startswith(b"# -*- coding: latin-1 -*-\n# caf\xe9\n")
    assert job.read_bytes() != b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + JOB.encode()


def test_files_that_cannot_be_read_are_the_same_errors(sparkpar_cli, tmp_path):
    os.mkfifo(tmp_path / "pipe.py")
    os.symlink(tmp_path / "gone.py", tmp_path / "dangling.py")
    (tmp_path / "ok.py").write_text(JOB)
    lint, fix = _both(sparkpar_cli, "pipe.py", "dangling.py", "missing.py", "ok.py")
    assert lint.exit_code == fix.exit_code == 2, (lint.output, fix.output)
    assert _stderr_lines(fix) == _stderr_lines(lint)
    assert len(_stderr_lines(fix)) == 3, fix.stderr
    assert _rewritten(fix), "the readable file is still fixed"


def test_excludes_from_the_config_and_the_command_line_skip_the_same_files(sparkpar_cli, tmp_path):
    for name in ("jobs/a.py", "legacy/b.py", "jobs/c.py"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(JOB)
    (tmp_path / "pyproject.toml").write_text('[tool.sparkpar]\nexclude = ["legacy/*"]\n')
    lint, fix = _both(sparkpar_cli, "--exclude", "jobs/c.py", ".")
    assert {line.split(":")[0] for line in lint.stdout.splitlines() if "SPX101" in line} == {"jobs/a.py"}
    assert {path.removeprefix("b/") for path in _rewritten(fix)} == {"jobs/a.py"}, fix.stdout


def test_symlinks_are_walked_the_same_way(sparkpar_cli, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "shared.py").write_text(JOB)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "job.py").write_text(JOB)
    os.symlink(outside, tree / "linked_dir")
    os.symlink(tree, tree / "loop")
    lint, fix = _both(sparkpar_cli, "tree")
    assert _stderr_lines(fix) == _stderr_lines(lint)
    assert any("loop" in line for line in _stderr_lines(fix)), fix.stderr
    assert {path.removeprefix("b/") for path in _rewritten(fix)} == {"tree/job.py"}
    lint, fix = _both(sparkpar_cli, "--follow-links", "tree")
    assert {path.removeprefix("b/") for path in _rewritten(fix)} == {"tree/job.py", "tree/linked_dir/shared.py"}


def test_a_symlinked_file_leading_out_of_the_tree_is_read_but_not_written(sparkpar_cli, tmp_path):
    (tmp_path / "outside.py").write_text(JOB)
    (tmp_path / "tree").mkdir()
    os.symlink(tmp_path / "outside.py", tmp_path / "tree" / "link.py")
    fix = sparkpar_cli("fix", "--unsafe-fixes", "tree")
    assert fix.exit_code == 0, fix.output
    assert "outside the checked tree" in fix.stderr and "sparkpar: warning:" in fix.stderr
    assert (tmp_path / "outside.py").read_text() == JOB


def test_changed_since_takes_the_same_files_and_fails_the_same_way(sparkpar_cli, tmp_path):
    env = {**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a"}
    env["GIT_COMMITTER_EMAIL"] = "a@b"

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True, env=env)

    (tmp_path / "old.py").write_text(JOB)
    git("init", "-q", "-b", "main")
    git("add", ".")
    git("commit", "-qm", "base")
    (tmp_path / "new.py").write_text(JOB)
    lint, fix = _both(sparkpar_cli, "--changed-since", "main", ".")
    assert {line.split(":")[0] for line in lint.stdout.splitlines() if "SPX101" in line} == {"new.py"}
    assert {path.removeprefix("b/") for path in _rewritten(fix)} == {"new.py"}
    lint, fix = _both(sparkpar_cli, "--changed-since", "no-such-ref", ".")
    assert lint.exit_code == fix.exit_code == 2
    assert _stderr_lines(fix) == _stderr_lines(lint) and len(_stderr_lines(fix)) == 1
