"""Lists collected side by side: `agg(collect_list("a").alias("as"), collect_list("b").alias("bs"))`
then `explode(arrays_zip("as", "bs"))` pairs a and b of the same input row, whatever order the rows
arrived in, because one aggregation appends both lists row by row. Only when neither column holds
nulls: `collect_list` skips nulls, so one null shifts the rest of its list against the other and
the pairs then depend on the order. Non-null means shown in the code: a filter `isNotNull()` /
`IS NOT NULL` on the column, or `dropna()`/`na.drop()` (how="any", no threshold) covering it,
before the aggregation.
"""

from __future__ import annotations

import re

import libcst as cst

from sparkpar_lint.graph.stage_graph import StageGraph, StageNode
from sparkpar_lint.graph.uniqueness import literal_names
from sparkpar_lint.graph.visiting import visit

_LISTS = frozenset({"collect_list", "array_agg"})


def zip_partners(graph: StageGraph, aggregation: StageNode) -> frozenset[str]:
    """Aliases of `aggregation` holding a plain `collect_list` of a column shown non-null upstream."""
    if aggregation.call is None:
        return frozenset()
    grouping = graph.input_of(aggregation)
    source = graph.input_of(grouping) if grouping is not None else None
    if source is None:
        return frozenset()
    found = set()
    for arg in aggregation.call.args:
        alias, column = _aliased_list(arg.value)
        if alias is not None and column is not None and _non_null(graph, source, column):
            found.add(alias)
    return frozenset(found)


def _aliased_list(expr: cst.BaseExpression) -> tuple[str | None, str | None]:
    """("as", "a") for `collect_list("a").alias("as")` (or `F.col("a")` inside)."""
    if not (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value in ("alias", "name")
    ):
        return None, None
    inner = expr.func.value
    alias = literal_names(expr.args[0].value) if expr.args else None
    if not (
        isinstance(inner, cst.Call) and _called(inner) in _LISTS and len(inner.args) == 1 and alias and len(alias) == 1
    ):
        return None, None
    column = literal_names(inner.args[0].value)
    return alias[0], column[0] if column and len(column) == 1 else None


def _called(call: cst.Call) -> str | None:
    func = call.func
    return func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None


def _non_null(graph: StageGraph, node: StageNode, column: str) -> bool:
    for upstream in [node, *graph.upstream(node)]:
        if upstream.method in ("filter", "where") and upstream.call is not None:
            if any(_tests_not_null(a.value, column) for a in upstream.call.args):
                return True
        if upstream.method in ("dropna", "drop") and upstream.call is not None:
            if upstream.method == "drop" and upstream.receiver == "DataFrame":
                continue  # dropping columns, not rows
            keywords = {a.keyword.value: a.value for a in upstream.call.args if a.keyword is not None}
            if upstream.call.args and any(a.keyword is None for a in upstream.call.args):
                continue  # positional how/thresh/subset: not read
            how = keywords.get("how")
            if "thresh" in keywords or (how is not None and literal_names(how) != ["any"]):
                continue  # how="all" or a threshold keeps rows with some nulls
            subset = keywords.get("subset")
            names = literal_names(subset) if subset is not None else None
            if subset is None or (names is not None and column in names):
                return True
    return False


def _tests_not_null(expr: cst.BaseExpression, column: str) -> bool:
    found: list[cst.CSTNode] = []
    pattern = re.compile(rf"(?i)(^|[^\w`]){re.escape(column)}`?\s+is\s+not\s+null")

    class _Visitor(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value == "isNotNull" and _names(func.value) == column:
                found.append(node)

        def visit_SimpleString(self, node: cst.SimpleString) -> None:
            if isinstance(node.evaluated_value, str) and pattern.search(node.evaluated_value):
                found.append(node)

    visit(expr, _Visitor())
    return bool(found)


def _names(expr: cst.BaseExpression) -> str | None:
    """The column `col("a")`, `df.a` or `df["a"]` refers to."""
    if isinstance(expr, cst.Call) and _called(expr) in ("col", "column") and expr.args:
        names = literal_names(expr.args[0].value)
        return names[0] if names and len(names) == 1 else None
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    if isinstance(expr, cst.Subscript) and len(expr.slice) == 1:
        index = expr.slice[0].slice
        if isinstance(index, cst.Index):
            names = literal_names(index.value)
            return names[0] if names and len(names) == 1 else None
    return None
