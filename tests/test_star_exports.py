"""`from pyspark.sql.functions import *` (and types, sql, window) binds exactly what PySpark exports.

The linter never imports PySpark, so the names live in rules/exports.toml; this test holds that
list to the installed PySpark, and shows the resolver reading star-imported names as Spark's,
builtins they rebind (`max`, `round`) included.
"""

from __future__ import annotations

import importlib
import textwrap

import libcst as cst
import pytest

from sparkpar_lint.graph.imports import ImportTable, star_exports


@pytest.mark.parametrize("module", ["pyspark.sql.functions", "pyspark.sql.types", "pyspark.sql", "pyspark.sql.window"])
def test_the_list_holds_every_name_pyspark_exports(module):
    exported = set(importlib.import_module(module).__all__)
    assert exported - star_exports()[module] == set()


def _table(source: str) -> ImportTable:
    table = ImportTable()
    for statement in cst.parse_module(textwrap.dedent(source)).body:
        for small in getattr(statement, "body", ()):
            if isinstance(small, (cst.Import, cst.ImportFrom)):
                table.add(small)
    return table


def test_star_imported_names_are_spark_functions_and_types():
    table = _table("from pyspark.sql.functions import *\nfrom pyspark.sql.types import *\n")
    assert table.resolve_name("round") == "pyspark.sql.functions.round"
    assert table.resolve_name("max") == "pyspark.sql.functions.max"
    assert table.resolve_name("collect_list") == "pyspark.sql.functions.collect_list"
    assert table.resolve_name("StringType") == "pyspark.sql.types.StringType"
    # Names PySpark does not export stay Python's.
    assert table.resolve_name("len") is None and table.resolve_name("sorted") is None


def test_a_later_import_wins_over_a_star_import_and_a_star_import_over_an_earlier_one():
    before = _table("from builtins import max\nfrom pyspark.sql.functions import *\n")
    after = _table("from pyspark.sql.functions import *\nfrom builtins import max\n")
    assert before.resolve_name("max") == "pyspark.sql.functions.max"
    assert after.resolve_name("max") == "builtins.max"
