"""Column names a `createDataFrame` schema spells out: a DDL string or a `StructType`.

Read by literal_rows.py (the rows a job writes out) and minted_keys.py (the ids a job mints per
row). They read a `StructType`'s field names their own way, so each passes its reader in.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst


def ddl_names(schema: cst.BaseExpression) -> list[str] | None:
    """`"a INT, b STRING"`: the names; None for any other expression or a part without a type."""
    if isinstance(schema, cst.SimpleString) and isinstance(schema.evaluated_value, str):
        parts = [p.strip().split() for p in schema.evaluated_value.split(",")]
        return [p[0].strip("`") for p in parts] if all(len(p) >= 2 for p in parts) else None
    return None


def struct_names(
    schema: cst.BaseExpression, field_name: Callable[[cst.BaseExpression], str | None], *, added: bool
) -> list[str] | None:
    """`StructType([StructField("a", ...), ...])`: the names, each read off the field's first
    argument by `field_name`; with `added`, also `StructType().add("a", ...).add(...)`. None when
    any part cannot be read."""
    if not isinstance(schema, cst.Call):
        return None
    func = schema.func
    if added and isinstance(func, cst.Attribute) and func.attr.value == "add" and isinstance(func.value, cst.Call):
        before = struct_names(func.value, field_name, added=True)
        name = field_name(schema.args[0].value) if schema.args else None
        return [*before, name] if before is not None and name is not None else None
    if callee_name(func) != "StructType":
        return None
    if not schema.args:
        return []
    fields = schema.args[0].value
    if not isinstance(fields, (cst.List, cst.Tuple)):
        return None
    names = []
    for element in fields.elements:
        field = element.value
        if not (isinstance(field, cst.Call) and callee_name(field.func) == "StructField" and field.args):
            return None
        name = field_name(field.args[0].value)
        if name is None:
            return None
        names.append(name)
    return names


def callee_name(func: cst.BaseExpression) -> str | None:
    """`StructType` of `StructType`, `T.StructType` or `types.StructType`."""
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return func.value if isinstance(func, cst.Name) else None
