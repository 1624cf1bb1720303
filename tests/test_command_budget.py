"""`fix`, `graph` and `plan` work on each file within the per-file time and memory budget, as `lint`
does: a file that stalls the parser or needs too much memory is one error line naming it, and
`fix` still fixes the other files. The real command runs in a subprocess on real pathological code."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from samples import BAD_JOB

SPARKPAR = str(Path(sys.executable).parent / "sparkpar")
# 5,000 nested conditional expressions: LibCST's parser takes minutes (no brackets, so the
# nesting pre-check does not refuse it).
STALLING = "# spark\nx = " + "a if b else " * 5000 + "c\n"
FIXED_MARK = 'F.min(F.struct("ts", "v"))'  # what SPX101's safe fix writes into BAD_JOB


def sparkpar(*args, cwd: Path, memory: int | None = None) -> subprocess.CompletedProcess:
    def limit() -> None:
        if memory is not None:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    return subprocess.run([SPARKPAR, *args], cwd=cwd, capture_output=True, text=True, timeout=300, preexec_fn=limit)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "bad.py").write_text(BAD_JOB)
    return tmp_path


@pytest.mark.parametrize("command, consequence", [("graph", "no graph was drawn"), ("plan", "nothing was planned")])
def test_graph_and_plan_stop_a_stalled_parse_at_the_file_timeout(project, command, consequence):
    (project / "hang.py").write_text(STALLING)
    result = sparkpar(command, "hang.py", "--file-timeout", "2", cwd=project)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == f"sparkpar: error: hang.py: analysis stopped after 2 s (--file-timeout); {consequence}\n"


def test_fix_stops_a_stalled_file_and_still_fixes_the_others(project):
    (project / "hang.py").write_text(STALLING)
    (project / "other.py").write_text(BAD_JOB)
    result = sparkpar("fix", ".", "--file-timeout", "2", cwd=project)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "sparkpar: error: hang.py: analysis stopped after 2 s (--file-timeout); the file was not fixed",
        "Fixed 2 findings in 2 files.",
    ]
    assert (project / "hang.py").read_text() == STALLING
    for name in ("bad.py", "other.py"):
        assert FIXED_MARK in (project / name).read_text()


def test_fix_diff_keeps_the_files_order_whatever_finishes_first(project):
    for name in ("a.py", "c.py"):
        (project / name).write_text(BAD_JOB)
    (project / "b.py").write_text(STALLING)
    result = sparkpar("fix", "--diff", ".", "--file-timeout", "2", cwd=project)
    headers = [line for line in result.stdout.splitlines() if line.startswith("--- ")]
    assert headers == ["--- a/a.py", "--- a/bad.py", "--- a/c.py"]
    assert "b.py: analysis stopped after 2 s" in result.stderr


@pytest.mark.slow  # parses until 1.2 GB of address space is used up: seconds of CPU, more on a busy box
def test_fix_on_a_file_too_big_for_the_memory_it_may_use(project):
    # 40,000 statements (2.3 MB) need more than the 1.2 GB of address space this run may use: the
    # worker dies of it (LibCST's native parser aborts when an allocation fails) and that file
    # alone is reported; the small file is fixed by the next worker.
    lines = ["from pyspark.sql import functions as F", "def job(spark, df):"]
    lines += [f"    df = df.withColumn('c{i}', F.col('a{i}') + {i})" for i in range(40_000)]
    (project / "big.py").write_text("\n".join([*lines, "    return df", ""]))
    result = sparkpar("fix", ".", cwd=project, memory=1200 * 1024**2)
    assert result.returncode == 2
    error, summary = result.stderr.splitlines()
    assert error.startswith("sparkpar: error: big.py: ") and error.endswith("; the file was not fixed")
    assert "SIGABRT: out of memory" in error or "memory budget" in error
    assert summary == "Fixed 1 finding in 1 file."
    assert FIXED_MARK in (project / "bad.py").read_text()


def test_fix_says_which_files_it_could_not_parse_and_fixes_the_rest(project):
    # 2,500 nested brackets crashed LibCST inside `fix` (SIGSEGV, every file's fix lost); a file
    # that does not parse was passed over without a word.
    (project / "deep.py").write_text("# spark\nx = " + "(" * 2500 + "1" + ")" * 2500 + "\n")
    (project / "broken.py").write_text("# spark\ndef job(:\n")
    result = sparkpar("fix", ".", cwd=project)
    assert result.returncode == 0
    assert result.stderr.splitlines() == [
        "sparkpar: warning: broken.py:2:9: cannot parse: invalid syntax; the file was not fixed",
        "sparkpar: warning: deep.py:2:205: too deeply nested to analyse (more than 200 nested brackets); "
        "the file was not fixed",
        "Fixed 1 finding in 1 file.",
    ]
    assert FIXED_MARK in (project / "bad.py").read_text()
