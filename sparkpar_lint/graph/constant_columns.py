"""Columns holding one value on every row by construction: `withColumn("loaded_at",
current_timestamp())` or `withColumn("source", lit("crm"))` just before a window reads them.

Ordering a window by such a column orders nothing: every row of a partition ties for certain,
as with `orderBy(lit(1))`, and which row comes first is the order the shuffle delivers them.
"""

from __future__ import annotations

import libcst as cst

from sparkpar_lint.graph.literal_rows import written_columns
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode
from sparkpar_lint.graph.uniqueness import callee

# Functions whose value is the same for every row of one query: a literal, or the query's time.
_CONSTANT_FUNCTIONS = frozenset({"lit", "current_timestamp", "current_date", "now", "localtimestamp"})
# Stages that keep each row's values as they are (they may drop rows or copy them).
_VALUE_KEEPING = frozenset(
    {"filter", "where", "cache", "persist", "repartition", "coalesce", "distinct", "dropDuplicates", "drop", "alias"}
)
_COLUMN_ADDING = frozenset({"withColumn", "withColumns"})


def constant_column(graph: StageGraph, node: StageNode, column: str) -> StageNode | None:
    """The stage above `node` that sets `column` to one value for every row, when every stage
    between them keeps that value; None when a stage may change it or the origin is not seen."""
    for current in graph.upstream(node):
        if current.method in _COLUMN_ADDING:
            written = written_columns(current)
            if written is None:
                return None
            if column in written:
                value = _written_value(current, column)
                return current if value is not None and _constant(value) else None
        elif current.method not in _VALUE_KEEPING:
            return None
    return None


def _written_value(node: StageNode, column: str) -> cst.BaseExpression | None:
    args = node.call.args if node.call is not None else ()
    if node.method == "withColumn":
        return args[1].value if len(args) > 1 else None
    first = args[0].value if args else None
    if isinstance(first, cst.Dict):
        for element in first.elements:
            key = element.key if isinstance(element, cst.DictElement) else None
            if isinstance(key, cst.SimpleString) and key.evaluated_value == column:
                return element.value
    return None


def _constant(expr: cst.BaseExpression) -> bool:
    """`lit(...)` of anything, or the query's time (`F.current_timestamp()`), maybe cast."""
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "cast":
        expr = expr.func.value
    if not isinstance(expr, cst.Call):
        return False
    name = callee(expr)
    if name == "lit":
        return True
    return name in _CONSTANT_FUNCTIONS and not expr.args
