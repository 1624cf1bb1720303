"""Small builders of replacement code that speak the module's own dialect of imports."""

from __future__ import annotations

import libcst as cst

from sparkpar_lint.edits.model import Imports
from sparkpar_lint.edits.quotes import InsertedString, literal
from sparkpar_lint.graph.imports import FUNCTIONS_MODULE

# Stands for "the module's name for pyspark.sql.functions" in built code; the engine
# (edits/imports.py) replaces it once it knows every name the pass needs.
FUNCTIONS_PLACEHOLDER = "__sparkpar_functions__"


def string(text: str) -> InsertedString:
    """A literal for new code; the engine writes it in the module's quotes (edits/quotes.py)."""
    return InsertedString(literal(text, '"'))


def column_function(like: cst.Call, name: str, args: list[cst.BaseExpression]) -> tuple[cst.Call, Imports]:
    """A call of functions.`name`, written the way `like` calls its function (`F.x`, `fn.x`, `x`).

    Returns the call and the imports it needs: none when `like` goes through a module alias.
    When `like` is a bare name, the new call goes through a placeholder that the engine turns
    into a bare name (imported) or the module's alias, whichever shadows nothing.
    """
    if isinstance(like.func, cst.Attribute):
        func = like.func.with_changes(attr=cst.Name(name))
        imports: Imports = ()
    else:
        func = cst.Attribute(value=cst.Name(FUNCTIONS_PLACEHOLDER), attr=cst.Name(name))
        imports = ((FUNCTIONS_MODULE, name),)
    return cst.Call(func=func, args=[cst.Arg(a) for a in args]), imports


def positional_values(call: cst.Call) -> list[cst.BaseExpression]:
    return [a.value for a in call.args if a.keyword is None and not a.star]


def column_name(expr: cst.BaseExpression) -> str | None:
    """The column a literal name or `col("x")`/`F.col("x")` refers to."""
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    if isinstance(expr, cst.Call) and len(expr.args) == 1:
        func = expr.func
        name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
        if name in ("col", "column"):
            return column_name(expr.args[0].value)
    return None
