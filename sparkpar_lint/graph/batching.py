"""Grouped functions that use their group only as a batch of rows: every row they return comes
from one input row (`pdf.apply(row_fn, axis=1)` with the grouping column dropped), or they only
count the rows (`for _ in range(len(pdf))`). Which rows share a group then changes how the work is
split, never a returned value: grouping by `spark_partition_id()` to batch a generator is safe.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from sparkpar_lint.graph.user_functions import parameter_names
from sparkpar_lint.graph.visiting import visit


def batches_rows_only(function: cst.FunctionDef | cst.Lambda, column: str) -> bool:
    """`function(pdf)` (or `function(key, pdf)` with the key unused) reads `pdf` only row by row
    with `column` dropped from the result, or only to count rows it never numbers."""
    params = parameter_names(function)
    if not 1 <= len(params) <= 2:
        return False
    frame = params[-1]
    names = _Names()
    visit(function.body, names)
    if len(params) == 2 and names.count.get(params[0], 0):
        return False  # the group key (here the partition id) reaches the result
    allowed = _AllowedUses(frame, column)
    visit(function.body, allowed)
    counters = allowed.counters
    if any(names.count.get(c, 0) != allowed.counter_uses.get(c, 0) + 1 for c in counters):
        return False  # a row count used for more than a loop bound
    if any(names.count.get(t, 0) != 1 for t in allowed.loop_targets):
        return False  # the loop numbers its rows
    return names.count.get(frame, 0) == len(allowed.ids) > 0


class _Names(cst.CSTVisitor):
    def __init__(self) -> None:
        self.count: dict[str, int] = {}

    def visit_Name(self, node: cst.Name) -> None:
        self.count[node.value] = self.count.get(node.value, 0) + 1

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        visit(node.value, self)  # `x.name` reads x, not a variable `name`
        return False


def _is_frame(node: cst.BaseExpression, frame: str) -> bool:
    return isinstance(node, cst.Name) and node.value == frame


def _drops(call: cst.Call, column: str) -> bool:
    """`.drop(...)` naming `column` (a string, or a list of strings)."""
    for arg in call.args:
        value = arg.value
        items = [e.value for e in value.elements] if isinstance(value, (cst.List, cst.Tuple)) else [value]
        if any(isinstance(i, cst.SimpleString) and i.evaluated_value == column for i in items):
            return True
    return False


_ROW_AXIS = m.Arg(
    keyword=m.Name("axis"), value=m.Integer("1") | m.SimpleString('"columns"') | m.SimpleString("'columns'")
)


class _AllowedUses(cst.CSTVisitor):
    """The uses of the frame that see one row at a time, or only the number of rows."""

    def __init__(self, frame: str, column: str) -> None:
        self.frame = frame
        self.column = column
        self.ids: set[int] = set()
        self.counters: set[str] = set()  # n = len(pdf)
        self.counter_uses: dict[str, int] = {}  # range(n)
        self.loop_targets: list[str] = []

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        # pdf.apply(row_fn, axis=1).drop([..., column])
        if (
            isinstance(func, cst.Attribute)
            and m.matches(func, m.Attribute(attr=m.Name("drop")))
            and _drops(node, self.column)
        ):
            inner = func.value
            if (
                isinstance(inner, cst.Call)
                and isinstance(inner.func, cst.Attribute)
                and m.matches(inner.func, m.Attribute(attr=m.Name("apply")))
                and _is_frame(inner.func.value, self.frame)
                and any(m.matches(a, _ROW_AXIS) for a in inner.args)
            ):
                self.ids.add(id(inner.func.value))

    def visit_Assign(self, node: cst.Assign) -> None:
        # n = len(pdf)
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name) and self._length(node.value):
            self.counters.add(node.targets[0].target.value)

    def visit_For(self, node: cst.For) -> None:
        self._loop(node.target, node.iter)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._loop(node.target, node.iter)

    def _loop(self, target: cst.BaseExpression, iterable: cst.BaseExpression) -> None:
        # for _ in range(n) / range(len(pdf)): as many rows as the group has, numbered by nothing
        if not (
            isinstance(iterable, cst.Call)
            and m.matches(iterable, m.Call(func=m.Name("range")))
            and len(iterable.args) == 1
        ):
            return
        bound = iterable.args[0].value
        if isinstance(bound, cst.Name) and bound.value in self.counters:
            self.counter_uses[bound.value] = self.counter_uses.get(bound.value, 0) + 1
        elif not self._length(bound):
            return
        if isinstance(target, cst.Name):
            self.loop_targets.append(target.value)

    def _length(self, expr: cst.BaseExpression) -> bool:
        if (
            isinstance(expr, cst.Call)
            and m.matches(expr, m.Call(func=m.Name("len")))
            and len(expr.args) == 1
            and _is_frame(expr.args[0].value, self.frame)
        ):
            self.ids.add(id(expr.args[0].value))
            return True
        return False
