"""Column functions inside SQL expression strings (`expr(...)`, `selectExpr(...)`), parsed with
sqlglot like whole queries, so a window (`first(v) OVER (...)`) and the exact place of each call
inside the string are known. A string sqlglot cannot read names no function."""

from __future__ import annotations

from sparkpar_lint.graph.stage_graph import ColumnCall
from sparkpar_lint.sql.parse import parse
from sparkpar_lint.sql.stages import SqlContext, calls_in
from sparkpar_lint.sql.text import SqlText, sql_text


def column_calls(value, builder) -> list[ColumnCall]:
    """`value` is a StringValue; spans point into its literal when the literal can be located."""
    text = _located(value, builder)
    parsed = parse(text.text)
    if parsed is None or len(parsed.statements) != 1:
        return []
    ctx = SqlContext(parsed, text, builder.graph, builder.catalogue, builder.derive_flow, {})
    return calls_in(ctx, parsed.statements, {})


def _located(value, builder) -> SqlText:
    node = getattr(value, "node", None)
    if node is not None:
        positions = builder.graph.positions
        try:
            located = sql_text(node, lambda n: (positions[n].start.line, positions[n].start.column), builder.module.code_for_node)
        except KeyError:
            located = None
        if located is not None and located.text == value.text:
            return located
    # No literal to read positions from (a value built elsewhere): every character at the value.
    start = (value.span.line, value.span.column)
    return SqlText(value.text, [start] * (len(value.text) + 1))
