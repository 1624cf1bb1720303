"""Per-key state inside partition-level functions (`mapPartitions`, `mapInPandas`,
`foreachPartition`, ...): a container written under a field of the incoming rows, or a pandas
`groupby` of the incoming frame. Such a function is OpKeyedOrdered/Unordered in the data-trace
paper's terms and is only right when every row of a key reaches the same partition.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from sparkpar_lint.graph.passed_function import UserFunction
from sparkpar_lint.graph.user_functions import MUTATING_METHODS, parameter_names
from sparkpar_lint.graph.visiting import visit

# Iterating these on a frame or row yields records: `for r in pdf.itertuples()`.
_RECORD_ITERATORS = frozenset({"itertuples", "iterrows", "to_dict", "to_pylist", "to_pandas", "to_batches", "collect"})
_KEYED_WRITES = frozenset({"add", "setdefault", "discard", "remove", "pop"})


@dataclass(frozen=True)
class KeyedState:
    container: str  # the dict/set/list, or "groupby" for a pandas groupby of the input
    key: str  # the field: a column name, or "[0]" for a pair's key
    node: cst.CSTNode  # where the state is written


def _literal(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    if isinstance(expr, (cst.List, cst.Tuple)) and expr.elements:
        return _literal(expr.elements[0].value)
    return None


class _Tracker(cst.CSTVisitor):
    def __init__(self, incoming: str) -> None:
        self.records: dict[str, int | None] = {incoming: None}  # name -> id of the loop binding it
        self.fields: dict[str, tuple[str, int | None]] = {}  # name -> (field, loop)
        self.assigned_in: dict[str, tuple[int, ...]] = {}  # container -> loops around its creation
        self.loops: list[int] = []
        self.found: list[KeyedState] = []

    # -- what expressions mean

    def field_of(self, expr: cst.BaseExpression) -> tuple[str, int | None] | None:
        if isinstance(expr, cst.Name):
            return self.fields.get(expr.value)
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value in self.records:
            return expr.attr.value, self.records[expr.value.value]
        if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Name) and expr.value.value in self.records:
            index = expr.slice[0].slice if len(expr.slice) == 1 else None
            if isinstance(index, cst.Index):
                if isinstance(index.value, cst.Integer):
                    return f"[{index.value.value}]", self.records[expr.value.value]
                name = _literal(index.value)
                if name is not None:
                    return name, self.records[expr.value.value]
            return None
        if isinstance(expr, cst.Tuple):
            return next((f for e in expr.elements if (f := self.field_of(e.value)) is not None), None)
        if isinstance(expr, cst.Call):
            # str(r.user), r.user.lower(): still keyed by that field.
            parts = [a.value for a in expr.args]
            if isinstance(expr.func, cst.Attribute):
                parts.insert(0, expr.func.value)
            return next((f for p in parts if (f := self.field_of(p)) is not None), None)
        if isinstance(expr, cst.Attribute):
            return self.field_of(expr.value)
        return None

    def _is_record_source(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Name):
            return expr.value in self.records
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            return expr.func.attr.value in _RECORD_ITERATORS and self._is_record_source(expr.func.value)
        return False

    def _groupby_key(self, expr: cst.BaseExpression) -> str | None:
        if (
            isinstance(expr, cst.Call)
            and isinstance(expr.func, cst.Attribute)
            and expr.func.attr.value == "groupby"
            and self._is_record_source(expr.func.value)
            and expr.args
        ):
            return _literal(expr.args[0].value)
        return None

    # -- bindings

    def _bind_loop_target(self, target: cst.BaseExpression, iterated: cst.BaseExpression, loop: int) -> None:
        group_key = self._groupby_key(iterated)
        if group_key is not None and isinstance(target, cst.Tuple) and target.elements:
            first = target.elements[0].value
            if isinstance(first, cst.Name):
                self.fields[first.value] = (group_key, loop)
            return
        if not self._is_record_source(iterated):
            return
        if isinstance(target, cst.Name):
            self.records[target.value] = loop
        elif isinstance(target, (cst.Tuple, cst.List)):
            for index, element in enumerate(target.elements):
                if isinstance(element.value, cst.Name):
                    # `for k, v in pairs`: k is the pair's key; `for i, row in pdf.iterrows()`: row.
                    self.fields[element.value.value] = (f"[{index}]", loop)
                    self.records[element.value.value] = loop

    def visit_For(self, node: cst.For) -> None:
        self.loops.append(id(node))
        self._bind_loop_target(node.target, node.iter, id(node))

    def leave_For(self, original_node: cst.For) -> None:
        self.loops.pop()

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._bind_loop_target(node.target, node.iter, id(node))

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if not isinstance(target.target, cst.Name):
                self._write(target.target, node)
                continue
            name = target.target.value
            field = self.field_of(node.value)
            if field is not None:
                self.fields[name] = field
            else:
                self.assigned_in[name] = tuple(self.loops)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._write(node.target, node)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute):
            return
        key = self._groupby_key(node)
        if key is not None:
            self.found.append(KeyedState("groupby", key, node))
        elif func.attr.value in _KEYED_WRITES and isinstance(func.value, cst.Name) and node.args:
            self._keyed(func.value.value, node.args[0].value, node)
        elif func.attr.value in MUTATING_METHODS and isinstance(func.value, cst.Subscript):
            self._write(func.value, node)  # state[r.user].append(r.ts)

    def _write(self, target: cst.BaseExpression, where: cst.CSTNode) -> None:
        if isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name) and len(target.slice) == 1:
            index = target.slice[0].slice
            if isinstance(index, cst.Index):
                self._keyed(target.value.value, index.value, where)

    def _keyed(self, container: str, key: cst.BaseExpression, where: cst.CSTNode) -> None:
        if container in self.records:
            return  # writing into the row itself
        field = self.field_of(key)
        if field is None:
            return
        name, loop = field
        if loop is not None and loop in self.assigned_in.get(container, ()):
            return  # a fresh container per row is not state
        self.found.append(KeyedState(container, name, where))


def keyed_state(function: UserFunction) -> list[KeyedState]:
    """Per-key state the partition-level function keeps, in source order."""
    params = parameter_names(function.node)
    if not params:
        return []
    incoming = params[1] if function.role == "partition-with-index" and len(params) > 1 else params[0]
    tracker = _Tracker(incoming)
    visit(function.node.body, tracker)
    return tracker.found
