"""Databricks Repos files: a `.py` file saved without the `# Databricks notebook source` header
still runs as a notebook when it opens with a magic, so the CLI must read it as one."""

from __future__ import annotations

import pytest

FIRST_AFTER_SORT = 'out = df.orderBy("ts").groupBy("k").agg(F.first("v").alias("v"))'
FIXED_LINE = 'out = df.groupBy("k").agg(F.min(F.struct("ts", "v")).getField("v").alias("v"))'

HEADERLESS = """{opening}
%pip install tabulate

from pyspark.sql import functions as F
df = spark.table("events")
{line}
display(out)
"""


def lint(cli, *args):
    return cli("lint", "--select", "SPX101,SPX901", "--format", "concise", *args)


@pytest.mark.parametrize("opening", ["%run ./setup", "# Load the shared settings first\n%run ../common/setup"])
def test_headerless_file_opening_with_a_magic_is_a_notebook(sparkpar_cli, tmp_path, opening):
    (tmp_path / "job.py").write_text(HEADERLESS.format(opening=opening, line=FIRST_AFTER_SORT))
    result = lint(sparkpar_cli, "job.py")
    line = 6 + opening.count("\n")
    assert result.stdout.splitlines() == [result.stdout.splitlines()[0]], result.output
    assert result.stdout.startswith(f"job.py:{line}:41: SPX101 "), result.output


def test_headerless_notebook_fix_keeps_its_magics(sparkpar_cli, tmp_path):
    path = tmp_path / "job.py"
    path.write_text(HEADERLESS.format(opening="%run ./setup", line=FIRST_AFTER_SORT))
    assert sparkpar_cli("fix", "--select", "SPX101", "job.py").exit_code == 0
    assert path.read_text() == HEADERLESS.format(opening="%run ./setup", line=FIXED_LINE)


def test_a_module_with_a_magic_later_is_still_unparsable(sparkpar_cli, tmp_path):
    # Only the opening line decides: a module whose code starts as Python is a module.
    (tmp_path / "job.py").write_text("import pyspark\n%run ./setup\n")
    result = lint(sparkpar_cli, "job.py")
    assert "SPX901" in result.stdout, result.output


HELPERS_NOTEBOOK = """# Databricks notebook source
from pyspark.sql import functions as F


def merge_counts(pairs, combine):
    return pairs.{method}(combine)
"""
RUNS_HELPERS = {
    "export": """# Databricks notebook source
# MAGIC %run ./shared/helpers

# COMMAND ----------

pairs = spark.sparkContext.parallelize([("a", 1), ("b", 2)])
merge_counts(pairs, lambda a, b: a - b).collect()
""",
    "headerless": """%run ./shared/helpers

pairs = spark.sparkContext.parallelize([("a", 1), ("b", 2)])
merge_counts(pairs, lambda a, b: a - b).collect()
""",
}


@pytest.mark.parametrize("form", sorted(RUNS_HELPERS))
def test_a_function_from_a_run_notebook_reaches_the_analysis(sparkpar_cli, tmp_path, form):
    (tmp_path / ".git").mkdir()  # the project root: `%run` targets are looked up inside it
    (tmp_path / "shared").mkdir()
    helpers = tmp_path / "shared" / "helpers.py"
    helpers.write_text(HELPERS_NOTEBOOK.format(method="reduceByKey"))
    (tmp_path / "report.py").write_text(RUNS_HELPERS[form])
    line = RUNS_HELPERS[form].count("\n")
    result = sparkpar_cli("lint", "--select", "SPX108", "--format", "concise", "report.py")
    assert result.stdout.startswith(f"report.py:{line}:21: SPX108 "), result.output
    assert "`reduceByKey` applies this combiner" in result.stdout, result.output
    # The helper's change reaches a cached run: the notebook's cache key covers its `%run` target.
    helpers.write_text(HELPERS_NOTEBOOK.format(method="groupByKey"))
    result = sparkpar_cli("lint", "--select", "SPX108", "--format", "concise", "report.py")
    assert result.exit_code == 0 and result.stdout == "", result.output


def test_fix_keeps_the_run_line_of_a_notebook(sparkpar_cli, tmp_path):
    (tmp_path / "helpers.py").write_text(HELPERS_NOTEBOOK.format(method="reduceByKey"))
    job = "# Databricks notebook source\n# MAGIC %run ./helpers\n\n# COMMAND ----------\n\n" + HEADERLESS.format(
        opening="", line=FIRST_AFTER_SORT
    )
    (tmp_path / "job.py").write_text(job)
    assert sparkpar_cli("fix", "--select", "SPX101", "job.py").exit_code == 0
    assert (tmp_path / "job.py").read_text() == job.replace(FIRST_AFTER_SORT, FIXED_LINE)
