"""`[tool.sparkpar] unique-columns`: columns the project declares unique change what "could two
rows tie?" answers, for every table or only the named one; bad shapes are exit 2."""

from __future__ import annotations

import json
import textwrap

import pytest

JOB = textwrap.dedent(
    """\
    from pyspark.sql import SparkSession, Window, functions as F

    spark = SparkSession.builder.getOrCreate()
    orders = spark.table("sales.orders")
    first_order = Window.partitionBy("customer").orderBy("order_number")
    orders.withColumn("rn", F.row_number().over(first_order)).filter("rn = 1").write.parquet("first")
    orders.dropDuplicates(["order_number"]).write.parquet("deduplicated")
    """
)


def _lint(cli, tmp_path, setting: str | None):
    (tmp_path / "job.py").write_text(JOB)
    config = "[tool.sparkpar]\n" + (f"unique-columns = {setting}\n" if setting is not None else "")
    (tmp_path / "pyproject.toml").write_text(config)
    return cli("lint", "job.py", "--format", "json")


def _rules(result) -> set[tuple[str, int]]:
    assert result.exit_code in (0, 1), result.output
    return {(f["rule"], f["line"]) for f in json.loads(result.stdout)}


def test_without_the_setting_the_order_column_may_tie(sparkpar_cli, tmp_path):
    assert _rules(_lint(sparkpar_cli, tmp_path, None)) == {("SPX104", 6), ("SPX102", 7)}


@pytest.mark.parametrize("setting", ['["order_number"]', '["orders.order_number"]', '["sales.orders.order_number"]'])
def test_a_declared_unique_column_cannot_tie(sparkpar_cli, tmp_path, setting):
    result = _lint(sparkpar_cli, tmp_path, setting)
    if setting.count(".") > 1:
        assert result.exit_code == 2  # a column is `column` or `table.column`
        return
    assert _rules(result) == set()


def test_a_column_declared_for_another_table_changes_nothing(sparkpar_cli, tmp_path):
    assert _rules(_lint(sparkpar_cli, tmp_path, '["payments.order_number"]')) == {("SPX104", 6), ("SPX102", 7)}


def test_changing_the_setting_invalidates_cached_results(sparkpar_cli, tmp_path):
    assert _rules(_lint(sparkpar_cli, tmp_path, None))  # cached with findings
    assert _rules(_lint(sparkpar_cli, tmp_path, '["order_number"]')) == set()


@pytest.mark.parametrize(
    ("setting", "problem"),
    [
        ('"order_number"', "expected a list of strings"),
        ("[1]", "expected a list of strings"),
        ('["order number"]', "expected `column` or `table.column`"),
        ('[""]', "expected `column` or `table.column`"),
        ('["orders."]', "expected `column` or `table.column`"),
    ],
)
def test_bad_shapes_exit_2_naming_the_key(sparkpar_cli, tmp_path, setting, problem):
    result = _lint(sparkpar_cli, tmp_path, setting)
    assert result.exit_code == 2
    assert "[tool.sparkpar] unique-columns" in result.output and problem in result.output
