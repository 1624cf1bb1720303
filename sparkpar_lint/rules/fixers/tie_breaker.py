"""The cheapest tie-breaker that decides the rows an order leaves tied.

Fixes that impose an order (SPX102 keeps the first row per key, SPX106 the first n) must decide
rows tied on the order columns. The last resort is the whole row as JSON, which orders any type
but serialises every row. Cheaper, where the file says enough:
- nothing, when the rows are unique on the columns that already decide (the order columns and
  the partition keys): no two rows tie;
- a `struct` of the columns, when a DDL schema in the file (`spark.read.schema("...")`,
  `createDataFrame(rows, "...")`) or a `StructType([StructField(...), ...])` (in place or in a
  variable bound once) gives every column a scalar type, which Spark orders (a map, which it does
  not, rules this out).
"""

from __future__ import annotations

import re

import libcst as cst

from sparkpar_lint.edits.code import column_function, string
from sparkpar_lint.edits.model import Imports
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode
from sparkpar_lint.graph.uniqueness import is_unique_on, literal_names
from sparkpar_lint.rules.fixers.ordering import whole_row
from sparkpar_lint.rules.fixers.struct_schema import bound_once as _bound_once
from sparkpar_lint.rules.fixers.struct_schema import struct_types

WHOLE_ROW = "then the whole row"
# Types Spark orders, as DDL spells them; containers are left to JSON rather than parsed.
_ORDERABLE = frozenset(
    {
        "string", "varchar", "char", "int", "integer", "bigint", "long", "smallint", "short",
        "tinyint", "byte", "double", "float", "real", "decimal", "dec", "numeric", "boolean",
        "bool", "date", "timestamp", "timestamp_ntz", "timestamp_ltz", "binary",
    }
)  # fmt: skip
# Stages whose output has exactly their input's columns.
_SAME_COLUMNS = frozenset(
    {
        "filter", "where", "orderBy", "sort", "sortWithinPartitions", "repartition",
        "repartitionByRange", "coalesce", "distinct", "dropDuplicates", "drop_duplicates",
        "limit", "withWatermark", "cache", "persist", "alias", "hint", "sample",
    }
)  # fmt: skip


def tie_breaker(
    graph: StageGraph, rows: StageNode | None, decided: tuple[str, ...], like: cst.Call
) -> tuple[cst.BaseExpression | None, Imports, str]:
    """(tie-breaker or None when none is needed, imports, what it is) for the rows of `rows`,
    of which the columns `decided` are already compared."""
    if rows is not None and decided and is_unique_on(graph, rows, decided):
        return None, (), f"no tie-breaker: the rows are unique on ({', '.join(decided)})"
    columns = typed_columns(graph, rows) if rows is not None else None
    if columns is not None:
        rest = [c for c in columns if c not in decided]
        if not rest:
            return None, (), "no tie-breaker: rows tied on every column are equal"
        struct, imports = column_function(like, "struct", [string(c) for c in rest])
        return struct, imports, f"then `struct({', '.join(rest)})`"
    tie, imports = whole_row(like)
    return tie, imports, WHOLE_ROW


def typed_columns(graph: StageGraph, node: StageNode) -> list[str] | None:
    """The output columns of `node`, when a DDL schema in this file types every one of them as
    orderable and every stage between keeps or selects them by name; else None."""
    types = column_types(graph, node)
    if types is None or any(t not in _ORDERABLE for t in types.values()):
        return None
    return list(types)


def column_types(graph: StageGraph, node: StageNode) -> dict[str, str | None] | None:
    """{output column of `node`: its DDL base type, None if the schema lacks it}, when the source
    reads with a DDL schema in this file and every stage between keeps or selects columns by name."""
    selected: list[str] | None = None
    for current in (node, *graph.upstream(node)):
        if current.spec is not None and current.spec.source and not current.inputs:
            schema = _source_schema(graph, current)
            if schema is None:
                return None
            return {n: schema.get(n) for n in (selected if selected is not None else schema)}
        if current.method == "select" and current.call is not None:
            names = [n for a in current.call.args for n in (literal_names(a.value) or [""]) if not a.keyword]
            if "" in names or "*" in names or not names or any(a.star for a in current.call.args):
                return None
            if selected is not None and not set(selected) <= set(names):
                return None
            selected = selected if selected is not None else names
        elif current.method not in _SAME_COLUMNS:
            return None
    return None


def _source_schema(graph: StageGraph, source: StageNode) -> dict[str, str] | None:
    """{column: base type} from the DDL string or `StructType([...])` the source reads with (in
    place, or in a variable the module binds once)."""
    call: cst.BaseExpression | None = source.call
    text = None
    while isinstance(call, cst.Call):
        given = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "schema"), None)
        func = call.func
        if given is None and isinstance(func, cst.Attribute):
            if func.attr.value == "schema" and call.args:
                given = call.args[0].value
            elif func.attr.value == "createDataFrame" and len(call.args) > 1 and call.args[1].keyword is None:
                given = call.args[1].value
        if isinstance(given, cst.Name):
            given = _bound_once(graph, given.value)
        if isinstance(given, cst.SimpleString) and isinstance(given.evaluated_value, str):
            text = given.evaluated_value
            break
        if isinstance(given, cst.Call):
            return struct_types(graph, given)
        call = func.value if isinstance(func, cst.Attribute) else None
    return _ddl_types(text) if text else None


def _ddl_types(text: str) -> dict[str, str] | None:
    """`"a string, b decimal(10, 2)"` → {"a": "string", "b": "decimal"}; None if not plain DDL."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "(<"
        depth -= ch in ")>"
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    types = {}
    for part in parts:
        match = re.fullmatch(r"\s*`?(\w+)`?\s*:?\s*([A-Za-z_]+)(\s*\(.*\))?(\s+not\s+null)?\s*", part, re.IGNORECASE)
        if match is not None:
            types[match.group(1)] = match.group(2).lower()
            continue
        # A container (`map<string, int>`, `array<...>`): named, but not ordered by this fix.
        named = re.fullmatch(r"\s*`?(\w+)`?\s*:?\s*\S.*", part, re.DOTALL)
        if named is None:
            return None
        types[named.group(1)] = "container"
    return types
