"""Which aggregates of a stage read the order rows arrive in, and where that order cannot matter."""

from __future__ import annotations

from sparkpar_lint.graph.contexts import holds_in_wider_contexts
from sparkpar_lint.graph.order_consumers import aggregate_alias, order_free_udf, order_never_observed
from sparkpar_lint.graph.stage_graph import ColumnCall, StageGraph, StageNode
from sparkpar_lint.graph.uniqueness import constant_within, literal_names

FIRST = {"first", "first_value", "any_value"}
LAST = {"last", "last_value"}
LISTS = {"collect_list", "array_agg"}


def order_dependent(call: ColumnCall) -> bool:
    if call.spec is None or not call.spec.order_sensitive or call.window is not None:
        return False
    from sparkpar_lint.catalogue import load_catalogue

    functions = load_catalogue().functions
    return not any(functions[name].order_normalizing for name in call.enclosing if name in functions)


def order_harmless(graph: StageGraph, node: StageNode, call: ColumnCall) -> bool:
    if _harmless_here(graph, node, call):
        return True
    # A helper analysed on its own sees less than its call sites: let them decide.
    return holds_in_wider_contexts(graph, node, lambda other: _harmless_here(graph, other, _same_call(other, call)))


def _same_call(node: StageNode, call: ColumnCall) -> ColumnCall:
    return next((c for c in node.columns.calls if c.call is call.call), call)


def _harmless_here(graph: StageGraph, node: StageNode, call: ColumnCall) -> bool:
    """The arrival order cannot change what anyone sees: every row of a group holds the same value
    (`first` of a key, of a column derived from the keys or joined in on them, or groups of one
    row), or the collected list only reaches order-free consumers (`array_contains`, `size`, ...)."""
    if call.call is None or call.from_sql:
        return False
    grouping = graph.input_of(node)
    if node.receiver != "GroupedData" or grouping is None or not grouping.keys:
        return False
    source = graph.input_of(grouping)
    if call.function in FIRST | LAST:
        arguments = [a.value for a in call.call.args if a.keyword is None]
        column = literal_names(arguments[0]) if arguments else None
        if column and len(column) == 1 and source is not None:
            return constant_within(graph, source, grouping.keys, column[0]) is not None
        return False
    if call.function in LISTS:
        # Passed straight to a UDF that only counts, sums or sets the list.
        wrapper = next(
            (
                c
                for c in node.columns.calls
                if c.udf is not None and c.call is not None and any(a.value is call.call for a in c.call.args)
            ),
            None,
        )
        if wrapper is not None and wrapper.call is not None and wrapper.udf is not None:
            position = next(i for i, a in enumerate(wrapper.call.args) if a.value is call.call)
            return wrapper.call.args[position].keyword is None and order_free_udf(wrapper.udf.node, position)
        if call.enclosing:
            return False
        alias = aggregate_alias(node, call.call)
        return alias is not None and order_never_observed(graph, node, alias)
    return False


def discarded_sort(graph: StageGraph, node: StageNode) -> StageNode | None:
    """The nearest upstream sort whose order a shuffle between it and `node` throws away."""
    for upstream in graph.upstream(node):
        if upstream.order_effect in ("establishes-total", "sorts-within-partitions", "establishes-per-key"):
            return upstream
    return None
