"""A long lint run shows its progress on stderr when stderr is a terminal (even with stdout sent
to a file), and never where a program reads it: a pipe, or a machine format."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

from samples import BAD_JOB

SPARKPAR = str(Path(sys.executable).parent / "sparkpar")


def lint_with_stderr_on_a_terminal(cwd: Path, fmt: str, cache: str | None = None) -> tuple[bytes, bytes]:
    """(stdout through a pipe, everything written to the terminal that stderr is); `cache`: a
    cache directory to use (default: none)."""
    main, terminal = pty.openpty()
    environment = {k: v for k, v in os.environ.items() if k not in ("CI", "NO_COLOR")}
    caching = ["--cache-dir", cache] if cache is not None else ["--no-cache"]
    command = [SPARKPAR, "lint", *caching, "--format", fmt, "."]
    result = subprocess.run(command, cwd=cwd, stdout=subprocess.PIPE, stderr=terminal, env=environment, timeout=300)
    os.close(terminal)
    shown = b""
    while select.select([main], [], [], 0.5)[0]:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the terminal's other side is closed: all was read
            break
        if not chunk:
            break
        shown += chunk
    os.close(main)
    return result.stdout, shown


@pytest.fixture
def project(tmp_path):
    (tmp_path / "job.py").write_text(BAD_JOB)
    return tmp_path


def test_progress_appears_on_a_terminal_and_the_report_stays_clean(project):
    stdout, shown = lint_with_stderr_on_a_terminal(project, "concise")
    assert b"Linting" in shown
    assert b"Linting" not in stdout and stdout.startswith(b"job.py:")


def test_no_progress_for_a_machine_format(project):
    _, shown = lint_with_stderr_on_a_terminal(project, "json")
    assert b"Linting" not in shown


def test_no_progress_on_a_pipe(project):
    result = subprocess.run(
        [SPARKPAR, "lint", "--no-cache", "--format", "concise", "."], cwd=project, capture_output=True
    )
    assert result.stderr == b"" and result.stdout.startswith(b"job.py:")


def test_a_run_of_many_files_counts_them_cold_and_warm(tmp_path):
    # More files than one process takes on: workers analyse them, then the cache serves them all.
    for n in range(120):
        (tmp_path / f"job_{n}.py").write_text(BAD_JOB)
    for run in ("cold", "warm"):
        stdout, shown = lint_with_stderr_on_a_terminal(tmp_path, "concise", cache="cache")
        assert b"100%" in shown, run
        assert len({line.split(b":")[0] for line in stdout.splitlines() if b"SPX" in line}) == 120
