"""One place that turns local names into dotted names: `F.first`, `fn.first`, `first as f1` and
`functions.first` all become `pyspark.sql.functions.first`.

A per-scope import table plus the builder's own variable scopes (which shadow it) is the fast path
CONVENTIONS.md describes; LibCST's QualifiedNameProvider costs about ten parses.
"""

from __future__ import annotations

import functools
import importlib.resources
import tomllib

import libcst as cst

FUNCTIONS_MODULE = "pyspark.sql.functions"

# Re-exports: where an API is importable from more than one module, one canonical name.
_CANONICAL = {
    "pyspark.sql.window.Window": "pyspark.sql.Window",
    "pyspark.sql.session.SparkSession": "pyspark.sql.SparkSession",
    "pyspark.sql.dataframe.DataFrame": "pyspark.sql.DataFrame",
    "pyspark.sql.connect.functions": FUNCTIONS_MODULE,
    "pyspark.pandas": "pyspark.pandas",
    "pyspark.context.SparkContext": "pyspark.SparkContext",
    "pyspark.streaming.context.StreamingContext": "pyspark.streaming.StreamingContext",
}


def dotted_name(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        head = dotted_name(node.value)
        return f"{head}.{node.attr.value}" if head else None
    return None


def canonical(qualified: str) -> str:
    for prefix, replacement in _CANONICAL.items():
        if qualified == prefix or qualified.startswith(prefix + "."):
            return replacement + qualified[len(prefix) :]
    return qualified


class ImportTable:
    def __init__(self, parent: ImportTable | None = None) -> None:
        self.parent = parent
        self.names: dict[str, str] = {}
        self.star_modules: list[str] = []

    def add(self, statement: cst.Import | cst.ImportFrom) -> None:
        if isinstance(statement, cst.Import):
            for alias in statement.names:
                module = dotted_name(alias.name)
                if module is None:
                    continue
                if alias.asname is not None:
                    self.names[cst.ensure_type(alias.asname.name, cst.Name).value] = canonical(module)
                else:
                    # `import pyspark.sql.functions` binds `pyspark`; attribute access finds the rest.
                    head = module.split(".")[0]
                    self.names[head] = head
            return
        # A relative import keeps its dots (`from .utils import f` -> ".utils.f"): only the
        # project's own modules answer to such names (sparkpar_lint.project).
        dots = "." * len(statement.relative)
        module = dotted_name(statement.module) if statement.module is not None else ""
        if module is None:
            return
        if dots:
            if isinstance(statement.names, cst.ImportStar):
                self.star_modules.append(dots + module)
                return
            prefix = dots + module + ("." if module else "")
            for alias in statement.names:
                if isinstance(alias.name, cst.Name):
                    local = (
                        cst.ensure_type(alias.asname.name, cst.Name).value
                        if alias.asname is not None
                        else alias.name.value
                    )
                    self.names[local] = prefix + alias.name.value
            return
        if isinstance(statement.names, cst.ImportStar):
            module = canonical(module)
            self.star_modules.append(module)
            # A star import rebinds what it exports: `from builtins import max` before it is gone.
            for local in [n for n in self.names if _star_exports(module, n)]:
                del self.names[local]
            return
        for alias in statement.names:
            name = alias.name.value if isinstance(alias.name, cst.Name) else None
            if name is None:
                continue
            local = cst.ensure_type(alias.asname.name, cst.Name).value if alias.asname is not None else name
            self.names[local] = canonical(f"{module}.{name}")

    def all_star_modules(self) -> list[str]:
        """Modules star-imported here or in an enclosing scope, nearest first."""
        found: list[str] = []
        table: ImportTable | None = self
        while table is not None:
            found.extend(table.star_modules)
            table = table.parent
        return found

    def resolve_name(self, name: str) -> str | None:
        table: ImportTable | None = self
        while table is not None:
            if name in table.names:
                return table.names[name]
            for module in table.star_modules:
                if _star_exports(module, name):
                    return canonical(f"{module}.{name}")
            table = table.parent
        return None


def _star_exports(module: str, name: str) -> bool:
    if name in star_exports().get(module, ()):
        return True
    if module == FUNCTIONS_MODULE:  # the catalogue also knows functions newer than the list
        from sparkpar_lint.catalogue import load_catalogue

        return name in load_catalogue().functions
    return False


@functools.cache
def star_exports() -> dict[str, frozenset[str]]:
    """Module → the names `from module import *` binds (rules/exports.toml)."""
    text = (importlib.resources.files("sparkpar_lint.ruledata") / "exports.toml").read_text(encoding="utf-8")
    return {module: frozenset(names) for module, names in tomllib.loads(text).items()}
