"""Column types from a `StructType([StructField("ts", TimestampType()), ...])` schema, spelled as
DDL's base types (`timestamp`), for the fixes that read a DDL schema string the same way
(rules/fixers/tie_breaker.py). Types are matched by their resolved name in `pyspark.sql.types`."""

from __future__ import annotations

import libcst as cst

from sparkpar_lint.graph.imports import dotted_name
from sparkpar_lint.graph.stage_graph import StageGraph

_TYPES = "pyspark.sql.types."
# Type classes as DDL spells their base type; containers are named but left unordered.
_DDL = {
    "StringType": "string", "VarcharType": "varchar", "CharType": "char", "IntegerType": "int",
    "LongType": "bigint", "ShortType": "smallint", "ByteType": "tinyint", "DoubleType": "double",
    "FloatType": "float", "DecimalType": "decimal", "BooleanType": "boolean", "DateType": "date",
    "TimestampType": "timestamp", "TimestampNTZType": "timestamp_ntz", "BinaryType": "binary",
    "ArrayType": "container", "MapType": "container", "StructType": "container",
}  # fmt: skip


def struct_types(graph: StageGraph, schema: cst.Call) -> dict[str, str] | None:
    """{column: DDL base type} of `StructType([StructField("a", StringType()), ...])`, or None
    when it is spelled otherwise (fields from a variable, a type not in pyspark.sql.types)."""
    if _qualified(graph, schema.func) != _TYPES + "StructType" or len(schema.args) != 1:
        return None
    fields = schema.args[0].value
    if schema.args[0].keyword is not None or not isinstance(fields, (cst.List, cst.Tuple)):
        return None
    types: dict[str, str] = {}
    for element in fields.elements:
        field = element.value
        if not isinstance(field, cst.Call) or _qualified(graph, field.func) != _TYPES + "StructField":
            return None
        positional = [a.value for a in field.args if a.keyword is None]
        keywords = {a.keyword.value: a.value for a in field.args if a.keyword is not None}
        name = positional[0] if positional else keywords.get("name")
        kind = positional[1] if len(positional) > 1 else keywords.get("dataType")
        if not isinstance(name, cst.SimpleString) or not isinstance(name.evaluated_value, str):
            return None
        type_name = _qualified(graph, kind.func) if isinstance(kind, cst.Call) else None
        base = _DDL.get(type_name[len(_TYPES) :]) if type_name and type_name.startswith(_TYPES) else None
        if base is None or name.evaluated_value in types:
            return None
        types[name.evaluated_value] = base
    return types


def bound_once(graph: StageGraph, name: str) -> cst.BaseExpression | None:
    """The value of the module's one binding of `name` (`schema = StructType(...)`), or None when
    it is bound more than once or otherwise (a parameter, a loop, an import, a `global`)."""
    module = graph.module
    if module is None:
        return None
    finder = _Bindings(name)
    module.visit(finder)
    return finder.values[0] if len(finder.values) == 1 and not finder.other else None


class _Bindings(cst.CSTVisitor):
    def __init__(self, name: str) -> None:
        self.name, self.other = name, False
        self.values: list[cst.BaseExpression] = []

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Name) and target.target.value == self.name:
                if len(node.targets) == 1:
                    self.values.append(node.value)
                else:
                    self.other = True
            elif _binds(target.target, self.name):
                self.other = True

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self.other |= _binds(node.target, self.name)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.other |= _binds(node.target, self.name)

    def visit_For(self, node: cst.For) -> None:
        self.other |= _binds(node.target, self.name)

    def visit_Param(self, node: cst.Param) -> None:
        self.other |= node.name.value == self.name

    def visit_AsName(self, node: cst.AsName) -> None:
        self.other |= _binds(node.name, self.name)

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        self.other |= node.asname is None and dotted_name(node.name) == self.name

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self.other |= _binds(node.target, self.name)

    def visit_Global(self, node: cst.Global) -> None:
        self.other |= any(n.name.value == self.name for n in node.names)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self.other |= _binds(node.target, self.name)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.other |= node.name.value == self.name

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.other |= node.name.value == self.name


def _binds(target: cst.BaseExpression, name: str) -> bool:
    if isinstance(target, cst.Name):
        return target.value == name
    if isinstance(target, (cst.Tuple, cst.List)):
        return any(_binds(e.value, name) for e in target.elements)
    if isinstance(target, cst.StarredElement):
        return _binds(target.value, name)
    return False


def _qualified(graph: StageGraph, func: cst.BaseExpression) -> str | None:
    """`StructType`, `T.StructType`, `types.StructType` → `pyspark.sql.types.StructType`."""
    dotted = dotted_name(func)
    if dotted is None or graph.imports is None:
        return None
    head, _, rest = dotted.partition(".")
    base = graph.imports.resolve_name(head)
    return f"{base}.{rest}" if base and rest else base
