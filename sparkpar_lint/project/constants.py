"""A module's literal constants (`FRACTION = 0.1`, `KEYS = ["id"]`, `conf = {"fraction": 0.1}`) as
plain data, and their values again in an importer's analysis.

A notebook that `%run`s a settings notebook, or a module that star-imports a settings module,
reads these names as if assigned in its own text: a subset list, a partition count or a settings
dict then means what it says instead of being unknown.
"""

from __future__ import annotations

import libcst as cst

from sparkpar_lint.graph.values import UNKNOWN, DictValue, NumberValue, SequenceValue, StringValue, Value
from sparkpar_lint.graph.visiting import children
from sparkpar_lint.model import Span

# Larger literals are data, not settings: left out so summaries stay small.
_MAX_ITEMS = 256  # in one constant, all levels together
_MAX_DEPTH = 4

Literal = str | int | float | bool | None | list | dict


class _NotLiteral(Exception):
    pass


def module_constants(module: cst.Module) -> dict[str, Literal]:
    """Names the module's top level last assigns a literal; a name rebound to anything else at the
    top level (or assigned in a loop, a branch or by `+=`) is left out: its value is not one text."""
    found: dict[str, Literal] = {}
    rebound: set[str] = set()
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            rebound.update(_bound_names(statement))
            continue
        for small in statement.body:
            if isinstance(small, cst.Assign) and len(small.targets) == 1:
                target = small.targets[0].target
                if isinstance(target, cst.Name):
                    try:
                        found[target.value] = _literal(small.value, 0, [_MAX_ITEMS])
                        rebound.discard(target.value)
                    except _NotLiteral:
                        found.pop(target.value, None)
                        rebound.add(target.value)
                    continue
            rebound.update(_bound_names(small))
    return {name: value for name, value in found.items() if name not in rebound}


def _bound_names(node: cst.CSTNode) -> set[str]:
    """Names a compound or non-literal statement may bind at the top level."""
    names: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, (cst.FunctionDef, cst.ClassDef)):
            names.add(current.name.value)
            continue  # their bodies bind their own names
        if isinstance(current, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For, cst.WithItem)):
            target = getattr(current, "target", None) or getattr(current, "asname", None)
            if isinstance(target, cst.Name):
                names.add(target.value)
            elif isinstance(target, cst.CSTNode):
                names.update(n.value for n in _names_in(target))
        stack.extend(children(current))
    return names


def _names_in(node: cst.CSTNode) -> list[cst.Name]:
    found = []
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Name):
            found.append(current)
        stack.extend(children(current))
    return found


def _literal(expr: cst.BaseExpression, depth: int, budget: list[int]) -> Literal:
    budget[0] -= 1
    if budget[0] < 0:
        raise _NotLiteral
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        if isinstance(value, str):
            return value
    elif isinstance(expr, (cst.Integer, cst.Float)):
        return expr.evaluated_value
    elif isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        if isinstance(expr.expression, (cst.Integer, cst.Float)):
            return -expr.expression.evaluated_value
    elif isinstance(expr, cst.Name) and expr.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[expr.value]
    elif depth < _MAX_DEPTH and isinstance(expr, (cst.List, cst.Tuple)):
        if all(isinstance(e, cst.Element) for e in expr.elements):
            return [_literal(e.value, depth + 1, budget) for e in expr.elements]
    elif depth < _MAX_DEPTH and isinstance(expr, cst.Dict):
        items: dict[str, Literal] = {}
        for element in expr.elements:
            if not isinstance(element, cst.DictElement):
                raise _NotLiteral
            key = _literal(element.key, depth + 1, budget)
            if not isinstance(key, str):
                raise _NotLiteral  # stored as JSON: string keys only
            items[key] = _literal(element.value, depth + 1, budget)
        return items
    raise _NotLiteral


def constant_value(value: Literal, span: Span) -> Value:
    """The analysis value of a stored constant, placed at the name that reads it."""
    if isinstance(value, str):
        return StringValue(value, span)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return NumberValue(value)
    if isinstance(value, list):
        return SequenceValue(tuple(constant_value(item, span) for item in value))
    if isinstance(value, dict):
        return DictValue(tuple((StringValue(k, span), constant_value(v, span)) for k, v in value.items()))
    return UNKNOWN
