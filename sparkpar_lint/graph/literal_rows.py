"""Rows a job spells out itself: `spark.createDataFrame([(1, "a"), ...], ["id", "name"])`.

When the data is literal, "could two rows differ?" has an exact answer: read the rows.
"""

from __future__ import annotations

import ast

import libcst as cst

from sparkpar_lint.graph.stage_graph import StageGraph, StageNode
from sparkpar_lint.graph.uniqueness import literal_names

_ROW_KEEPING = frozenset({"filter", "where", "cache", "persist", "localCheckpoint", "checkpoint", "alias"})


def literal_rows(graph: StageGraph, node: StageNode) -> tuple[list[str], list[tuple]] | None:
    """(column names, rows) when `node`'s rows are a literal list passed to `createDataFrame`
    (through filters only), else None."""
    source = node
    while source is not None and source.method in _ROW_KEEPING:
        source = graph.input_of(source)
    if source is None or source.method != "createDataFrame" or source.call is None or len(source.call.args) < 2:
        return None
    data = _resolve(graph, source.call.args[0].value, source)
    schema = _resolve(graph, source.call.args[1].value, source)
    if data is None or schema is None:
        return None
    names = literal_names(schema) if isinstance(schema, (cst.List, cst.Tuple)) else _ddl_names(schema)
    try:
        rows = ast.literal_eval(cst.Module([]).code_for_node(data))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    if not names or not isinstance(rows, (list, tuple)):
        return None
    if not all(isinstance(r, (tuple, list)) and len(r) == len(names) for r in rows):
        return None
    return names, [tuple(r) for r in rows]


def _ddl_names(schema: cst.BaseExpression) -> list[str] | None:
    if isinstance(schema, cst.SimpleString) and isinstance(schema.evaluated_value, str):
        parts = [p.strip().split() for p in schema.evaluated_value.split(",")]
        return [p[0].strip("`") for p in parts] if all(len(p) >= 2 for p in parts) else None
    return None


def _resolve(graph: StageGraph, expr: cst.BaseExpression, at: StageNode) -> cst.BaseExpression | None:
    """A literal in place, or the literal last assigned to the name before `at`."""
    if not isinstance(expr, cst.Name):
        return expr
    best = None
    line = at.span.line
    for candidate in graph.positions:
        if isinstance(candidate, cst.Assign) and len(candidate.targets) == 1:
            target = candidate.targets[0].target
            if isinstance(target, cst.Name) and target.value == expr.value:
                where = graph.positions[candidate].start.line
                if where < line and (best is None or where > best[0]):
                    best = (where, candidate.value)
    return best[1] if best is not None else None


def duplicates_identical(graph: StageGraph, node: StageNode, subset: tuple[str, ...]) -> bool | None:
    """Do the literal rows sharing a subset value agree on every column? None: not literal."""
    found = literal_rows(graph, node)
    if found is None:
        return None
    names, rows = found
    if not set(subset) <= set(names):
        return None
    indices = [names.index(c) for c in subset]
    seen: dict[tuple, tuple] = {}
    for row in rows:
        key = tuple(row[i] for i in indices)
        if key in seen and seen[key] != row:
            return False
        seen.setdefault(key, row)
    return True
