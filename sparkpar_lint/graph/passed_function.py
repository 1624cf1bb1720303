"""The function values the graph records: code the module hands to Spark to run."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from sparkpar_lint.model import Span


@dataclass(frozen=True)
class UserFunction:
    """A function Spark runs on executors: a lambda or a def, passed by value or by name."""

    name: str
    node: cst.Lambda | cst.FunctionDef = field(compare=False, repr=False)
    span: Span
    role: str  # the catalogue's function_role, or "udf"/"pandas_udf"
