"""The real CLI where printing itself is hostile: lone surrogates in the code, an output encoding
that lacks characters, a closed standard output, a working directory deleted under the run."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

SPARKPAR = [sys.executable, "-c", "from sparkpar_lint.cli import main; main()"]
# `'\ud800'` is valid Python; the column names reach messages, graph keys and plan orderings.
SURROGATES = """from pyspark.sql import functions as F, Window
df = spark.read.parquet('p')
w = Window.partitionBy('\\ud800').orderBy('\\udc01')
ranked = df.withColumn('r', F.row_number().over(w))
out = df.orderBy('\\ud802').groupBy('k\\udc03').agg(F.first('v'))
"""


def _run(args, cwd, **kwargs):
    env = {**os.environ, "PYTHONIOENCODING": kwargs.pop("encoding", "utf-8")}
    return subprocess.run(SPARKPAR + args, cwd=cwd, capture_output=True, env=env, timeout=120, check=False, **kwargs)


@pytest.mark.parametrize("fmt", ["rich", "concise", "github", "json", "sarif"])
def test_lone_surrogate_is_reported_in_every_format(tmp_path, fmt):
    (tmp_path / "job.py").write_text(SURROGATES)
    result = _run(["lint", "job.py", "--no-cache", "--format", fmt], tmp_path)
    stdout, stderr = result.stdout.decode(), result.stderr.decode()
    assert result.returncode == 1, stderr
    assert "SPX104" in stdout and "SPX101" in stdout and stderr == ""


@pytest.mark.parametrize("command", ["graph", "plan"])
def test_lone_surrogate_column_is_drawn_by_graph_and_plan(tmp_path, command):
    (tmp_path / "job.py").write_text(SURROGATES)
    result = _run([command, "job.py"], tmp_path)
    assert result.returncode == 0, result.stderr.decode()
    assert "\ufffd" in result.stdout.decode() and result.stderr == b""


@pytest.mark.parametrize("command", [["lint", "--no-cache", "--format", "rich"], ["graph"]])
def test_output_encoding_without_the_characters_escapes_them(tmp_path, command):
    (tmp_path / "job.py").write_text(SURROGATES)
    result = _run([*command, "job.py"], tmp_path, encoding="latin-1")
    assert result.returncode in (0, 1), result.stderr.decode()
    assert b"\\ufffd" in result.stdout and b"Error" not in result.stderr


@pytest.mark.parametrize("command", ["lint", "graph", "plan", "fix"])
def test_closed_stdout_is_one_clear_error(tmp_path, command):
    (tmp_path / "job.py").write_text(SURROGATES)
    # Close fd 1 in the child: `sparkpar lint job.py >&-`.
    result = subprocess.run(
        ["sh", "-c", '"$@" >&-', "sh", *SPARKPAR, command, "job.py"],
        cwd=tmp_path,
        capture_output=False,
        stderr=subprocess.PIPE,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.decode() == "sparkpar: error: standard output is closed, so nothing could be reported\n"


@pytest.mark.parametrize("command", [["lint", "."], ["fix", "."], ["graph", "job.py"], ["plan", "job.py"]])
def test_deleted_working_directory_is_one_clear_error(tmp_path, command):
    gone = tmp_path / "gone"
    gone.mkdir()
    result = subprocess.run(
        ["sh", "-c", 'cd "$0" && rmdir "$0" && exec "$@"', str(gone), *SPARKPAR, *command],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.decode() == (
        "sparkpar: error: the working directory no longer exists; cd to an existing directory and run again\n"
    )
