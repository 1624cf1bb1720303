"""Literals reached through a name: the value last assigned to it before a stage."""

from __future__ import annotations

import libcst as cst

from sparkpar_lint.graph.stage_graph import StageGraph, StageNode


def assigned_value(graph: StageGraph, name: cst.Name, at: StageNode) -> cst.BaseExpression | None:
    """The value last assigned to `name` before `at` in the module, or None."""
    return resolved(graph, name, at)


def resolved(graph: StageGraph, expr: cst.BaseExpression, at: StageNode) -> cst.BaseExpression | None:
    """A literal in place, or the literal last assigned to the name before `at`."""
    if not isinstance(expr, cst.Name):
        return expr
    best: tuple[int, cst.BaseExpression] | None = None
    line = at.span.line
    for candidate in graph.nodes_of(cst.Assign):
        if isinstance(candidate, cst.Assign) and len(candidate.targets) == 1:
            target = candidate.targets[0].target
            if isinstance(target, cst.Name) and target.value == expr.value:
                where = graph.positions[candidate].start.line
                if where < line and (best is None or where > best[0]):
                    best = (where, candidate.value)
    return best[1] if best is not None else None
