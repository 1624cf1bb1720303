"""The imports a pass of fixes needs, added without side effects and removed when made unused.

ruff's `get_or_import_symbol`, for pyspark.sql.functions: reuse the module's alias (`F`, `fn`,
`sf`, ...); import names bare only where the module already imports functions by name and the
name shadows no builtin and no other binding (`min` would turn every later builtin `min()` into
a Spark column function); otherwise add `from pyspark.sql import functions as F` under a free
alias. Imports whose last use a fix replaced are removed with LibCST's RemoveImportsVisitor,
which drops an import only when nothing else reads it. A list either changed keeps its layout
(import_lists.py).
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor

from sparkpar_lint.edits.code import FUNCTIONS_PLACEHOLDER
from sparkpar_lint.edits.import_lists import as_written
from sparkpar_lint.graph.imports import FUNCTIONS_MODULE, dotted_name
from sparkpar_lint.graph.user_functions import names_in

_BUILTINS = frozenset(dir(builtins))
_ALIASES = ("F", "sf", "fn", "spark_functions")
# (module, name, asname) of a from-import.
_Import = tuple[str, str, str | None]


def finish_imports(
    module: cst.Module, wanted: Iterable[tuple[str, str | None]], replaced: Iterable[cst.CSTNode]
) -> cst.Module:
    """`module` with the placeholder resolved, `wanted` imports added and those made unused removed."""
    wanted = set(wanted)
    names = _placeholder_names(module)
    other: set[tuple[str, str | None, str | None]] = {(m, n, None) for m, n in wanted if m != FUNCTIONS_MODULE}
    if names:
        module, more = _resolve_functions(module, names)
        other |= more
    written = module
    context = CodemodContext()
    for module_name, name, asname in sorted(other, key=lambda p: (p[0], p[1] or "", p[2] or "")):
        AddImportsVisitor.add_needed_import(context, module_name, name, asname)
    if other:
        module = AddImportsVisitor(context).transform_module(module)
    removable = _imports_read_by(module, replaced)
    if removable:
        context = CodemodContext()
        for module_name, name, asname in removable:
            RemoveImportsVisitor.remove_unused_import(context, module_name, name, asname)
        module = RemoveImportsVisitor(context).transform_module(module)
    return as_written(written, module) if other or removable else module


def _placeholder_names(module: cst.Module) -> set[str]:
    found: set[str] = set()

    class Collect(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> None:
            if isinstance(node.value, cst.Name) and node.value.value == FUNCTIONS_PLACEHOLDER:
                found.add(node.attr.value)

    module.visit(Collect())
    return found


def _resolve_functions(module: cst.Module, names: set[str]) -> tuple[cst.Module, set[_Import]]:
    """Replace the placeholder: bare imported names where safe, else the functions alias."""
    table = _module_imports(module)
    bound = names_in(module)  # a new name must collide with none of them
    alias = next((local for local, target in table.items() if target == FUNCTIONS_MODULE), None)
    by_name = {local for local, target in table.items() if target.startswith(FUNCTIONS_MODULE + ".")}
    imports: set[_Import] = set()
    if alias is None and by_name and all(_free_for_bare(n, table, bound) for n in names):
        bare = True
        imports = {(FUNCTIONS_MODULE, n, None) for n in names if table.get(n) != f"{FUNCTIONS_MODULE}.{n}"}
    else:
        bare = False
        if alias is None:
            alias = next(a for a in (*_ALIASES, *(f"F{i}" for i in range(1, 100))) if a not in bound)
            imports = {("pyspark.sql", "functions", alias)}
    return module.visit(_Resolve(None if bare else alias)), imports


def _free_for_bare(name: str, table: dict[str, str], bound: set[str]) -> bool:
    if table.get(name) == f"{FUNCTIONS_MODULE}.{name}":
        return True  # already imported as itself
    return name not in _BUILTINS and name not in bound


class _Resolve(cst.CSTTransformer):
    def __init__(self, alias: str | None) -> None:
        self.alias = alias

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.BaseExpression:
        value = updated_node.value
        if isinstance(value, cst.Name) and value.value == FUNCTIONS_PLACEHOLDER:
            if self.alias is None:
                return updated_node.attr
            return updated_node.with_changes(value=cst.Name(self.alias))
        return updated_node


def _module_imports(module: cst.Module) -> dict[str, str]:
    """Local name → dotted target, for the module's top-level imports (also inside `try`/`if`)."""
    table: dict[str, str] = {}

    class Collect(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            return False

        def visit_Import(self, node: cst.Import) -> None:
            for alias in node.names:
                target = dotted_name(alias.name)
                if target and alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    table[alias.asname.name.value] = target

        def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
            if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
                return
            base = dotted_name(node.module)
            for alias in node.names:
                name = dotted_name(alias.name)
                local = _local_name(alias, name)
                if base and name and isinstance(local, str):
                    table[local] = f"{base}.{name}"

    module.visit(Collect())
    return table


def _imports_read_by(module: cst.Module, replaced: Iterable[cst.CSTNode]) -> set[_Import]:
    """(module, name, asname) of from-imports that the replaced code read: candidates for removal."""
    used: set[str] = set()

    class Collect(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            used.add(node.value)

        # `df.count()` and `show(truncate=...)` read no name `count` or `truncate`.
        def visit_Attribute(self, node: cst.Attribute) -> bool:
            node.value.visit(self)
            return False

        def visit_Arg(self, node: cst.Arg) -> bool:
            node.value.visit(self)
            return False

    for node in replaced:
        node.visit(Collect())
    found: set[_Import] = set()
    for statement in _top_level_from_imports(module):
        if statement.module is None or isinstance(statement.names, cst.ImportStar):
            continue  # none of these: _top_level_from_imports leaves them out
        base = dotted_name(statement.module)
        for alias in statement.names:
            name = dotted_name(alias.name)
            asname = _local_name(alias, None)
            if base and name and (asname or name) in used:
                found.add((base, name, asname))
    return found


def _local_name(alias: cst.ImportAlias, default: str | None) -> str | None:
    """The `as` name of an imported name, else `default`."""
    asname = alias.asname
    return asname.name.value if asname is not None and isinstance(asname.name, cst.Name) else default


def _top_level_from_imports(module: cst.Module) -> list[cst.ImportFrom]:
    found = []
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if (
                    isinstance(small, cst.ImportFrom)
                    and not small.relative
                    and small.module is not None
                    and not isinstance(small.names, cst.ImportStar)
                ):
                    found.append(small)
    return found
