"""What a user function's body does, read without running it: which outer names it mutates, which
names it binds itself, how many rows it emits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeGuard

import libcst as cst

from sparkpar_lint.graph.passed_function import UserFunction
from sparkpar_lint.graph.visiting import visit

MUTATING_METHODS = frozenset(
    {
        "append",
        "extend",
        "insert",
        "add",
        "update",
        "setdefault",
        "pop",
        "popitem",
        "remove",
        "discard",
        "clear",
        "appendleft",
        "extendleft",
        "sort",
        "reverse",
    }
)


def function_body(function: UserFunction) -> cst.CSTNode:
    node = function.node
    return node.body


def parameter_names(node: cst.Lambda | cst.FunctionDef) -> list[str]:
    params = node.params
    names = [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            names.append(star.name.value)
    return names


def is_bound_method(node: cst.Lambda | cst.FunctionDef) -> bool:
    """A def whose first parameter is `self`: handed over as `self.name`, Spark calls it bound."""
    return isinstance(node, cst.FunctionDef) and parameter_names(node)[:1] == ["self"]


class _Bindings(cst.CSTVisitor):
    """Names a function binds itself, and the names it declares global/nonlocal."""

    def __init__(self) -> None:
        self.bound: set[str] = set()
        self.declared_outer: set[str] = set()

    def _bind_target(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self.bound.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind_target(element.value)
        elif isinstance(target, cst.StarredElement):
            self._bind_target(target.value)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._bind_target(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._bind_target(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._bind_target(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._bind_target(node.target)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind_target(node.asname.name)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind_target(node.target)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.bound.add(node.name.value)
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.bound.add(node.name.value)
        return False

    def visit_Import(self, node: cst.Import) -> None:
        self.bound.update(_import_bindings(node))

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            name = alias.asname.name if alias.asname else alias.name
            if isinstance(name, cst.Name):
                self.bound.add(name.value)

    def visit_Global(self, node: cst.Global) -> None:
        self.declared_outer.update(n.name.value for n in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.declared_outer.update(n.name.value for n in node.names)


def local_names(node: cst.Lambda | cst.FunctionDef) -> tuple[set[str], set[str]]:
    """(names bound locally, names declared global/nonlocal)."""
    bindings = _Bindings()
    visit(node.body, bindings)
    local = (set(parameter_names(node)) | bindings.bound) - bindings.declared_outer
    return local, bindings.declared_outer


def names_in(node: cst.CSTNode) -> set[str]:
    """Every identifier used in `node`; in `x.first` only `x` (an attribute names no binding)."""
    found: set[str] = set()

    class _Names(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            found.add(name.value)

        def visit_Attribute(self, attribute: cst.Attribute) -> bool:
            visit(attribute.value, self)
            return False

    visit(node, _Names())
    return found


def _root_name(node: cst.BaseExpression) -> cst.Name | None:
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        node = node.value
    return node if isinstance(node, cst.Name) else None


class _Mutations(cst.CSTVisitor):
    """Writes to names the function does not own: globals, closure variables, captured objects."""

    def __init__(self, local: set[str], declared_outer: set[str], modules: frozenset[str] = frozenset()) -> None:
        self.local = local
        self.declared_outer = declared_outer
        self.modules = modules
        self.found: list[tuple[str, cst.CSTNode]] = []

    def _outer(self, name: cst.Name | None) -> TypeGuard[cst.Name]:
        return name is not None and (name.value in self.declared_outer or name.value not in self.local)

    def _target(self, target: cst.BaseExpression, where: cst.CSTNode) -> None:
        if isinstance(target, cst.Name):
            if target.value in self.declared_outer:
                self.found.append((target.value, where))
        elif isinstance(target, (cst.Attribute, cst.Subscript)):
            root = _root_name(target)
            if self._outer(root):
                self.found.append((root.value, where))
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._target(element.value, where)
        elif isinstance(target, cst.StarredElement):
            self._target(target.value, where)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._target(target.target, node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._target(node.target, node)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._target(node.target, node)

    def visit_Del(self, node: cst.Del) -> None:
        self._target(node.target, node)

    def visit_For(self, node: cst.For) -> None:
        # `for STATE["last"] in rows` assigns too, rare but real.
        if not isinstance(node.target, (cst.Name, cst.Tuple, cst.List)):
            self._target(node.target, node)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in MUTATING_METHODS:
            root = _root_name(func.value)
            if isinstance(func.value, cst.Name) and func.value.value in self.modules:
                return  # `os.remove(path)`: a module's function, not a method of shared data
            if self._outer(root):
                self.found.append((root.value, node))
        elif isinstance(func, cst.Name) and func.value == "next" and node.args:
            # `next(ids)` on a captured itertools.count() or generator advances shared state.
            argument = node.args[0].value
            if isinstance(argument, cst.Name) and self._outer(argument):
                self.found.append((argument.value, node))

    def _nested(self, node: cst.Lambda | cst.FunctionDef) -> None:
        """A def or lambda inside the function: its own names shadow, `nonlocal` reaches ours."""
        nested_local, nested_declared = local_names(node)
        local = (self.local | nested_local) - nested_declared
        declared = {n for n in nested_declared if n not in self.local} | (self.declared_outer - nested_local)
        visitor = _Mutations(local, declared, self.modules)
        visit(node.body, visitor)
        self.found.extend(visitor.found)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self._nested(node)
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        self._nested(node)
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False


def mutations(
    function: UserFunction, receiver_is_captured: bool = False, modules: frozenset[str] = frozenset()
) -> list[tuple[str, cst.CSTNode]]:
    """Outer names the function mutates, with the statement or call that mutates each.

    `receiver_is_captured`: the function is a bound method handed to Spark (`rdd.map(self.parse)`),
    so its first parameter is an object pickled into every task, not a value it owns.
    `modules`: names the module binds with `import`; `os.remove(...)` on one mutates nothing.
    """
    local, declared_outer = local_names(function.node)
    names = parameter_names(function.node)
    if receiver_is_captured and names:
        local = local - {names[0]}
    visitor = _Mutations(local, declared_outer, modules)
    visit(function.node.body, visitor)
    return visitor.found


def imported_modules(module: cst.Module | None) -> frozenset[str]:
    """Names bound by `import x` / `import x as y` outside functions: modules, never a list or dict."""
    found: set[str] = set()

    class _Imports(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

        # Statements only, never their expressions: those are most of a script's top level.
        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
            return _bind(node.body)

        def visit_SimpleStatementSuite(self, node: cst.SimpleStatementSuite) -> bool:
            return _bind(node.body)

    def _bind(statements: Sequence[cst.BaseSmallStatement]) -> bool:
        for statement in statements:
            if isinstance(statement, cst.Import):
                found.update(_import_bindings(statement))
        return False

    if module is not None:
        visit(module, _Imports())
    return frozenset(found)


def _import_bindings(node: cst.Import) -> list[str]:
    """The names an `import` binds: `import a.b` binds `a`, `import a.b as c` binds `c`."""
    names = []
    for alias in node.names:
        name: cst.BaseExpression = alias.asname.name if alias.asname else alias.name
        while isinstance(name, cst.Attribute):
            name = name.value
        if isinstance(name, cst.Name):
            names.append(name.value)
    return names


def mutated_outer_names(function: UserFunction) -> set[str]:
    return {name for name, _ in mutations(function)}
