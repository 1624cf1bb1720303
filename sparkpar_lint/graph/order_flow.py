"""Order questions the order rules ask of the stage graph (data-trace types along an edge chain).

Where did an edge lose its order, which sort does a shuffle throw away, does a node see only one
row: answered here once so SPX102, SPX106 and SPX107 read the graph the same way.
"""

from __future__ import annotations

from collections.abc import Iterator

from sparkpar_lint.catalogue import OperatorSpec
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode, WindowSpecValue

SORTS = frozenset({"establishes-total", "establishes-per-key", "sorts-within-partitions"})
# Results the driver or a sink receives in the order Spark produced them: the sort was used.
_ORDER_KEEPING_RESULTS = frozenset({"driver", "list", "Writer", "StreamWriter"})
# Functions that see a whole partition (or its index) observe the row order inside it.
_ORDER_OBSERVING_ROLES = frozenset({"partition", "partition-with-index", "row"})
_RE_SORTS = frozenset({"establishes-total", "establishes-per-key"})
# Actions that hand the driver the rows in the order they arrive.
_ROWS_TO_DRIVER = frozenset({"collect", "collectAsList", "toPandas", "toArrow", "toLocalIterator"})
# Files a person or a line-by-line tool reads top to bottom; a table's rows have no order.
_ORDERED_FILES = frozenset({"csv", "json", "text"})
# Aggregates Spark's optimizer treats as blind to input order whatever the column type. `sum` and
# `avg` are not among them: over floating point their result depends on the order of addition.
_ORDER_FREE_AGGREGATES = frozenset(
    {"count", "count_distinct", "countDistinct", "min", "max", "collect_set", "bit_and", "bit_or", "bit_xor"}
)


def is_ordered(node: StageNode) -> bool:
    """The node's output edge is totally ordered (a sort, or a source's arrival order)."""
    return node.output_order.kind in ("total", "sequence")


def unordering_shuffle(graph: StageGraph, node: StageNode) -> StageNode | None:
    """The shuffle that left `node`'s input without a total order, or None when the input has one.

    None too when a single-row result sits in between: one row has only one order.
    """
    for upstream in graph.upstream(node):
        if is_ordered(upstream) or yields_single_row(graph, upstream):
            return None
        if upstream.is_shuffle:
            return upstream
    return None


def yields_single_row(graph: StageGraph, node: StageNode) -> bool:
    """A global aggregation: `df.agg(...)`, `df.groupBy().agg(...)`, `select(F.max(...))`."""
    spec = node.spec
    if spec is None:
        return False
    if spec.single_row:
        return True
    if node.receiver == "GroupedData" and spec.state == "partitioned":
        grouping = graph.input_of(node)
        # `groupBy()` with no keys is one group.
        return grouping is not None and grouping.positional_count == 0 and not grouping.keywords
    if spec.forwarding == "selected":
        # An aggregate outside any window makes the select a global aggregation.
        return any(c.spec is not None and c.spec.aggregate and c.window is None for c in node.columns.calls)
    return False


def upstream_sort(graph: StageGraph, node: StageNode) -> StageNode | None:
    """The nearest sort above `node` on its main input chain."""
    return next((n for n in graph.upstream(node) if n.order_effect in SORTS), None)


def discarding_operation(graph: StageGraph, sort: StageNode) -> StageNode | None:
    """The operation that throws `sort`'s order away on every path before anything uses it.

    None when some path uses the order (a limit, an action, a sink, a partition function), reaches
    an operator we cannot judge, or simply ends: only a sort that is always discarded is wasted.
    """
    discarders = [_discarder_on_path(graph, sort, consumer) for consumer in graph.consumers(sort)]
    found = [d for d in discarders if d is not None]
    if not discarders or len(found) < len(discarders):
        return None
    return min(found, key=lambda n: n.id)


def _discarder_on_path(graph: StageGraph, sort: StageNode, node: StageNode) -> StageNode | None:
    spec = node.spec
    if spec is None or _uses_order(spec):
        return None
    if spec.order_effect in ("establishes-total", "establishes-per-key"):
        return node  # a later sort re-orders everything; the earlier one did nothing
    if node.is_shuffle and spec.order_effect == "destroys":
        return node
    if spec.order_effect != "preserves":
        return None  # coalesce, union, sortWithinPartitions: not a discarding shuffle
    if any(_reshuffles(window, sort) for window in _windows(node)):
        return node
    consumers = graph.consumers(node)
    paths = [_discarder_on_path(graph, sort, consumer) for consumer in consumers]
    found = [f for f in paths if f is not None]
    if not paths or len(found) < len(paths):
        return None
    return min(found, key=lambda n: n.id)


def _uses_order(spec: OperatorSpec) -> bool:
    return bool(
        spec.order_requirement != "none"
        or spec.returns in _ORDER_KEEPING_RESULTS
        or spec.partitioning_dependent
        or spec.function_role in _ORDER_OBSERVING_ROLES
    )


def _windows(node: StageNode) -> Iterator[WindowSpecValue]:
    for call in node.columns.calls:
        if call.window is not None and not call.from_sql:
            yield call.window


def _reshuffles(window: WindowSpecValue, sort: StageNode) -> bool:
    """A window exchanges rows unless the sort's range partitioning already clusters its keys."""
    if not window.partition_by:
        # No partitionBy gathers all rows into one partition; a spec we could not read: no claim.
        return not window.has_partition
    return not set(sort.keys) <= set(window.partition_by)


def order_reader(graph: StageGraph, discarder: StageNode) -> StageNode | None:
    """The first step at or after `discarder` that reads row order before a new sort sets one: an
    aggregate, window function or group function that sees rows in arrival order, a deduplication,
    a limit, rows collected to the driver or written to a text file. None when nothing reads it."""
    seen: set[int] = set()
    todo = [discarder]
    while todo:
        node = todo.pop(0)
        if node.id in seen or (node is not discarder and node.order_effect in _RE_SORTS):
            continue
        seen.add(node.id)
        if _reads_order(node):
            return node
        todo.extend(graph.consumers(node))
    return None


def _reads_order(node: StageNode) -> bool:
    spec = node.spec
    if spec is None:
        return False
    # A window function ordered by its own ORDER BY does not read the arrival order.
    if any(
        c.spec is not None and c.spec.order_sensitive and not (c.window and c.window.order_by)
        for c in node.columns.calls
    ):
        return True
    return bool(
        spec.order_requirement != "none"
        or spec.keeps_arbitrary_row
        or spec.produces_order_sensitive_groups
        or spec.function_role in _ORDER_OBSERVING_ROLES
        or spec.function_role == "group"
        or hands_on_every_row(node)
    )


def hands_on_every_row(node: StageNode) -> bool:
    """Every row leaves in arrival order, to the driver or a text file: any two distinct rows can
    swap, whatever the data."""
    return node.method in _ROWS_TO_DRIVER or (node.receiver == "Writer" and node.method in _ORDERED_FILES)


def optimizer_drops(graph: StageGraph, sort: StageNode, discarder: StageNode) -> bool:
    """Spark's optimizer removes a DataFrame or SQL sort that only a join, `distinct`, a later sort
    or an aggregation it knows reads no order follows (its EliminateSorts rule): nothing runs it.
    RDDs have no optimizer."""
    if sort.receiver == "RDD":
        return False
    if discarder.order_effect in _RE_SORTS or discarder.method in ("join", "distinct"):
        return True
    if discarder.spec is None or discarder.spec.returns != "GroupedData":
        return False
    aggregations = graph.consumers(discarder)
    return bool(aggregations) and all(_order_free_aggregation(a) for a in aggregations)


def _order_free_aggregation(node: StageNode) -> bool:
    if node.method in _ORDER_FREE_AGGREGATES:
        return True
    if node.method != "agg":
        return False
    aggregates = [c for c in node.columns.calls if c.spec is not None and c.spec.aggregate]
    return bool(aggregates) and all(c.spec is not None and c.spec.name in _ORDER_FREE_AGGREGATES for c in aggregates)
