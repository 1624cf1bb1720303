"""Results a person only looks at: the argument of a notebook's `display(...)` (Databricks,
Jupyter) or of `print(...)`. Which rows a limit or a sort left there decides nothing downstream.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from sparkpar_lint.graph.stage_graph import StageGraph

PREVIEW_FUNCTIONS = frozenset({"display", "print"})


def previewed(graph: StageGraph) -> set[int]:
    """ids of the expressions passed straight to `display(...)`/`print(...)` in the module; the
    builder records them as it evaluates each call (enumerating nodes through positions cost
    about three parses a file)."""
    return graph.previewed_args


def shown_expressions(call: cst.Call) -> Iterator[int]:
    """ids of what `print(...)`/`display(...)` shows: each argument, and the result a slice or an
    index of it reads (`print(rdd.collect()[:5])` shows the collected rows)."""
    for arg in call.args:
        value = arg.value
        yield id(value)
        while isinstance(value, cst.Subscript):
            value = value.value
            yield id(value)
