"""The hash keys of a join: its `on` column names, or the columns its condition compares.

Spark hash-partitions both sides of an equi-join by the columns its equality conjuncts compare
(`a.id = b.id AND a.x > 3`: key `id`; the rest is a filter after the match). The condition can be
written as SQL text (`F.expr("a.id = b.id")`, parsed with sqlglot) or as Column expressions
(`F.col("a.id") == F.col("b.id")`, `a["id"] == b["id"]`, `a.id == b.id`, `x.eqNullSafe(y)`,
conjuncts joined by `&`). A key is kept only where both sides name the same column, so that one
`repartition(n, "id")` is right on either input; a condition with a top-level OR, or no equality
of same-named columns, has no key (the join stays "unknown state" in the plan).
"""

from __future__ import annotations

import libcst as cst


def join_keys(call: cst.Call) -> tuple[str, ...]:
    """Key columns of `df.join(other, on, ...)` when `on` is a condition; () if none is read."""
    condition = _on_argument(call)
    if condition is None:
        return ()
    names = _names(condition)
    if names is not None:
        return names
    pairs = (
        _sql_pairs(condition)
        if isinstance(condition, cst.Call) and _is_expr_call(condition)
        else _column_pairs(condition)
    )
    if pairs is None:
        return ()
    return tuple(dict.fromkeys(left for left, right in pairs if left == right))


def _names(node) -> tuple[str, ...] | None:
    """`on="id"` or `on=["id", "ad"]`: the columns both sides share, by name."""
    name = _string(node)
    if name is not None:
        return (name,)
    if isinstance(node, (cst.List, cst.Tuple)) and node.elements:
        names = [_string(e.value) for e in node.elements]
        return tuple(n for n in names if n) if all(names) else None
    return None


def _on_argument(call: cst.Call) -> cst.BaseExpression | None:
    positional = [a for a in call.args if a.keyword is None and not a.star]
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "on":
            return arg.value
    return positional[1].value if len(positional) > 1 else None


def _callee(func) -> str:
    if isinstance(func, cst.Name):
        return func.value
    return func.attr.value if isinstance(func, cst.Attribute) else ""


def _string(node) -> str | None:
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _is_expr_call(node) -> bool:
    return isinstance(node, cst.Call) and _callee(node.func) == "expr" and len(node.args) == 1


def _sql_pairs(call: cst.Call) -> list[tuple[str, str]] | None:
    text = _string(call.args[0].value)
    if text is None:
        return None
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(text, read="spark")
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError):
        return None
    pairs = []
    for conjunct in tree.flatten() if isinstance(tree, exp.And) else [tree]:
        conjunct = conjunct.unnest()
        if isinstance(conjunct, (exp.EQ, exp.NullSafeEQ)):
            left, right = conjunct.this, conjunct.expression
            if isinstance(left, exp.Column) and isinstance(right, exp.Column):
                pairs.append((left.name, right.name))
    return pairs


def _column_pairs(node) -> list[tuple[str, str]] | None:
    pairs: list[tuple[str, str]] = []
    for conjunct in _conjuncts(node):
        if isinstance(conjunct, cst.Comparison) and len(conjunct.comparisons) == 1:
            if isinstance(conjunct.comparisons[0].operator, cst.Equal):
                left, right = _column(conjunct.left), _column(conjunct.comparisons[0].comparator)
                if left and right:
                    pairs.append((left, right))
        elif isinstance(conjunct, cst.Call) and _callee(conjunct.func) == "eqNullSafe" and len(conjunct.args) == 1:
            assert isinstance(conjunct.func, cst.Attribute)
            left, right = _column(conjunct.func.value), _column(conjunct.args[0].value)
            if left and right:
                pairs.append((left, right))
    return pairs


def _conjuncts(node):
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitAnd):
        return [*_conjuncts(node.left), *_conjuncts(node.right)]
    return [node]


def _column(node) -> str | None:
    """The column a Column expression names, qualifier dropped: col("a.id"), a["id"], a.id."""
    name = None
    if isinstance(node, cst.Call) and _callee(node.func) in ("col", "column") and len(node.args) == 1:
        name = _string(node.args[0].value)
    elif isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
        name = _string(node.slice[0].slice.value)
    elif isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name):
        name = node.attr.value
    if not name:
        return None
    return name.rsplit(".", 1)[-1].strip("`")
