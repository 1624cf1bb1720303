"""Configuration of the wrong shape is exit 2 with one clear message naming file and key."""

from __future__ import annotations

import os

import pytest

from samples import BAD_JOB


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        (
            "[[tool.sparkpar]]\nselect = ['SPX1']\n",
            "pyproject.toml: [tool.sparkpar]: expected a table, got [{'select': ['SPX1']}]",
        ),
        ("[tool]\nsparkpar = 5\n", "pyproject.toml: [tool.sparkpar]: expected a table, got 5"),
        ("[tool.sparkpar]\nextra-operators = [1, 2]\n", "pyproject.toml: [tool.sparkpar] extra-operators: unknown key"),
        (
            "[tool.sparkpar]\nselect = [1, 2]\n",
            "pyproject.toml: [tool.sparkpar] select: expected a list of strings, got [1, 2]",
        ),
        (
            "[tool.sparkpar]\nper-file-ignores = 3\n",
            "pyproject.toml: [tool.sparkpar] per-file-ignores: expected a table",
        ),
        (
            "[tool.sparkpar.per-file-ignores]\n'*.py' = 3\n",
            "[tool.sparkpar] per-file-ignores.*.py: expected a list of strings, got 3",
        ),
        (
            "[tool.sparkpar.severity]\nSPX101 = 3\n",
            "[tool.sparkpar] severity.SPX101: expected error, warning or info, got 3",
        ),
        (
            "[tool.sparkpar]\nexclude = [" + "'x', " * 10_000 + "1]\n",
            "exclude: expected a list of strings, got ['x', 'x', 'x', 'x', 'x', 'x', ...]",
        ),
    ],
)
def test_config_shape_is_a_clear_error(sparkpar_cli, tmp_path, toml, message):
    (tmp_path / "pyproject.toml").write_text(toml)
    (tmp_path / "job.py").write_text(BAD_JOB)
    result = sparkpar_cli("lint", "job.py")
    assert result.exit_code == 2, result.output
    assert message in result.stderr and "internal error" not in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_config_file_that_is_a_fifo_is_an_error_not_a_hang(sparkpar_cli, tmp_path):
    os.mkfifo(tmp_path / "settings.toml")
    (tmp_path / "job.py").write_text(BAD_JOB)
    result = sparkpar_cli("lint", "job.py", "--config", "settings.toml")
    assert result.exit_code == 2
    assert result.stderr == "sparkpar: error: settings.toml: not a regular file (a named pipe); skipped\n"
