"""Import lists a fix changes keep their author's layout, through the real CLI on real files: a
name added where it sorts (or last, in a list that was not sorted), a removed name's neighbours
keep their commas, line breaks and trailing comma."""

from __future__ import annotations

import ast

BODY = """

spark = SparkSession.builder.getOrCreate()


def latest(events):
    return events.orderBy("ts").groupBy("user").agg(first(col("page")).alias("p"))


def one_per_user(events):
    return events.dropDuplicates(["user"])
"""


def _fixed(cli, tmp_path, imports: str) -> str:
    path = tmp_path / "job.py"
    path.write_text(imports + BODY, encoding="utf-8")
    result = cli("fix", "--unsafe-fixes", "job.py")
    assert result.exit_code == 0, result.output
    fixed = path.read_text(encoding="utf-8")
    ast.parse(fixed)
    assert fixed.endswith('        .filter(F.col("_sparkpar_rn") == 1)\n        .drop("_sparkpar_rn")\n    )\n')
    return fixed[: fixed.index("\n\n")]


def test_added_names_go_where_they_sort_and_a_removed_one_keeps_the_list_as_written(sparkpar_cli, tmp_path):
    imports = "from pyspark.sql import SparkSession\nfrom pyspark.sql.functions import (\n    col,\n    first,\n)"
    assert _fixed(sparkpar_cli, tmp_path, imports) == (
        "from pyspark.sql import SparkSession, Window, functions as F\nfrom pyspark.sql.functions import (\n    col,\n)"
    )


def test_a_name_joins_a_one_name_parenthesised_list_on_its_own_line(sparkpar_cli, tmp_path):
    imports = "from pyspark.sql import (\n    SparkSession,\n)\nfrom pyspark.sql.functions import col, first"
    assert _fixed(sparkpar_cli, tmp_path, imports) == (
        "from pyspark.sql import (\n    SparkSession,\n    Window,\n    functions as F,\n)\n"
        "from pyspark.sql.functions import col"
    )


def test_an_unsorted_list_gets_its_new_names_last(sparkpar_cli, tmp_path):
    imports = "from pyspark.sql import SparkSession, Row\nfrom pyspark.sql.functions import first, col"
    assert _fixed(sparkpar_cli, tmp_path, imports) == (
        "from pyspark.sql import SparkSession, Row, Window, functions as F\nfrom pyspark.sql.functions import col"
    )


def test_a_list_holding_a_comment_is_left_as_libcst_writes_it(sparkpar_cli, tmp_path):
    imports = "from pyspark.sql import (\n    SparkSession,  # the entry point\n)\nfrom pyspark.sql.functions import col, first"
    head = _fixed(sparkpar_cli, tmp_path, imports)
    assert "# the entry point" in head and "Window" in head and "functions as F" in head


def test_two_imports_from_one_module_pair_up_in_order(sparkpar_cli, tmp_path):
    imports = "from pyspark.sql import SparkSession\nfrom pyspark.sql import functions as F\nfrom pyspark.sql.functions import col, first"
    assert _fixed(sparkpar_cli, tmp_path, imports) == (
        "from pyspark.sql import SparkSession, Window\nfrom pyspark.sql import functions as F\n"
        "from pyspark.sql.functions import col"
    )


def test_a_name_joins_a_one_line_parenthesised_list_after_a_space(sparkpar_cli, tmp_path):
    imports = "from pyspark.sql import (SparkSession)\nfrom pyspark.sql.functions import col, first"
    assert _fixed(sparkpar_cli, tmp_path, imports).startswith(
        "from pyspark.sql import (SparkSession, Window, functions as F)\n"
    )


def test_a_list_of_several_names_a_line_keeps_its_line_breaks(sparkpar_cli, tmp_path):
    imports = "from pyspark.sql import SparkSession\nfrom pyspark.sql.functions import (\n    col, first,\n    lit\n)"
    assert _fixed(sparkpar_cli, tmp_path, imports) == (
        "from pyspark.sql import SparkSession, Window, functions as F\nfrom pyspark.sql.functions import (\n    col,\n    lit\n)"
    )
