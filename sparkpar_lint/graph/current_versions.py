"""Rows filtered to the current version of a slowly changing dimension (SCD type 2).

An SCD2 table keeps every version of an entity and flags exactly one of them as current
(`is_current = true`): closing the old version and inserting the new one is how the table is
written. Rows filtered to that flag hold one row per entity, so a window partitioned by the
entity's id over them has one row per partition and nothing to choose between. Only an id-named
key counts (`driver_id`, `customer_key`): the flag says nothing about any other column.
"""

from __future__ import annotations

import re

import libcst as cst

from sparkpar_lint.graph.stage_graph import StageGraph, StageNode
from sparkpar_lint.graph.uniqueness import callee, literal_names

_FLAG = re.compile(r"^(is_?)?current(_?(flag|record|version|row|ind|indicator))?$", re.IGNORECASE)
_ENTITY_ID = re.compile(r"(^|_)(id|key|sk|nk|code)$|[a-z]Id$")
_SQL_CURRENT = re.compile(r"^\s*`?(\w+)`?\s*={1,2}\s*(true|1|'y'|'true')\s*$", re.IGNORECASE)
# Stages between the filter and the window that neither add rows nor rewrite the key.
_KEEPING = frozenset({"filter", "where", "select", "withColumn", "withColumns", "drop", "cache", "persist", "alias"})


def current_versions_by(graph: StageGraph, node: StageNode, key: tuple[str, ...]) -> bool:
    """`node`'s rows were filtered to an SCD2 current flag, and `key` is one entity id."""
    if len(key) != 1 or not _ENTITY_ID.search(key[0]):
        return False
    for upstream in graph.upstream(node):
        if upstream.method in ("filter", "where") and _pins_current(upstream):
            return True
        if upstream.method not in _KEEPING or upstream.selectivity == "any":
            return False
        if upstream.method in ("withColumn", "withColumns"):
            written = _written(upstream)
            if written is None or (key[0] in written and not _recast(upstream, key[0])):
                return False
    return False


def _pins_current(node: StageNode) -> bool:
    """`filter(col("is_current") == True)`, `== lit(True)`, `filter("is_current = true")`."""
    if node.call is None or not node.call.args:
        return False
    predicate = node.call.args[0].value
    if isinstance(predicate, cst.SimpleString) and isinstance(predicate.evaluated_value, str):
        found = _SQL_CURRENT.match(predicate.evaluated_value)
        return found is not None and _FLAG.match(found.group(1)) is not None
    if not isinstance(predicate, cst.Comparison) or len(predicate.comparisons) != 1:
        return False
    if not isinstance(predicate.comparisons[0].operator, cst.Equal):
        return False
    names = (literal_names(predicate.left) if isinstance(predicate.left, cst.Call) else None) or []
    return len(names) == 1 and _FLAG.match(names[0]) is not None and _true(predicate.comparisons[0].comparator)


def _true(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.Call) and callee(expr) == "lit" and len(expr.args) == 1:
        expr = expr.args[0].value
    return (isinstance(expr, cst.Name) and expr.value == "True") or (
        isinstance(expr, cst.Integer) and expr.value == "1"
    )


def _recast(node: StageNode, column: str) -> bool:
    """`withColumn("k", col("k").cast("long"))`: the same ids in another type."""
    call = node.call
    value = call.args[1].value if call is not None and len(call.args) == 2 else None
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "cast"):
        return False
    inner = value.func.value
    return isinstance(inner, cst.Call) and literal_names(inner) == [column]


def _written(node: StageNode) -> set[str] | None:
    """The column names a `withColumn`/`withColumns` call writes, None when not literal."""
    call = node.call
    if call is None or not call.args:
        return None
    first = call.args[0].value
    if isinstance(first, cst.Dict):
        keys = [e.key for e in first.elements if isinstance(e, cst.DictElement)]
        strings = [k.evaluated_value for k in keys if isinstance(k, cst.SimpleString)]
        return {n for n in strings if isinstance(n, str)} if len(strings) == len(first.elements) else None
    names = literal_names(first)
    return set(names) if names else None
