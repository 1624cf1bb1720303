"""The schema readers literal_rows.py and minted_keys.py share (graph/schema_names.py), and where
the two readings differ: the literal rows take a `StructType().add(...)` chain and `col("a")` in
a list of names; the minted ids take only plain strings."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from sparkpar_lint.graph.builder import build_graph
from sparkpar_lint.graph.literal_rows import literal_rows
from sparkpar_lint.graph.minted_keys import minted_sets
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode

HEADER = """\
from pyspark.sql import SparkSession, functions as F
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

spark = SparkSession.builder.getOrCreate()
"""
LITERAL = 'df = spark.createDataFrame([("a", 1), ("b", 2)], {schema})\n'
MINTED = """\
rows = []
for n in range(500):
    rows.append((f"TXN-{{n}}", 7))
df = spark.createDataFrame(rows, {schema})
"""
EVERY_READER = {
    "list": '["txn", "qty"]',
    "tuple": '("txn", "qty")',
    "ddl": '"txn STRING, `qty` INT"',
    "struct": 'StructType([StructField("txn", StringType()), StructField("qty", IntegerType())])',
}
LITERAL_ROWS_ONLY = {
    "added fields": 'StructType().add("txn", StringType()).add("qty", IntegerType())',
    "col in a list": '["txn", F.col("qty")]',
}
UNREAD = {
    "ddl without types": '"txn, qty"',
    "a name": "schema",
    "a field named by a variable": 'StructType([StructField(name, StringType()), StructField("qty", IntegerType())])',
}


def _frame(code: str) -> tuple[StageGraph, StageNode]:
    graph = build_graph(cst.parse_module(HEADER + textwrap.dedent(code)), "job.py")
    return graph, next(n for n in graph.nodes if n.method == "createDataFrame")


def _literal_names(schema: str) -> list[str] | None:
    found = literal_rows(*_frame(LITERAL.format(schema=schema)))
    return found[0] if found is not None else None


def _minted(schema: str) -> list[frozenset[str]]:
    return minted_sets(*_frame(MINTED.format(schema=schema)))


@pytest.mark.parametrize("schema", EVERY_READER.values(), ids=EVERY_READER.keys())
def test_both_readers_take_the_schema_forms_they_share(schema):
    assert _literal_names(schema) == ["txn", "qty"]
    assert _minted(schema) == [frozenset({"txn"})]


@pytest.mark.parametrize("schema", LITERAL_ROWS_ONLY.values(), ids=LITERAL_ROWS_ONLY.keys())
def test_added_fields_and_col_names_are_read_for_literal_rows_only(schema):
    assert _literal_names(schema) == ["txn", "qty"]
    assert _minted(schema) == []


@pytest.mark.parametrize("schema", UNREAD.values(), ids=UNREAD.keys())
def test_a_schema_neither_reader_can_read_names_no_columns(schema):
    assert _literal_names(schema) is None
    assert _minted(schema) == []
