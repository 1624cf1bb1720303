"""Is a key evidently unique in the rows reaching a stage? Read from the operators upstream.

A `dropDuplicates`/`distinct` or a grouping on columns among the key leaves at most one row per
key (until a join multiplies rows again, which is not tracked); a whole-row `distinct()` or
`dropDuplicates()` is taken as the author's sign that duplicates were dealt with.
"""

from __future__ import annotations

from sparkpar_lint.graph.stage_graph import StageGraph, StageNode

_DEDUPLICATING = frozenset({"distinct", "dropDuplicates", "drop_duplicates", "dropDuplicatesWithinWatermark"})


def deduplicated_on(graph: StageGraph, node: StageNode, key: tuple[str, ...]) -> bool:
    """Some stage upstream of `node` leaves one row per value of `key` (or of the whole row)."""
    for upstream in graph.upstream(node):
        # An aggregation of grouped rows: one output row per group, carrying only the keys and aggregates.
        grouped = upstream.receiver == "GroupedData" and upstream.spec is not None and upstream.spec.forwarding == "keys"
        if upstream.method in _DEDUPLICATING or grouped:
            if not upstream.keys or set(upstream.keys) <= set(key):
                return True
    return False
