"""The order a fix imposes, written in the module's own names: a user's sort reused as window or
`orderBy` arguments, a tie-breaker that makes the order total, `Window` and the functions alias.

The order rules' fixes (SPX102, SPX104, SPX106) all say "order by the user's sort, then by
something that decides ties"; this module builds those pieces so they read the graph one way.
"""

from __future__ import annotations

import libcst as cst

from sparkpar_lint.edits.code import column_function, positional_values, string
from sparkpar_lint.edits.model import Imports
from sparkpar_lint.graph.imports import FUNCTIONS_MODULE
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode

WINDOW_CLASS = "pyspark.sql.Window"
# Functions a tie-breaker changes only by ordering the rows the spec's order left tied: their
# answer does not come from a frame (`last` would: its frame ends at the last peer, which the
# tie-breaker would make the current row). SPX104's fix for Python and for SQL text.
FRAME_BLIND = frozenset({"row_number", "ntile", "lag", "lead", "first", "first_value"})
# to_json's options for the whole-row tie-breaker: every timestamp to the microsecond, with its
# offset. No quote in them, so SQL text takes them as they are.
JSON_TIMESTAMPS = {
    "timestampFormat": "yyyy-MM-dd HH:mm:ss.SSSSSSXXX",
    "timestampNTZFormat": "yyyy-MM-dd HH:mm:ss.SSSSSS",
}


def functions_like(graph: StageGraph, name: str = "col") -> cst.Call:
    """A call of `name` as the module calls functions (`F.col`, `fn.col`, or a bare `col`), for
    `edits.column_function`; bare names are imported from pyspark.sql.functions by that helper."""
    alias = _local_name(graph, FUNCTIONS_MODULE)
    func = cst.Attribute(value=cst.Name(alias), attr=cst.Name(name)) if alias else cst.Name(name)
    return cst.Call(func=func, args=[])


def window_class(graph: StageGraph) -> tuple[cst.Name, Imports]:
    """`Window` under the name the module imported it as, or a new `from pyspark.sql import Window`."""
    local = _local_name(graph, WINDOW_CLASS)
    if local:
        return cst.Name(local), ()
    return cst.Name("Window"), (("pyspark.sql", "Window"),)


def _local_name(graph: StageGraph, qualified: str) -> str | None:
    names = getattr(graph.imports, "names", {}) or {}
    return next((local for local, target in sorted(names.items()) if target == qualified), None)


def sort_arguments(graph: StageGraph, sort: StageNode) -> list[cst.BaseExpression] | None:
    """The sort's own column arguments (`"ts"`, `F.col("ts").desc()`), to reuse elsewhere.

    None when they cannot be moved as they are: an `ascending=` keyword (direction kept apart
    from the columns), or an argument naming a local variable that may not exist where the
    fix writes it.
    """
    if sort.call is None or any(a.keyword is not None for a in sort.call.args):
        return None
    values: list[cst.BaseExpression] = []
    for value in positional_values(sort.call):
        if isinstance(value, (cst.List, cst.Tuple)):
            values.extend(e.value for e in value.elements)
        else:
            values.append(value)
    if not values or not all(_portable(graph, v) for v in values):
        return None
    return [v.deep_clone() for v in values]


def sort_reaches(graph: StageGraph, sort: StageNode, node: StageNode) -> bool:
    """Every stage between `sort` and `node` keeps all columns, so the sort's columns exist at `node`."""
    for upstream in graph.upstream(node):
        if upstream is sort:
            return True
        if upstream.spec is None or upstream.spec.forwarding != "all":
            return False
    return False


def _portable(graph: StageGraph, expr: cst.BaseExpression) -> bool:
    """Literal strings and numbers, and calls of imported names (`F.col("ts").desc()`)."""
    if isinstance(expr, (cst.SimpleString, cst.Integer)):
        return True
    if isinstance(expr, cst.Name):
        return expr.value in (getattr(graph.imports, "names", {}) or {})
    if isinstance(expr, cst.Attribute):
        return _portable(graph, expr.value)
    if isinstance(expr, cst.Call):
        return _portable(graph, expr.func) and all(a.keyword is None and _portable(graph, a.value) for a in expr.args)
    return False


def whole_row(like: cst.Call) -> tuple[cst.Call, Imports]:
    """`F.to_json(F.struct("*"), {...timestamp formats...})`: the whole row as one orderable
    value, the tie-breaker of last resort. Rows it cannot tell apart are equal in every column, so
    keeping either is the same; JSON (unlike the struct) orders map columns too. The formats keep
    microseconds (to_json's defaults stop at milliseconds, so rows a microsecond apart tied) and
    the zone offset (the two 01:30s of a clock set back)."""
    struct, imports = column_function(like, "struct", [string("*")])
    options = cst.Dict([cst.DictElement(string(key), string(value)) for key, value in JSON_TIMESTAMPS.items()])
    row, more = column_function(like, "to_json", [struct, options])
    return row, imports + more


def watermark_column(graph: StageGraph, node: StageNode) -> str | None:
    """The event-time column of the nearest `withWatermark` above `node`."""
    for upstream in graph.upstream(node):
        if upstream.method == "withWatermark" and upstream.call is not None:
            values = positional_values(upstream.call)
            if values and isinstance(values[0], cst.SimpleString) and isinstance(values[0].evaluated_value, str):
                return values[0].evaluated_value
    return None
