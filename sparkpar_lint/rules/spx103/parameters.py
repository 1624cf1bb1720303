"""What a function SPX103 judges is handed: the data each parameter holds, or nothing when its rows
carry no order to depend on."""

from __future__ import annotations

from sparkpar_lint.graph.order_sensitivity import GROUPS, PAIR, ROWS, Data, parameter_kinds
from sparkpar_lint.graph.passed_function import UserFunction
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode

# Roles whose function sees a whole group or partition (catalogue function_role).
ORDERED_ROLES = frozenset(
    {"group", "cogroup", "stateful-group", "stateful-processor", "partition", "partition-with-index"}
)


def parameter_data(graph: StageGraph, node: StageNode, function: UserFunction) -> dict[str, Data]:
    """What the function's parameters hold, or {} when its rows carry no order to depend on."""
    role = function.role
    if role in ("partition", "partition-with-index") and node.input_order.kind in ("total", "per-key"):
        return {}  # sorted upstream and not shuffled since: the partition's order is defined
    if role in ("partition", "partition-with-index") and _sliced_driver_list(graph, node):
        return {}  # `parallelize(list)` cuts the list into fixed slices, in list order
    if role in ORDERED_ROLES:
        return parameter_kinds(function.node, role, node.receiver)
    source = graph.input_of(node)
    if source is None or source.spec is None or not source.spec.produces_order_sensitive_groups:
        return {}
    cogrouped = source.method in ("cogroup", "groupWith")
    if role == "value":
        return parameter_kinds(function.node, "cogroup-value" if cogrouped else "value", node.receiver)
    if role == "row":
        kinds = parameter_kinds(function.node, "grouped-row", node.receiver)
        return {name: Data(PAIR, inner=GROUPS if cogrouped else ROWS) for name in kinds}
    return {}


def _sliced_driver_list(graph: StageGraph, node: StageNode) -> bool:
    """The partitions are slices of a driver-side list (`sc.parallelize(data, n)`) with no shuffle
    since: their contents and order are the list's, the same on every run."""
    if node.input_order.kind != "sequence":
        return False
    source = next((n for n in [node, *graph.upstream(node)] if n.spec is not None and n.spec.source), None)
    return source is not None and source.method == "parallelize"
