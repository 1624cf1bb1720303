"""What SPX103's findings say, and the stages they point at."""

from __future__ import annotations

from sparkpar_lint.graph.order_sensitivity import OrderDependence
from sparkpar_lint.graph.passed_function import UserFunction
from sparkpar_lint.graph.stage_graph import StageNode
from sparkpar_lint.model import RelatedLocation

Message = tuple[str, tuple[RelatedLocation, ...]]


def unordered_rows(node: StageNode, function: UserFunction, dependence: OrderDependence) -> Message:
    """A function Spark runs on a group or partition reads its rows by position or in sequence."""
    where = f" (in helper `{dependence.helper}`)" if dependence.helper else ""
    message = (
        f"{dependence.operation}{where}, so `{function.name}` depends on the order its rows arrive in, "
        f"and `{node.method}` hands them over in whatever order the shuffle or partitioning delivers; "
        "sort by a deterministic key (with a tie-breaker) at the top of the function"
    )
    return message, (RelatedLocation(node.span, f"`{node.method}` runs `{function.name}` on unordered rows"),)


def listed_in_arrival(upstream: StageNode) -> Message:
    """Each key's values listed as `upstream` delivered them, straight into the result."""
    message = (
        f"this lists each key's values in the order `{upstream.method}` delivered them, which changes "
        "with partitioning, and the list goes straight into the result; sort them "
        "(`mapValues(sorted)`) or keep them as a set if the order means nothing"
    )
    return message, (RelatedLocation(upstream.span, f"`{upstream.method}` gathers the values in arrival order"),)


def read_on_driver(node: StageNode, upstream: StageNode) -> Message:
    """A collected group's values read on the driver in the order `upstream` delivered them."""
    message = (
        f"this reads a collected group's values in the order `{upstream.method}` delivered them, "
        "which changes with partitioning; sort them first (`sorted(values, key=...)`) or keep "
        "them as a set if the order means nothing"
    )
    related = (
        RelatedLocation(upstream.span, f"`{upstream.method}` gathers the values in arrival order"),
        RelatedLocation(node.span, f"`{node.method}` brings the groups to the driver as they are"),
    )
    return message, related
