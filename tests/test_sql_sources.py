"""SQL outside Python strings, through the real CLI: one-line `%sql` magics in Jupyter and
Databricks notebooks, `.sql` files (plain scripts and Databricks SQL exports), and empty notebooks."""

from __future__ import annotations

import json

from test_notebooks import DATABRICKS, notebook

# Written: a SQL cell's last query is displayed, a preview SPX106 leaves alone (tested below).
LIMIT_LINE = "CREATE OR REPLACE TABLE top_pages AS SELECT page, count(*) AS n FROM events GROUP BY page LIMIT 5"
LAST_LINE = "SELECT store, last(amount) AS amount FROM (SELECT * FROM sales ORDER BY sold_at) GROUP BY store"
LAST_FIXED = LAST_LINE.replace("last(amount)", "max(struct(sold_at, amount)).amount")
LIMIT_COLUMN = LIMIT_LINE.index("LIMIT") + 1
LAST_COLUMN = LAST_LINE.index("last(") + 1


def concise(cli, *args):
    return cli("lint", "--no-cache", "--select", "SPX101,SPX106,SPX901", "--format", "concise", *args)


def test_jupyter_sql_line_magic_is_analysed_at_its_own_columns(sparkpar_cli, tmp_path):
    (tmp_path / "job.ipynb").write_text(
        notebook(
            ("code", f"x = 1\n%sql {LIMIT_LINE}\nrows = %sql {LAST_LINE}\nif x:\n    %sql {LIMIT_LINE}"),
        )
    )
    lines = concise(sparkpar_cli, "job.ipynb").stdout.splitlines()
    assert [line.split(" SPX")[0] for line in lines] == [
        f"job.ipynb:cell 1:2:{5 + LIMIT_COLUMN}:",
        f"job.ipynb:cell 1:3:{12 + LAST_COLUMN}:",
        f"job.ipynb:cell 1:5:{9 + LIMIT_COLUMN}:",
    ]


def test_jupyter_sql_line_magic_is_fixed_on_its_line(sparkpar_cli, tmp_path):
    path = tmp_path / "job.ipynb"
    path.write_text(notebook(("code", f"x = 1\nrows = %sql {LAST_LINE}\nprint(rows)")))
    assert sparkpar_cli("fix", "--select", "SPX101", "job.ipynb").exit_code == 0
    cell = json.loads(path.read_text())["cells"][0]
    assert "".join(cell["source"]) == f"x = 1\nrows = %sql {LAST_FIXED}\nprint(rows)"
    assert cell["outputs"][0]["text"] == ["ok\n"]


def test_databricks_sql_one_liner_and_continued_magic_line(sparkpar_cli, tmp_path):
    one = f"# MAGIC %sql {LIMIT_LINE}"
    two = "# MAGIC %sql SELECT store, last(amount) AS amount\n# MAGIC FROM (SELECT * FROM sales ORDER BY sold_at) GROUP BY store"
    source = DATABRICKS.format(line="x = 1") + f"\n# COMMAND ----------\n\n{one}\n\n# COMMAND ----------\n\n{two}\n"
    (tmp_path / "job.py").write_text(source)
    lines = concise(sparkpar_cli, "job.py").stdout.splitlines()
    assert [line.split(" SPX")[0] for line in lines] == [
        f"job.py:19:{13 + LIMIT_COLUMN}:",
        f"job.py:23:{13 + LAST_COLUMN}:",
    ]
    assert sparkpar_cli("fix", "--select", "SPX101", "job.py").exit_code == 0
    assert (tmp_path / "job.py").read_text() == source.replace("last(amount)", "max(struct(sold_at, amount)).amount")


PLAIN_SQL = f"""-- daily report
{LIMIT_LINE.replace(" FROM", chr(10) + "FROM")};

{LAST_LINE}
"""


def test_a_named_sql_file_is_spark_sql_at_exact_lines_and_fixed(sparkpar_cli, tmp_path):
    (tmp_path / "report.sql").write_text(PLAIN_SQL)
    lines = concise(sparkpar_cli, "report.sql").stdout.splitlines()
    limit_column = LIMIT_LINE.split(" FROM")[1].index("LIMIT") + len(" FROM") + 1 - len(" ")
    assert [line.split(" SPX")[0] for line in lines] == [
        f"report.sql:3:{limit_column}:",
        f"report.sql:5:{LAST_COLUMN}:",
    ]
    assert sparkpar_cli("fix", "--select", "SPX101", "report.sql").exit_code == 0
    assert (tmp_path / "report.sql").read_text() == PLAIN_SQL.replace(LAST_LINE, LAST_FIXED)


def test_sql_that_does_not_parse_or_cannot_be_wrapped_is_clean(sparkpar_cli, tmp_path):
    (tmp_path / "template.sql").write_text("SELECT {{ cols }} FROM {{ ref('x') }} LIMIT 5\n")
    (tmp_path / "quotes.sql").write_text('SELECT """a""" FROM t GROUP BY a LIMIT 5\n')
    (tmp_path / "empty.sql").write_text("\n\n")
    result = concise(sparkpar_cli, "template.sql", "quotes.sql", "empty.sql")
    assert result.exit_code == 0 and result.output == "", result.output


DATABRICKS_SQL = f"""-- Databricks notebook source
{LIMIT_LINE}

-- COMMAND ----------

-- MAGIC %md
-- MAGIC # Sales

-- COMMAND ----------

CREATE OR REPLACE TEMP VIEW latest AS
{LAST_LINE}
"""


def test_walk_takes_databricks_sql_exports_and_plain_sql_only_through_include(sparkpar_cli, tmp_path):
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "export.sql").write_text(DATABRICKS_SQL)
    (tmp_path / "jobs" / "report.sql").write_text(PLAIN_SQL)
    lines = concise(sparkpar_cli, "jobs").stdout.splitlines()
    assert [line.split(" SPX")[0] for line in lines] == [
        f"jobs/export.sql:2:{LIMIT_COLUMN}:",
        f"jobs/export.sql:12:{LAST_COLUMN}:",
    ]
    (tmp_path / "pyproject.toml").write_text('[tool.sparkpar]\ninclude = ["jobs/*.sql"]\n')
    lines = concise(sparkpar_cli, "jobs").stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == ["jobs/export.sql"] * 2 + ["jobs/report.sql"] * 2


def test_a_sql_cell_that_only_shows_a_limit_is_a_preview(sparkpar_cli, tmp_path):
    shown = "SELECT page, count(*) AS n FROM events GROUP BY page LIMIT 5"
    (tmp_path / "job.ipynb").write_text(
        notebook(("code", f"%%sql\n{shown}"), ("code", f"%%sql\nCREATE TABLE t AS {shown}"))
    )
    (tmp_path / "export.sql").write_text(f"-- Databricks notebook source\n{shown}\n")
    lines = concise(sparkpar_cli, "job.ipynb", "export.sql").stdout.splitlines()
    assert [line.split(" SPX")[0] for line in lines] == [
        f"job.ipynb:cell 2:2:{len('CREATE TABLE t AS ') + shown.index('LIMIT') + 1}:"
    ]


def test_include_must_be_a_list_of_globs(sparkpar_cli, tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.sparkpar]\ninclude = 5\n")
    (tmp_path / "job.py").write_text("x = 1\n")
    result = concise(sparkpar_cli, "job.py")
    assert result.exit_code == 2 and "include" in result.stderr


def test_an_empty_notebook_is_a_clean_file(sparkpar_cli, tmp_path):
    empty = json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"
    (tmp_path / "new.ipynb").write_text(empty)
    result = concise(sparkpar_cli, "new.ipynb")
    assert result.exit_code == 0 and result.output == "", result.output
    assert sparkpar_cli("fix", "new.ipynb").exit_code == 0
    assert (tmp_path / "new.ipynb").read_text() == empty
    assert sparkpar_cli("graph", "new.ipynb").exit_code == 0
