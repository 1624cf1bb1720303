"""The real CLI on files that are valid in their own format but hostile in shape: a notebook
cell whose source list holds a number, JSON and TOML nested past any recursion limit."""

from __future__ import annotations

import contextlib
import json

import pytest
from click.testing import CliRunner

from sparkpar_lint.cli import main


def _invoke(args, cwd):
    with contextlib.chdir(cwd):
        return CliRunner().invoke(main, args, catch_exceptions=False)


def _notebook(tmp_path, source_list) -> None:
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "source": source_list}
    (tmp_path / "nb.ipynb").write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4}))


@pytest.mark.parametrize("command", [["lint", "--no-cache"], ["fix"], ["graph"], ["plan"]])
def test_notebook_source_holding_a_number_is_one_error_for_the_file(tmp_path, command):
    _notebook(tmp_path, ["df = spark.range(3)\n", 5])
    result = _invoke([*command, "nb.ipynb"], tmp_path)
    assert result.exit_code == 2
    assert "nb.ipynb: not a valid notebook: cell 1 has no readable source" in result.stderr
    assert "internal error" not in result.stderr and "All checks passed" not in result.stdout


@pytest.mark.parametrize("command", [["lint", "--no-cache"], ["fix"], ["graph"]])
def test_deeply_nested_notebook_json_is_never_an_internal_error(tmp_path, command):
    deep = "[" * 100_000 + "]" * 100_000
    text = '{"cells": [{"cell_type": "code", "source": "x = 1", "metadata": ' + deep + "}]}"
    (tmp_path / "nb.ipynb").write_text(text)
    result = _invoke([*command, "nb.ipynb"], tmp_path)
    # `fix` reads on a deep stack, where this JSON is a valid notebook with nothing to fix.
    assert result.exit_code in (0, 2) and "internal error" not in result.stderr
    assert result.stderr.count("sparkpar: error:") == (result.exit_code == 2), result.stderr
    if command[0] == "lint":
        assert result.stderr == "sparkpar: error: nb.ipynb: not a valid notebook: JSON nested too deeply\n"


@pytest.mark.parametrize("command", ["lint", "fix"])
def test_deeply_nested_pyproject_is_one_config_error(tmp_path, command):
    nested = "{a = " * 2_000 + "1" + "}" * 2_000
    (tmp_path / "pyproject.toml").write_text(f"[tool.sparkpar]\nx = {nested}\n")
    (tmp_path / "job.py").write_text("df = spark.range(3)\n")
    result = _invoke([command, "job.py"], tmp_path)
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"sparkpar: error: {tmp_path / 'pyproject.toml'}: not valid TOML: nested too deeply"
    ]


JOB_LINE = "out = spark.read.parquet('p').orderBy('ts').groupBy('k').agg(F.first('v'))\n"


def test_plan_reads_a_notebook_as_lint_does(tmp_path):
    cells = [["%pip install somepackage\n", "from pyspark.sql import functions as F\n"], [JOB_LINE]]
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "source": s} for s in cells]}
    (tmp_path / "job.ipynb").write_text(json.dumps({**notebook, "metadata": {}, "nbformat": 4}))
    assert "SPX101" in _invoke(["lint", "--no-cache", "job.ipynb"], tmp_path).stdout
    result = _invoke(["plan", "job.ipynb"], tmp_path)
    assert result.exit_code == 0, result.stderr
    assert "orderBy" in result.stdout and "groupBy" in result.stdout


def test_plan_reads_a_databricks_export_with_pip_as_lint_does(tmp_path):
    (tmp_path / "job.py").write_text(
        "# Databricks notebook source\n# MAGIC %pip install somepackage\n\n# COMMAND ----------\n\n"
        "from pyspark.sql import functions as F\n" + JOB_LINE
    )
    assert "SPX101" in _invoke(["lint", "--no-cache", "job.py"], tmp_path).stdout
    result = _invoke(["plan", "job.py"], tmp_path)
    assert result.exit_code == 0, result.stderr
    assert "orderBy" in result.stdout and "groupBy" in result.stdout


@pytest.mark.parametrize(
    "damage",
    [
        {"line": "3"},
        {"column": "x", "end_column": 1.5},
        {"end_line": True},
        {"message": 7},
        {"cell": "2"},
        {"related": [{"message": "m", "line": "1", "column": 0, "end_line": 1, "end_column": 1}]},
        {"related": "none"},
        {"fix": 1},
    ],
)
def test_cache_entry_with_wrongly_typed_fields_is_a_miss(tmp_path, damage):
    (tmp_path / "job.py").write_text("from pyspark.sql import functions as F\n" + JOB_LINE)
    first = _invoke(["lint", "--format", "concise", "job.py"], tmp_path)
    assert first.exit_code == 1
    (entry,) = (tmp_path / ".sparkpar_cache").glob("*.json")
    data = json.loads(entry.read_text())
    data["findings"][0].update(damage)
    entry.write_text(json.dumps(data))
    again = _invoke(["lint", "--format", "concise", "job.py"], tmp_path)
    assert (again.exit_code, again.stdout, again.stderr) == (1, first.stdout, "")


HELP_LINES = ["spark?\n", "??spark\n", "spark.read.parquet??\n", "F.*col*?\n", "F.first?  \n"]


def test_ipython_help_syntax_in_a_cell_is_not_a_parse_error(tmp_path):
    cells = [[*HELP_LINES, "from pyspark.sql import functions as F\n"], [JOB_LINE]]
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "source": s} for s in cells]}
    (tmp_path / "help.ipynb").write_text(json.dumps({**notebook, "metadata": {}, "nbformat": 4}))
    result = _invoke(["lint", "--no-cache", "--format", "concise", "help.ipynb"], tmp_path)
    assert "SPX901" not in result.stdout and "help.ipynb:cell 2:1:62: SPX101" in result.stdout
    assert _invoke(["fix", "--unsafe-fixes", "help.ipynb"], tmp_path).exit_code == 0
    fixed = json.loads((tmp_path / "help.ipynb").read_text())
    assert fixed["cells"][0]["source"][: len(HELP_LINES)] == HELP_LINES  # given back unchanged
    assert fixed["cells"][1]["source"] != [JOB_LINE]
