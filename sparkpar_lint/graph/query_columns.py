"""The columns a JDBC read returns when its SQL is in the code: `option("dbtable", "(SELECT a, b
FROM t) AS x")` or `option("query", "SELECT a, b FROM t")`, the text written out, built in an
f-string, or held in a variable. Placeholders (`{schema}.{table}`) stand for names; a `*`, or SQL
that does not parse, answers "don't know".
"""

from __future__ import annotations

import libcst as cst

from sparkpar_lint.graph.assignments import assigned_value
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode

_PLACEHOLDER = "sparkpar_placeholder"
_MAX_DEPTH = 8


def jdbc_query_columns(graph: StageGraph, node: StageNode) -> set[str] | None:
    """Column names of `spark.read.format("jdbc")...load()` whose dbtable/query is a readable SELECT."""
    if node.method != "load" or node.call is None:
        return None
    options = _reader_options(node.call)
    if options.get("format") != "jdbc":
        return None
    for key, wrap in (("query", "{}"), ("dbtable", "SELECT * FROM {}")):
        expr = options.get(key)
        if isinstance(expr, cst.BaseExpression):
            text = _text(graph, expr, node, 0)
            return _select_names(wrap.format(text), subquery=key == "dbtable") if text is not None else None
    return None


def _reader_options(call: cst.Call) -> dict[str, cst.BaseExpression | str | bytes | None]:
    """`.format(...)` and `.option(k, v)` calls on the way from the session to `load()`."""
    found: dict[str, cst.BaseExpression | str | bytes | None] = {}
    receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
    while isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute):
        method = receiver.func.attr.value
        args = [a for a in receiver.args if a.keyword is None]
        if method == "format" and args and isinstance(args[0].value, cst.SimpleString):
            found.setdefault("format", args[0].value.evaluated_value)
        elif method == "option" and len(args) == 2 and isinstance(args[0].value, cst.SimpleString):
            found.setdefault(str(args[0].value.evaluated_value).lower(), args[1].value)
        receiver = receiver.func.value
    return found


def _text(graph: StageGraph, expr: cst.BaseExpression, at: StageNode, depth: int) -> str | None:
    if depth > _MAX_DEPTH:
        return None
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    if isinstance(expr, cst.ConcatenatedString):
        left, right = _text(graph, expr.left, at, depth + 1), _text(graph, expr.right, at, depth + 1)
        return left + right if left is not None and right is not None else None
    if isinstance(expr, cst.FormattedString):
        parts = []
        for part in expr.parts:
            if isinstance(part, cst.FormattedStringText):
                parts.append(part.value)
            elif isinstance(part, cst.FormattedStringExpression):
                inner = _text(graph, part.expression, at, depth + 1) if isinstance(part.expression, cst.Name) else None
                parts.append(inner if inner is not None else _PLACEHOLDER)
        return "".join(parts)
    if isinstance(expr, cst.Name):
        held = assigned_value(graph, expr, at)
        return _text(graph, held, at, depth + 1) if held is not None and held is not expr else None
    return None


def _select_names(sql: str, subquery: bool) -> set[str] | None:
    import sqlglot  # only for reads that carry SQL
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(sql, read="spark")
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError, ValueError):
        return None
    if subquery:
        inner = tree.find(exp.Subquery)
        if inner is None:
            return None
        tree = inner.this
    if not isinstance(tree, exp.Select):
        return None
    names = set()
    for projection in tree.expressions:
        name = projection.alias_or_name
        if isinstance(projection, exp.Star) or isinstance(projection.unalias(), exp.Star) or not name or name == "*":
            return None
        names.add(name)
    return names
