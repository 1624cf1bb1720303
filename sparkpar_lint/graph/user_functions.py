"""What a user function's body does, read without running it: which outer names it mutates, which
names it binds itself, how many rows it emits.
"""

from __future__ import annotations

import libcst as cst

from sparkpar_lint.graph.stage_graph import UserFunction

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
        for alias in node.names:
            name = alias.asname.name if alias.asname else alias.name
            if isinstance(name, cst.Name):
                self.bound.add(name.value)
            elif isinstance(name, cst.Attribute):
                root = name
                while isinstance(root, cst.Attribute):
                    root = root.value
                if isinstance(root, cst.Name):
                    self.bound.add(root.value)

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
    node.body.visit(bindings)
    local = (set(parameter_names(node)) | bindings.bound) - bindings.declared_outer
    return local, bindings.declared_outer


def _root_name(node: cst.BaseExpression) -> cst.Name | None:
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        node = node.value
    return node if isinstance(node, cst.Name) else None


class _Mutations(cst.CSTVisitor):
    def __init__(self, local: set[str], declared_outer: set[str]) -> None:
        self.local = local
        self.declared_outer = declared_outer
        self.found: list[tuple[str, cst.CSTNode]] = []

    def _outer(self, name: cst.Name | None) -> bool:
        return name is not None and (
            name.value in self.declared_outer or name.value not in self.local
        )

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

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._target(target.target, node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._target(node.target, node)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._target(node.target, node)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in MUTATING_METHODS:
            root = _root_name(func.value)
            if self._outer(root):
                self.found.append((root.value, node))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False  # a nested def is analysed when Spark is given it


def mutations(function: UserFunction) -> list[tuple[str, cst.CSTNode]]:
    """Outer names the function mutates, with the statement or call that mutates each."""
    local, declared_outer = local_names(function.node)
    visitor = _Mutations(local, declared_outer)
    function.node.body.visit(visitor)
    return visitor.found


def mutated_outer_names(function: UserFunction) -> set[str]:
    return {name for name, _ in mutations(function)}
