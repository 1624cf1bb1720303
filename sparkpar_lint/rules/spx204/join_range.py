"""Whether a stream-stream join's condition bounds how far apart the two sides' event times may be."""

from __future__ import annotations

import re

import libcst as cst
import libcst.matchers as m

from sparkpar_lint.graph.stage_graph import StageGraph, StageNode

# A condition that bounds how far apart matching rows' times may be.
_RANGE_TEXT = re.compile(r"<|>|\bbetween\b|\binterval\b|\bwindow\b", re.IGNORECASE)


def join_time_range(graph: StageGraph, node: StageNode) -> bool | None:
    """Whether the join condition bounds the two sides' event times: False for column names or
    equalities only, True for a comparison, `between`, an interval or a window, None when the
    condition is built elsewhere (a helper, a parameter, a name bound more than once)."""
    condition = join_condition(graph, node)
    if condition is None or node.call is None:
        return None
    bounded = _bounds_time(condition)
    if bounded is True:
        return True
    # A part held in a name, `(orders.id == payments.id) & within_a_day`: read where it is bound.
    parts = [
        _held_by(graph, operand, node.call)
        for operation in m.findall(condition, m.BinaryOperation())
        if isinstance(operation, cst.BinaryOperation)
        for operand in (operation.left, operation.right)
        if isinstance(operand, cst.Name)
    ]
    held = [part for part in parts if part is not None]
    if len(held) < len(parts):
        return None
    return True if any(_bounds_time(part) for part in held) else bounded


def join_condition(graph: StageGraph, node: StageNode) -> cst.BaseExpression | None:
    """The join's one condition argument (second positional or `on=`), or the expression a name
    there holds, or None."""
    call = node.call
    if call is None:
        return None
    conditions = [a.value for a in call.args[1:2] if a.keyword is None]
    conditions += [a.value for a in call.args if a.keyword is not None and a.keyword.value == "on"]
    if len(conditions) != 1:
        return None
    condition = conditions[0]
    return _held_by(graph, condition, call) if isinstance(condition, cst.Name) else condition


def _held_by(graph: StageGraph, name: cst.Name, call: cst.Call) -> cst.BaseExpression | None:
    """The value of `name = <expr>` when that is the name's only binding in the function (or module
    level) that holds `call`, and comes before it."""
    scope = _enclosing_def(graph, call)
    bindings = [
        n
        for kind in (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.For, cst.NamedExpr, cst.Param)
        for n in graph.nodes_of(kind)
        if name.value in _bound_names(n) and _enclosing_def(graph, n) is scope
    ]
    if len(bindings) != 1 or not isinstance(bindings[0], cst.Assign) or len(bindings[0].targets) != 1:
        return None
    if graph.positions[bindings[0]].end.line >= graph.positions[call].start.line:
        return None
    return bindings[0].value


def _bound_names(node: cst.CSTNode) -> set[str]:
    if isinstance(node, cst.Param):
        return {node.name.value}
    targets: list[cst.BaseExpression]
    if isinstance(node, cst.Assign):
        targets = [t.target for t in node.targets]
    elif isinstance(node, (cst.For, cst.NamedExpr, cst.AnnAssign, cst.AugAssign)):
        targets = [node.target]
    else:
        return set()
    return {n.value for t in targets for n in m.findall(t, m.Name()) if isinstance(n, cst.Name)}


def _enclosing_def(graph: StageGraph, node: cst.CSTNode) -> cst.CSTNode | None:
    """The innermost `def` or lambda around `node` (a parameter belongs to its own), None at module level."""
    where = graph.positions[node]
    holders = [
        d
        for d in [*graph.nodes_of(cst.FunctionDef), *graph.nodes_of(cst.Lambda)]
        if d is not node
        and (graph.positions[d].start.line, graph.positions[d].start.column) <= (where.start.line, where.start.column)
        and (graph.positions[d].end.line, graph.positions[d].end.column) >= (where.end.line, where.end.column)
    ]
    return max(holders, key=lambda d: (graph.positions[d].start.line, graph.positions[d].start.column), default=None)


def _bounds_time(condition: cst.BaseExpression) -> bool | None:
    if isinstance(condition, cst.SimpleString):
        return bool(_RANGE_TEXT.search(_text(condition)))
    if isinstance(condition, (cst.List, cst.Tuple)):
        parts = [_bounds_time(e.value) for e in condition.elements]
        return None if None in parts else any(parts)
    if isinstance(condition, cst.Name):
        return None
    if m.findall(
        condition,
        m.Comparison(
            comparisons=[
                m.AtLeastN(
                    m.ComparisonTarget(
                        operator=m.LessThan() | m.GreaterThan() | m.LessThanEqual() | m.GreaterThanEqual()
                    ),
                    n=1,
                )
            ]
        ),
    ):
        return True
    strings = m.findall(condition, m.SimpleString())
    if any(_RANGE_TEXT.search(_text(text)) for text in strings if isinstance(text, cst.SimpleString)):
        return True
    if m.findall(condition, m.Call(func=m.Attribute(attr=m.Name("between")) | m.Name("window"))):
        return True
    names = m.findall(condition, m.Name())
    if any(isinstance(n, cst.Name) and n.value in ("window", "between") for n in names):
        return True
    comparisons = m.findall(condition, m.Comparison())
    return False if comparisons else None


def _text(string: cst.SimpleString) -> str:
    """The string's value; a bytes literal, which no condition is, reads as empty."""
    value = string.evaluated_value
    return value if isinstance(value, str) else ""
