"""Where a stage built from SQL text came from, kept on the stage for the fixes that edit it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # sqlglot loads only with SQL to read
    import libcst as cst
    from sqlglot import exp

    from sparkpar_lint.sql.parse import ParsedSql
    from sparkpar_lint.sql.text import SqlText


@dataclass(frozen=True)
class SqlSite:
    """Where a stage or call came from: its SQL construct, and the string expression holding the
    SQL (a literal, an f-string, a concatenation), or None when fixes may not edit it."""

    parsed: ParsedSql
    expression: exp.Expression
    literal: cst.BaseExpression | None
    text: SqlText | None = None  # the source position of each character, to keep lines short


def site_of(value: object) -> SqlSite | None:
    """The `sql` of a stage or column call, typed: the stage graph holds it as `object`, since
    importing this module there would close an import cycle through sql.text."""
    return value if isinstance(value, SqlSite) else None
