"""How many rows a result can hold at most, when the code says: a `limit(m)`, rows spelled out in
`createDataFrame([...])` or `parallelize([...])`, a global aggregate (one row), a join of two
bounded inputs, and whatever keeps or merges rows after them (filters, projections, sorts,
groupings, dedups). `take(n)` of at most n rows takes them all.
"""

from __future__ import annotations

import libcst as cst

from sparkpar_lint.graph.literal_rows import literal_count
from sparkpar_lint.graph.order_flow import yields_single_row
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode

# Operators whose output has no more rows than their input.
_NO_MORE_ROWS = frozenset(
    {
        "filter",
        "where",
        "select",
        "selectExpr",
        "withColumn",
        "withColumns",
        "withColumnRenamed",
        "drop",
        "orderBy",
        "sort",
        "sortWithinPartitions",
        "distinct",
        "dropDuplicates",
        "drop_duplicates",
        "groupBy",
        "groupby",
        "agg",
        "count",
        "sum",
        "avg",
        "mean",
        "max",
        "min",
        "repartition",
        "coalesce",
        "cache",
        "persist",
        "alias",
        "toDF",
        "limit",
        "dropna",
        "fillna",
        "na",
    }
)
_JOINS = frozenset({"join", "leftOuterJoin", "rightOuterJoin", "fullOuterJoin", "crossJoin"})
_MAX_DEPTH = 50


def at_most_rows(graph: StageGraph, node: StageNode) -> int | None:
    """An upper bound on the rows of `node`'s output, or None when nothing bounds them."""
    bound: int | None = None
    current: StageNode | None = node
    for _ in range(_MAX_DEPTH):
        if current is None:
            return bound
        if current.method in _JOINS and len(current.inputs) == 2:
            joined = _join_bound(graph, current)
            return joined if bound is None else (bound if joined is None else min(bound, joined))
        own = _own_bound(graph, current)
        if own is not None:
            bound = own if bound is None else min(bound, own)
        if current.method not in _NO_MORE_ROWS and not (current.spec is not None and current.spec.source):
            return bound
        if any(c.spec is not None and c.spec.generator for c in current.columns.calls):
            return bound  # `explode` makes rows
        if current.spec is not None and current.spec.data_args:
            return bound
        current = graph.input_of(current)
    return bound


def _own_bound(graph: StageGraph, node: StageNode) -> int | None:
    if node.method == "limit" and node.call is not None and node.call.args:
        count = node.call.args[0].value
        return int(count.value) if isinstance(count, cst.Integer) else None
    if yields_single_row(graph, node):
        return 1
    if node.spec is not None and node.spec.source:
        return literal_count(graph, node)
    return None


def _join_bound(graph: StageGraph, node: StageNode) -> int | None:
    """Every pair matching, plus every row of either side unmatched (outer joins): l*r + l + r."""
    left, right = (at_most_rows(graph, graph.node(i)) for i in node.inputs)
    if left is None or right is None:
        return None
    return left * right + left + right
