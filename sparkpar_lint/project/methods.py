"""What a class's methods do with their parameters, as plain data a subclass in another module
can use: which `self.` methods each one calls with which of its parameters, and where else it
reads them.

A template method in a base class (`def for_each_batch(self, df, epoch_id): ...
self._for_each_batch(df, epoch_id)`) hands the batch to the override a subclass defines in
another file; following the subclass's calls through the base needs only this much of it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import libcst as cst

from sparkpar_lint.graph.user_functions import is_bound_method, parameter_names


@dataclass(frozen=True)
class SelfCall:
    """`self.method(...)` in a method: the caller's parameter passed whole at each position
    (None: something else) and by keyword."""

    method: str
    args: tuple[str | None, ...] = ()
    kwargs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class MethodSummary:
    name: str
    params: tuple[str, ...] = ()  # after `self`
    self_calls: tuple[SelfCall, ...] = ()
    # Every other read of a parameter: (parameter, names of the calls it sits in, outermost first).
    reads: tuple[tuple[str, tuple[str, ...]], ...] = ()


def class_methods(klass: cst.ClassDef) -> dict[str, MethodSummary]:
    """The bound methods defined in the class body, by name."""
    found = {}
    for statement in klass.body.body:
        if isinstance(statement, cst.FunctionDef) and is_bound_method(statement):
            found[statement.name.value] = method_summary(statement)
    return found


def method_summary(function: cst.FunctionDef) -> MethodSummary:
    params = tuple(parameter_names(function)[1:])
    reader = _Reads(set(params))
    function.body.visit(reader)
    return MethodSummary(function.name.value, params, tuple(reader.self_calls), tuple(reader.reads))


def callee_name(call: cst.Call) -> str:
    func = call.func
    return func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")


class _Reads(cst.CSTVisitor):
    def __init__(self, params: set[str]) -> None:
        self.params = params
        self.calls: list[cst.Call] = []
        self.whole: set[int] = set()  # names passed whole to a `self.` method: recorded as calls
        self.self_calls: list[SelfCall] = []
        self.reads: list[tuple[str, tuple[str, ...]]] = []

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(node)
        func = node.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            args, kwargs = [], []
            for arg in node.args:
                name = arg.value.value if isinstance(arg.value, cst.Name) and arg.value.value in self.params else None
                if arg.star:
                    name = None
                if name is not None:
                    self.whole.add(id(arg.value))
                if arg.keyword is not None:
                    if name is not None:
                        kwargs.append((arg.keyword.value, name))
                elif not arg.star:
                    args.append(name)
            self.self_calls.append(SelfCall(func.attr.value, tuple(args), tuple(kwargs)))

    def leave_Call(self, original_node: cst.Call) -> None:
        self.calls.pop()

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return not (set(parameter_names(node)) & self.params)  # a lambda's own parameter shadows

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False  # a nested def is another function

    # Only names that are values: not an attribute's name (`self.epoch_id`) nor a keyword.
    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.params and id(node) not in self.whole:
            self.reads.append((node.value, tuple(callee_name(c) for c in self.calls)))


class ClassIndex(Protocol):
    """What `inherited_methods` asks of the project (project.summary.ProjectIndex)."""

    def class_methods(self, importer: str, qualified: str) -> dict[str, MethodSummary] | None: ...


def inherited_methods(
    project: ClassIndex, importer: str, klass: cst.ClassDef, resolve: Callable[[str], str | None]
) -> dict[str, MethodSummary]:
    """Methods `klass` inherits from project classes of other modules, by name (the first base
    defining a name wins, as Python's order does for single bases); one level, like every summary.
    `project` is a ProjectIndex, `resolve` turns a local name into its dotted import."""
    found: dict[str, MethodSummary] = {}
    for base in klass.bases:
        dotted = _dotted(base.value)
        head, _, rest = (dotted or "").partition(".")
        qualified = resolve(head) if head else None
        if qualified is None:
            continue
        methods = project.class_methods(importer, f"{qualified}.{rest}" if rest else qualified)
        for name, method in (methods or {}).items():
            found.setdefault(name, method)
    return found


def _dotted(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        inner = _dotted(expr.value)
        return f"{inner}.{expr.attr.value}" if inner is not None else None
    return None
