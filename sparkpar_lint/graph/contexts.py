"""One call, several analyses: a helper is analysed on its own (its parameters unknown) and again
at each call site with the caller's data. The analysis on its own sees a prefix of what a call
site sees; where every call site shows a fact (the rows are unique, the column is a key), the
view with less information must not contradict it.
"""

from __future__ import annotations

from collections.abc import Callable

from sparkpar_lint.graph.stage_graph import StageGraph, StageNode


def _chain(graph: StageGraph, node: StageNode) -> list[int]:
    return [id(n.call) for n in [node, *graph.upstream(node)]]


def wider_contexts(graph: StageGraph, node: StageNode) -> list[StageNode]:
    """Other analyses of the same call whose upstream chain extends this one's."""
    if node.call is None:
        return []
    mine = _chain(graph, node)
    wider = []
    for other in graph.analyses_of(node.call):
        if other is node:
            continue
        theirs = _chain(graph, other)
        if len(theirs) > len(mine) and theirs[: len(mine)] == mine:
            wider.append(other)
    return wider


def holds_in_wider_contexts(graph: StageGraph, node: StageNode, fact: Callable[[StageNode], bool]) -> bool:
    """`fact` holds in every better-informed analysis of this call (and there is at least one)."""
    wider = wider_contexts(graph, node)
    return bool(wider) and all(fact(other) for other in wider)
