"""Column functions named inside SQL text (`expr(...)`, `selectExpr(...)`), found by pattern.

SQL strings are short and their function calls regular, so a pattern is enough; a window clause
right after a call (`first(v) OVER (...)`) is read for its PARTITION BY / ORDER BY.
"""

from __future__ import annotations

import re

from sparkpar_lint.graph.stage_graph import ColumnCall, WindowSpecValue
from sparkpar_lint.model import Span

_CALL = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\(")
_OVER = re.compile(r"\)\s*OVER\s*\(([^)]*)\)", re.IGNORECASE)


def column_calls(text: str, span: Span, functions: dict) -> list[ColumnCall]:
    calls = []
    for match in _CALL.finditer(text):
        name = match.group(1).lower()
        spec = functions.get(name)
        if spec is None:
            continue
        calls.append(
            ColumnCall(
                function=name,
                span=span,
                spec=spec,
                enclosing=_enclosing(text, match.start(), functions),
                window=_window_after(text, match.end()),
                from_sql=True,
            )
        )
    return calls


def _enclosing(text: str, position: int, functions: dict) -> tuple[str, ...]:
    """Names of the calls still open at `position`, outermost first."""
    open_calls: list[str] = []
    for match in _CALL.finditer(text[:position]):
        depth = text[match.end() : position].count("(") - text[match.end() : position].count(")")
        if depth >= 0:
            open_calls.append(match.group(1).lower())
    return tuple(name for name in open_calls if name in functions)


def _window_after(text: str, start: int) -> WindowSpecValue | None:
    depth = 1
    for index in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[index], 0)
        if depth == 0:
            match = _OVER.match(text, index)
            if match is None:
                return None
            clause = match.group(1).upper()
            return WindowSpecValue(has_partition="PARTITION BY" in clause, has_order="ORDER BY" in clause)
    return None
