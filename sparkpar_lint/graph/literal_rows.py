"""Rows a job spells out itself: `spark.createDataFrame([(1, "a"), ...], ["id", "name"])`.

When the data is literal, "could two rows differ?" has an exact answer: read the rows.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

import libcst as cst

from sparkpar_lint.graph.assignments import resolved as _resolve
from sparkpar_lint.graph.call_arguments import call_argument
from sparkpar_lint.graph.schema_names import callee_name, ddl_names, struct_names
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode
from sparkpar_lint.graph.uniqueness import literal_names

_ROW_KEEPING = frozenset({"filter", "where", "cache", "persist", "localCheckpoint", "checkpoint", "alias"})
# One row as the code writes it: literal values of any type.
Row = tuple[Any, ...]


def literal_rows(graph: StageGraph, node: StageNode) -> tuple[list[str], list[Row]] | None:
    """(column names, rows) when `node`'s rows are a literal list passed to `createDataFrame`
    (through filters only), else None."""
    converted = _parallelized_to_df(graph, node)
    if converted is not None:
        return converted
    found = _literal_data(graph, node, "createDataFrame", "data")
    if found is None:
        return None
    source, rows = found
    given = call_argument(source.call, 1, "schema")
    if given is None:
        return _dict_rows(rows)  # `createDataFrame([{"id": 1, ...}, ...])`: the keys name the columns
    schema = _resolve(graph, given, source)
    if schema is None:
        return None
    names = (
        literal_names(schema)
        if isinstance(schema, (cst.List, cst.Tuple))
        else ddl_names(schema) or struct_names(schema, _one_name, added=True)
    )
    if not names:
        return None
    if not all(isinstance(r, (tuple, list)) and len(r) == len(names) for r in rows):
        return None
    return names, [tuple(r) for r in rows]


def _one_name(expr: cst.BaseExpression) -> str | None:
    """A struct field's name: `"a"`, or as `literal_names` reads it (`col("a")`), exactly one."""
    names = literal_names(expr)
    return names[0] if names and len(names) == 1 else None


# Conversions that keep equal values equal and (on the literal values a lesson writes) distinct
# ones distinct: a projection through them keeps which rows tie.
_CASTS = {"float": float, "int": int, "str": str}


def _mapped_parallelized(graph: StageGraph, data: cst.BaseExpression, at: StageNode) -> list[Row] | None:
    """`sc.parallelize([...]).map(lambda r: (r[0], r[1], float(r[2])))`: the projected rows, else
    None. Only projections of the row's items, optionally through `float`/`int`/`str`."""
    if not (isinstance(data, cst.Call) and isinstance(data.func, cst.Attribute) and data.func.attr.value == "map"):
        return None
    inner = data.func.value
    if not (isinstance(inner, cst.Call) and callee_name(inner.func) == "parallelize" and inner.args):
        return None
    function = data.args[0].value if len(data.args) == 1 else None
    if not isinstance(function, cst.Lambda) or len(function.params.params) != 1:
        return None
    if not isinstance(function.body, cst.Tuple):
        return None
    parameter = function.params.params[0].name.value
    found = [_pick(element.value, parameter) for element in function.body.elements]
    picks = [p for p in found if p is not None]
    if len(picks) < len(found):
        return None
    given = _resolve(graph, inner.args[0].value, at)
    rows = _value(given) if given is not None else None
    if not isinstance(rows, (list, tuple)):
        return None
    try:
        return [tuple(cast(row[index]) for index, cast in picks) for row in rows]
    except (TypeError, ValueError, IndexError, KeyError):
        return None


def _pick(expr: cst.BaseExpression, parameter: str) -> tuple[int, Callable[[Any], Any]] | None:
    """`r[2]` -> (2, identity); `float(r[2])` -> (2, float); else None."""
    cast: Callable[[Any], Any] | None = None
    if (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Name)
        and expr.func.value in _CASTS
        and len(expr.args) == 1
    ):
        cast, expr = _CASTS[expr.func.value], expr.args[0].value
    if not (isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Name) and expr.value.value == parameter):
        return None
    if len(expr.slice) != 1 or not isinstance(expr.slice[0].slice, cst.Index):
        return None
    index = expr.slice[0].slice.value
    if not isinstance(index, cst.Integer):
        return None
    return int(index.value), cast or (lambda v: v)


def _parallelized_to_df(graph: StageGraph, node: StageNode) -> tuple[list[str], list[Row]] | None:
    """`sc.parallelize([...]).toDF(["a", "b"])` (or `toDF("a", "b")`): names and rows, else None."""
    source: StageNode | None = node
    while source is not None and source.method in _ROW_KEEPING:
        source = graph.input_of(source)
    if source is None or source.method != "toDF" or source.call is None or not source.call.args:
        return None
    parent = graph.input_of(source)
    found = _literal_data(graph, parent, "parallelize", "c") if parent is not None else None
    if found is None:
        return None
    args = source.call.args
    names = (
        literal_names(args[0].value)
        if len(args) == 1
        else literal_names(cst.List([cst.Element(a.value) for a in args]))
    )
    rows = found[1]
    if not names or not all(isinstance(r, (tuple, list)) and len(r) == len(names) for r in rows):
        return None
    return names, [tuple(r) for r in rows]


def literal_pairs(graph: StageGraph, node: StageNode) -> list[Row] | None:
    """The (key, value) pairs when `node`'s RDD is a literal list passed to `parallelize`
    (through filters only), else None."""
    found = _literal_data(graph, node, "parallelize", "c")
    if found is None:
        return None
    pairs = found[1]
    if not all(isinstance(p, tuple) and len(p) == 2 for p in pairs):
        return None
    return list(pairs)


def literal_count(graph: StageGraph, node: StageNode) -> int | None:
    """How many rows a literal `createDataFrame([...])` or `parallelize([...])` source holds, else None."""
    for method, keyword in (("createDataFrame", "data"), ("parallelize", "c")):
        if node.method == method:
            found = _literal_data(graph, node, method, keyword)
            return len(found[1]) if found is not None else None
    return None


def _literal_data(
    graph: StageGraph, node: StageNode, method: str, keyword: str
) -> tuple[StageNode, list[Any] | tuple[Any, ...]] | None:
    """(the `method` stage, its first argument's value) when `node`'s rows come from that stage
    (through filters only) and the argument is a literal list or tuple, else None."""
    source: StageNode | None = node
    while source is not None and source.method in _ROW_KEEPING:
        source = graph.input_of(source)
    if source is None or source.method != method or source.call is None:
        return None
    given = call_argument(source.call, 0, keyword)
    data = _resolve(graph, given, source) if given is not None else None
    if data is None:
        return None
    value = _value(data) if method != "createDataFrame" else _value(data) or _mapped_parallelized(graph, data, source)
    return (source, value) if isinstance(value, (list, tuple)) else None


class _Unreadable(Exception):
    pass


# Constructors whose value is fixed by their literal arguments: rows of dates and timestamps are
# still literal data. Calls are compared by their source text, so `datetime(2022, 1, 1)` written
# twice is one value (equal values written differently count as different: no tie is invented).
_PURE_CONSTRUCTORS = frozenset({"datetime", "date", "time", "timedelta", "Decimal", "Timestamp"})


class Constructed(str):
    """A pure constructor call in literal data, standing for its value by its source text."""


def _value(expr: cst.BaseExpression) -> object:
    """The Python value of literal data (lists, tuples, dicts, constants, pure constructor
    calls with literal arguments), or None when any part is not literal."""
    try:
        return _read(expr)
    except (_Unreadable, ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _read(expr: cst.BaseExpression) -> object:
    if isinstance(expr, (cst.List, cst.Tuple)):
        if any(isinstance(e, cst.StarredElement) for e in expr.elements):
            raise _Unreadable
        items = [_read(e.value) for e in expr.elements]
        return items if isinstance(expr, cst.List) else tuple(items)
    if isinstance(expr, cst.Call):
        callee = expr.func.attr.value if isinstance(expr.func, cst.Attribute) else getattr(expr.func, "value", None)
        if callee not in _PURE_CONSTRUCTORS or any(a.star or a.keyword is not None for a in expr.args):
            raise _Unreadable
        for arg in expr.args:
            _read(arg.value)  # every argument literal
        return Constructed(cst.Module([]).code_for_node(expr))
    return ast.literal_eval(cst.Module([]).code_for_node(expr))


def _dict_rows(rows: list[Any] | tuple[Any, ...]) -> tuple[list[str], list[Row]] | None:
    if not rows or not all(isinstance(r, dict) for r in rows):
        return None
    names = list(rows[0])
    if not all(isinstance(n, str) for n in names) or any(set(r) != set(names) for r in rows):
        return None
    return names, [tuple(r[n] for n in names) for r in rows]


_COLUMN_ADDING = frozenset({"withColumn", "withColumns"})


def duplicates_identical(graph: StageGraph, node: StageNode, subset: tuple[str, ...]) -> bool | None:
    """Do the literal rows sharing a subset value agree on every column? None: not literal.

    Columns added on the way (`withColumn`) keep the answer when they leave the subset alone: no
    duplicates stay none, and identical duplicates stay identical unless a column added to them is
    random or a UDF (which may be)."""
    deterministic = True
    source: StageNode | None = node
    while source is not None and source.method in _COLUMN_ADDING:
        written = written_columns(source)
        if written is None or set(written) & set(subset):
            return None
        if any(
            c.udf is not None or (c.spec is not None and c.spec.partitioning_dependent) for c in source.columns.calls
        ):
            deterministic = False
        source = graph.input_of(source)
    if source is None:
        return None
    found = literal_rows(graph, source)
    if found is None:
        return None
    names, rows = found
    if not set(subset) <= set(names):
        return None
    indices = [names.index(c) for c in subset]
    seen: dict[Row, Row] = {}
    for row in rows:
        key = tuple(row[i] for i in indices)
        if key in seen and (seen[key] != row or not deterministic):
            return False
        seen.setdefault(key, row)
    return True


def written_columns(node: StageNode) -> list[str] | None:
    """The columns `withColumn("c", ...)` / `withColumns({"c": ...})` write, when spelled out."""
    if node.call is None or not node.call.args:
        return None
    first = node.call.args[0].value
    if node.method == "withColumn":
        return (
            [first.evaluated_value]
            if isinstance(first, cst.SimpleString) and isinstance(first.evaluated_value, str)
            else None
        )
    if isinstance(first, cst.Dict):
        keys = [e.key for e in first.elements if isinstance(e, cst.DictElement)]
        values = [k.evaluated_value for k in keys if isinstance(k, cst.SimpleString)]
        names = [v for v in values if isinstance(v, str)]
        if len(names) == len(first.elements):
            return names
    return None
