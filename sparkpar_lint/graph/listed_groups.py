"""Grouped values turned into a list as they are, and that list made a result.

`rdd.groupByKey().mapValues(list).collect()`: each key's values arrive in the order the shuffle
fetched the map outputs, and `list` keeps that order. Nothing in the function reads a position,
so the order-dependence analysis of its body finds nothing; the order still reaches the result
when the very next stage is a driver action or a sink. A further transformation is not judged
here (it may be `sum` or `sorted`, order-free).
"""

from __future__ import annotations

import libcst as cst

from sparkpar_lint.graph.literal_rows import literal_pairs
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode
from sparkpar_lint.graph.user_functions import parameter_names

_KEEPS_ORDER = frozenset({"list", "tuple"})


def listed_in_arrival_order(graph: StageGraph, node: StageNode) -> cst.CSTNode | None:
    """The function argument of a `mapValues` over `groupByKey` output that lists the values as
    they arrived, when the result goes straight to the driver or a sink; else None."""
    if node.spec is None or node.spec.function_role != "value" or node.call is None or not node.call.args:
        return None
    upstream = graph.input_of(node)
    if upstream is None or upstream.spec is None or not upstream.spec.produces_order_sensitive_groups:
        return None
    if not any(c.spec is not None and (c.spec.returns == "driver" or c.spec.sink) for c in graph.consumers(node)):
        return None
    if _values_equal_per_key(graph, graph.input_of(upstream)):
        return None  # literal pairs whose values under each key are all the same: any order lists them alike
    argument = node.call.args[0].value
    if node.callables.get(0) in _KEEPS_ORDER:
        return argument
    if isinstance(argument, cst.Lambda) and _lists_parameter(argument):
        return argument
    return None


def _lists_parameter(function: cst.Lambda) -> bool:
    params = parameter_names(function)
    body = function.body
    if len(params) != 1:
        return False
    if isinstance(body, cst.Call) and isinstance(body.func, cst.Name) and body.func.value in _KEEPS_ORDER:
        return (
            len(body.args) == 1 and isinstance(body.args[0].value, cst.Name) and body.args[0].value.value == params[0]
        )
    if isinstance(body, cst.ListComp) and body.for_in.inner_for_in is None and not body.for_in.ifs:
        iterated = body.for_in.iter
        return isinstance(iterated, cst.Name) and iterated.value == params[0]
    return False


def _values_equal_per_key(graph: StageGraph, source: StageNode | None) -> bool:
    pairs = literal_pairs(graph, source) if source is not None else None
    if pairs is None:
        return False
    values: dict = {}
    try:
        return all(values.setdefault(key, repr(value)) == repr(value) for key, value in pairs)
    except TypeError:  # an unhashable key: do not guess
        return False
