"""Column functions inside SQL expression strings (`expr(...)`, `selectExpr(...)`), parsed with
sqlglot like whole queries, so a window (`first(v) OVER (...)`) and the exact place of each call
inside the string are known. A string sqlglot cannot read names no function."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import libcst as cst

from sparkpar_lint.graph.stage_graph import ColumnCall
from sparkpar_lint.sql.parse import parse
from sparkpar_lint.sql.stages import SqlContext, calls_in
from sparkpar_lint.sql.text import Position, SqlText, sql_text

# graph/builder.py's GraphBuilder: importing it, even for typing, would be an import cycle.
GraphBuilder = Any

if TYPE_CHECKING:
    from sparkpar_lint.graph.values import StringValue


def column_calls(value: StringValue, builder: GraphBuilder) -> list[ColumnCall]:
    """`value` is a StringValue; spans point into its literal when the literal can be located."""
    text = _located(value, builder)
    parsed = parse(text.text)
    if parsed is None or len(parsed.statements) != 1:
        return []
    ctx = SqlContext(parsed, text, builder.graph, builder.catalogue, builder.derive_flow, {})
    # The string expression itself: fixes write into its literal parts (sql/literal_edit.py).
    node = getattr(value, "node", None)
    ctx.literal = node.value if isinstance(node, cst.Arg) else node
    return calls_in(ctx, parsed.statements, {})


def _located(value: StringValue, builder: GraphBuilder) -> SqlText:
    node = getattr(value, "node", None)
    if node is not None:
        located = sql_text(node, _start_of(builder), builder.module.code_for_node)
        if located is not None and located.text == value.text:
            return located
    # No literal to read positions from (a value built elsewhere): every character at the value.
    return SqlText(value.text, [(value, 0, 0)] * (len(value.text) + 1), lambda v: (v.span.line, v.span.column))


def _start_of(builder: GraphBuilder) -> Callable[[cst.CSTNode], Position]:
    def start_of(node: cst.CSTNode) -> Position:
        where = builder.graph.positions.get(node)  # None: a node of another tree
        return (where.start.line, where.start.column) if where is not None else (1, 0)

    return start_of
