"""Grouped values turned into a list as they are, and that list made a result.

`rdd.groupByKey().mapValues(list).collect()`: each key's values arrive in the order the shuffle
fetched the map outputs, and `list` keeps that order. Nothing in the function reads a position,
so the order-dependence analysis of its body finds nothing; the order still reaches the result
when the very next stage is a driver action or a sink. A further transformation is not judged
here (it may be `sum` or `sorted`, order-free).
"""

from __future__ import annotations

from typing import TypeVar

import libcst as cst

from sparkpar_lint.graph.literal_rows import literal_pairs
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode
from sparkpar_lint.graph.tree_paths import path_to
from sparkpar_lint.graph.user_functions import parameter_names
from sparkpar_lint.graph.visiting import visit

_KEEPS_ORDER = frozenset({"list", "tuple"})


def listed_in_arrival_order(graph: StageGraph, node: StageNode) -> cst.CSTNode | None:
    """The function argument of a `mapValues` (or a `map` over the pairs) after `groupByKey` or
    `groupBy` that lists the values as they arrived, when the result goes straight to the driver
    or a sink; else None."""
    if node.spec is None or node.call is None or not node.call.args:
        return None
    role = node.spec.function_role
    if role != "value" and not (role == "row" and node.method == "map"):
        return None
    upstream = graph.input_of(node)
    if upstream is None or upstream.spec is None or not upstream.spec.produces_order_sensitive_groups:
        return None
    if upstream.method in ("cogroup", "groupWith"):
        return None  # a pair of iterables per key: listing one is not what this reads
    if not any(c.spec is not None and (c.spec.returns == "driver" or c.spec.sink) for c in graph.consumers(node)):
        return None
    if _values_equal_per_key(graph, graph.input_of(upstream)):
        return None  # every value under a key is the same: any order lists them alike
    argument = node.call.args[0].value
    if role == "value" and node.callables.get(0) in _KEEPS_ORDER:
        return argument
    if isinstance(argument, cst.Lambda) and _lists_parameter(argument, pair=role == "row"):
        return argument
    return None


def listed_on_driver(graph: StageGraph, node: StageNode) -> cst.CSTNode | None:
    """`for key, values in rdd.groupByKey().collect(): print(key, list(values))`: the collected
    groups' values listed, joined or iterated in the order they arrived, in a driver loop over
    the collected pairs (directly or through the name it is bound to). The expression that
    lists them, else None. Inside `sorted`, `set`, `len`, `sum`, `max` or `min` the order is gone."""
    upstream = graph.input_of(node)
    if node.method != "collect" or node.call is None or upstream is None or upstream.spec is None:
        return None
    if not upstream.spec.produces_order_sensitive_groups or upstream.method in ("cogroup", "groupWith"):
        return None
    if _values_equal_per_key(graph, graph.input_of(upstream)) or graph.module is None:
        return None
    for target, body in _iterations(graph, node.call):
        found = _listed_in(target, body)
        if found is not None:
            return found
    return None


# Comprehensions whose element is computed per pair: `[(k, list(v)) for k, v in groups]`.
_COMPREHENSIONS: tuple[type[cst.ListComp | cst.SetComp | cst.GeneratorExp | cst.DictComp], ...] = (
    cst.ListComp,
    cst.SetComp,
    cst.GeneratorExp,
    cst.DictComp,
)
_Node = TypeVar("_Node", bound=cst.CSTNode)


def _iterations(
    graph: StageGraph, value: cst.BaseExpression
) -> list[tuple[cst.BaseAssignTargetExpression, cst.CSTNode]]:
    """(loop target, what runs per pair) for each `for` loop or comprehension iterating `value`,
    or a name bound to it in the same scope."""
    name = None
    assign = next((a for a in _nodes(graph, cst.Assign) if a.value is value), None)
    if assign is not None and len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name):
        name = assign.targets[0].target.value
    path = path_to(graph.module, assign) if assign is not None and graph.module is not None else None
    scope = next((n for n in reversed(path or []) if isinstance(n, cst.FunctionDef)), graph.module)

    def iterates(iterated: cst.BaseExpression, in_scope: bool) -> bool:
        return iterated is value or (in_scope and isinstance(iterated, cst.Name) and iterated.value == name)

    found: list[tuple[cst.BaseAssignTargetExpression, cst.CSTNode]] = []
    scoped: set[int] = set()

    class _Visitor(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            scoped.add(id(node))
            return True

    if name is not None and scope is not None:
        visit(scope, _Visitor())
    for loop in _nodes(graph, cst.For):
        if iterates(loop.iter, id(loop) in scoped):
            found.append((loop.target, loop.body))
    for kind in _COMPREHENSIONS:
        for comprehension in _nodes(graph, kind):
            for_in = comprehension.for_in
            if iterates(for_in.iter, id(comprehension) in scoped):
                element = comprehension.value if isinstance(comprehension, cst.DictComp) else comprehension.elt
                found.append((for_in.target, element))
    return found


def _nodes(graph: StageGraph, kind: type[_Node]) -> list[_Node]:
    return [node for node in graph.nodes_of(kind) if isinstance(node, kind)]


def _listed_in(target: cst.BaseAssignTargetExpression, body: cst.CSTNode) -> cst.CSTNode | None:
    """In `body`, an in-order use of the values of the (key, values) pair bound to `target`."""
    if isinstance(target, cst.Name):
        pair = target.value
        is_values = lambda e: _second_of(e, pair)  # noqa: E731
    elif isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2:
        second = target.elements[1].value
        if not isinstance(second, cst.Name):
            return None
        is_values = lambda e: isinstance(e, cst.Name) and e.value == second.value  # noqa: E731
    else:
        return None
    found: list[cst.CSTNode] = []

    class _Visitor(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> bool:
            if _order_free(call):
                return False  # `sorted(list(values))`: no order survives
            if _in_order(call, is_values) and not found:
                found.append(call)
            return True

        def visit_For(self, inner: cst.For) -> bool:
            if is_values(inner.iter) and not found:
                found.append(inner.iter)
            return True

    visit(body, _Visitor())
    return found[0] if found else None


def _in_order(call: cst.Call, is_values) -> bool:
    """`list(values)`, `tuple(values)`, `", ".join(values)`, `", ".join(str(v) for v in values)`."""
    func = call.func
    if len(call.args) != 1:
        return False
    argument = call.args[0].value
    if isinstance(func, cst.Name) and func.value in _KEEPS_ORDER:
        return is_values(argument) or _comprehends(argument, is_values)
    if isinstance(func, cst.Attribute) and func.attr.value == "join":
        return is_values(argument) or _comprehends(argument, is_values)
    return False


def _comprehends(expr: cst.BaseExpression, is_values) -> bool:
    return isinstance(expr, (cst.ListComp, cst.GeneratorExp)) and is_values(expr.for_in.iter)


def _order_free(call: cst.Call) -> bool:
    return isinstance(call.func, cst.Name) and call.func.value in _ORDER_FREE


_ORDER_FREE = frozenset({"sorted", "set", "frozenset", "len", "sum", "max", "min", "Counter"})


def _lists_parameter(function: cst.Lambda, *, pair: bool) -> bool:
    """`lambda vs: list(vs)`, `lambda vs: [v for v in vs]`; with `pair`, the values are the
    pair's second item: `lambda kv: (kv[0], list(kv[1]))`."""
    params = parameter_names(function)
    if len(params) != 1:
        return False
    body = function.body
    if not pair:
        return _listing(body, lambda e: isinstance(e, cst.Name) and e.value == params[0])
    items = [e.value for e in body.elements] if isinstance(body, cst.Tuple) else [body]
    return any(_listing(item, lambda e: _second_of(e, params[0])) for item in items)


def _listing(expr: cst.BaseExpression, is_values) -> bool:
    """`list(values)`, `tuple(values)` or `[v for v in values]`: the values, in arrival order."""
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value in _KEEPS_ORDER:
        return len(expr.args) == 1 and is_values(expr.args[0].value)
    if isinstance(expr, cst.ListComp) and expr.for_in.inner_for_in is None and not expr.for_in.ifs:
        return is_values(expr.for_in.iter)
    return False


def _second_of(expr: cst.BaseExpression, name: str) -> bool:
    """`name[1]`: a (key, values) pair's values."""
    if not isinstance(expr, cst.Subscript) or not isinstance(expr.value, cst.Name) or expr.value.value != name:
        return False
    index = expr.slice[0].slice if len(expr.slice) == 1 else None
    return isinstance(index, cst.Index) and isinstance(index.value, cst.Integer) and index.value.value == "1"


def _values_equal_per_key(graph: StageGraph, source: StageNode | None) -> bool:
    """Literal pairs whose values under each key are all the same, or pairs made with one
    constant value (`map(lambda w: (w, 1))`)."""
    if source is not None and _constant_value(source):
        return True
    pairs = literal_pairs(graph, source) if source is not None else None
    if pairs is None:
        return False
    values: dict = {}
    try:
        return all(values.setdefault(key, repr(value)) == repr(value) for key, value in pairs)
    except TypeError:  # an unhashable key: do not guess
        return False


def _constant_value(node: StageNode) -> bool:
    """`map(lambda w: (w, 1))`: every pair carries the same literal value."""
    if node.method != "map" or node.call is None or len(node.call.args) != 1:
        return False
    function = node.call.args[0].value
    if not isinstance(function, cst.Lambda) or not isinstance(function.body, cst.Tuple):
        return False
    items = function.body.elements
    return len(items) == 2 and isinstance(items[1].value, (cst.Integer, cst.Float, cst.SimpleString))
