"""Results a person only looks at: the argument of a notebook's `display(...)` (Databricks,
Jupyter) or of `print(...)`. Which rows a limit or a sort left there decides nothing downstream.
"""

from __future__ import annotations

import libcst as cst

from sparkpar_lint.graph.stage_graph import StageGraph

PREVIEW_FUNCTIONS = frozenset({"display", "print"})


def previewed(graph: StageGraph) -> set[int]:
    """ids of the expressions passed straight to `display(...)`/`print(...)` in the module."""
    cached = getattr(graph, "_previewed", None)
    if cached is not None:
        return cached
    found: set[int] = set()
    for node in graph.positions:
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in PREVIEW_FUNCTIONS:
            found.update(id(arg.value) for arg in node.args)
    object.__setattr__(graph, "_previewed", found)
    return found
