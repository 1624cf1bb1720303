"""From the lead's stage graph (SPEC §1) to the planner's operator chain.

The stage graph is the one intermediate representation; this is the only place the planner reads
it. Mapping per node:
  state       stateless -> stateless; partitioned(K) -> partitioned, key K; unknown -> stateful
  selectivity exactly-one -> 1.0, at-most-one -> 0.5, any -> 1.0 with class `any` (until a
              profile gives the measured number; the class stays what the code allows)
  forwarding  all/dropped -> every column; keys/selected -> the literal columns; anything else
              (function, renamed, none, unknown) -> nothing, which is the safe answer
  a node that makes the partitioning `single` (coalesce(1), repartition(1), an unpartitioned
  window) is serial: kind stateful.
Costs are 1.0 per row until a profile replaces them.
Keys are read from the call's arguments, one component per argument: a column name (`"k"`,
`col("k")`) or, for any other expression (`F.window("t", "10 minutes")`), its source text, which
is also what the advice writes into `repartition(...)`; the graph's literal key names would split
that window into the "columns" t and "10 minutes".

The chain planned (with a profile) is the longest main-input path ending at a
sink; other branches (a join's second input, side outputs) are named in the notes. Without a
profile, `graph_from_stage_graph` gives every node with its inputs, for the graph planner.
"""

from __future__ import annotations

import libcst as cst

from sparkpar_lint.plan.join_keys import join_keys
from sparkpar_lint.plan.operators import Operator

_SELECTIVITY = {"exactly-one": 1.0, "at-most-one": 0.5, "any": 1.0}


def from_stage_graph(graph) -> tuple[tuple[Operator, ...], tuple[str, ...]]:
    """(operators of the main chain, source first; notes about what was left out)."""
    if not graph.nodes:
        return (), ("no Spark operators found in the file",)
    chain = _main_chain(graph)
    names = {}
    operators = []
    keys: dict[int, tuple[tuple[str, str], ...]] = {}
    for node in chain:
        name = f"{node.method}:{node.span.line}"
        if name in names:
            name = f"{name}#{node.id}"
        names[name] = node
        keys[node.id] = _key_components(node, graph, keys)
        operators.append(_operator(node, name, keys[node.id]))
    notes = []
    chosen = {node.id for node in chain}
    left_out = [f"{n.method}:{n.span.line}" for n in graph.nodes if n.id not in chosen]
    if left_out:
        notes.append(f"planned the main chain only; not in it: {', '.join(left_out)}")
    return tuple(operators), tuple(notes)


def graph_from_stage_graph(graph):
    """Every node as an operator, with the names of the operators it reads: (operators,
    inputs per operator), or None when the graph is one chain (the chain path plans it)."""
    nodes = sorted(graph.nodes, key=lambda n: n.id)  # a node's inputs are built before it
    consumers: dict[int, int] = {}
    for node in nodes:
        for i in set(node.inputs):
            consumers[i] = consumers.get(i, 0) + 1
    if all(len(set(n.inputs)) <= 1 for n in nodes) and all(c <= 1 for c in consumers.values()):
        return None
    names: dict[int, str] = {}
    operators, inputs = [], []
    keys: dict[int, tuple[tuple[str, str], ...]] = {}
    for node in nodes:
        name = f"{node.method}:{node.span.line}"
        if name in names.values():
            name = f"{name}#{node.id}"
        names[node.id] = name
        keys[node.id] = _key_components(node, graph, keys)
        operators.append(_operator(node, name, keys[node.id]))
        inputs.append(tuple(names[i] for i in dict.fromkeys(node.inputs) if i in names))
    return tuple(operators), tuple(inputs)


def _main_chain(graph) -> list:
    consumed = {i for node in graph.nodes for i in node.inputs}
    sinks = [node for node in graph.nodes if node.id not in consumed]
    best: list = []
    for sink in sinks:
        path = [sink, *graph.upstream(sink)]
        if len(path) > len(best):
            best = path
    return list(reversed(best))


def _key_components(node, graph, known) -> tuple[tuple[str, str], ...]:
    """(name, code) per key component: inherited from a grouped input, then the call's own."""
    if not node.keys:
        if node.method == "join" and isinstance(node.call, cst.Call):  # `on` is a condition
            return tuple((k, repr(k)) for k in join_keys(node.call))
        return ()
    inherited: tuple[tuple[str, str], ...] = ()
    if node.inputs and node.inputs[0] in known:
        upstream = graph.node(node.inputs[0])
        if upstream.keys and tuple(node.keys[: len(upstream.keys)]) == tuple(upstream.keys):
            inherited = known[node.inputs[0]]
    own: list[tuple[str, str]] = []
    if node.spec is not None and node.spec.keys == "args" and node.call is not None:
        for arg in node.call.args:
            if arg.keyword is None or arg.keyword.value in ("cols", "subset", "col"):
                own.extend(_components(arg.value, starred=arg.star == "*"))
    components = inherited + tuple(own)
    if not components:  # built from SQL text or a shape not read here: the graph's names
        return tuple((k, repr(k)) for k in node.keys)
    return components


def _components(expr: cst.BaseExpression, *, starred: bool = False) -> list[tuple[str, str]]:
    code = cst.Module([]).code_for_node(expr)
    if starred:
        return [(f"*{code}", f"*{code}")]
    if isinstance(expr, (cst.List, cst.Tuple)):
        return [
            c
            for element in expr.elements
            for c in _components(element.value, starred=isinstance(element, cst.StarredElement))
        ]
    literal = _string(expr)
    if (
        literal is None
        and isinstance(expr, cst.Call)
        and len(expr.args) == 1
        and _callee(expr.func) in ("col", "column")
    ):
        literal = _string(expr.args[0].value)
    if (
        literal is None
        and isinstance(expr, cst.Subscript)
        and len(expr.slice) == 1
        and isinstance(expr.slice[0].slice, cst.Index)
    ):
        literal = _string(expr.slice[0].slice.value)  # df["k"]
    if literal is not None:
        return [(literal, repr(literal))]
    while (
        isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and _callee(expr.func) in ("alias", "name")
    ):
        expr = expr.func.value  # partitioning by an expression ignores what it is called
    code = cst.Module([]).code_for_node(expr)
    return [(code, code)]


def _string(expr) -> str | None:
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _callee(func) -> str:
    if isinstance(func, cst.Name):
        return func.value
    return func.attr.value if isinstance(func, cst.Attribute) else ""


def _operator(node, name: str, components=()) -> Operator:
    state = node.state
    key: tuple[str, ...] = ()
    key_code: tuple[str, ...] = ()
    kind = "stateless"
    if state.startswith("partitioned"):
        key = tuple(name for name, _ in components) or tuple(node.keys)
        key_code = tuple(code for _, code in components)
        kind = "partitioned" if key else "stateful"
    elif state != "stateless":
        kind = "stateful"
    partitioning = node.output_partitioning
    if partitioning.kind == "single" and partitioning.established_by == node.id:
        kind, key, key_code = "stateful", (), ()
    selectivity_class = node.selectivity
    if selectivity_class not in _SELECTIVITY:
        selectivity_class = "any"
    return Operator(
        name=name,
        kind=kind,
        key=key,
        key_code=key_code,
        streaming=node.streaming,
        api=node.receiver,
        cost=1.0,
        selectivity=_SELECTIVITY[selectivity_class],
        selectivity_class=selectivity_class,
        forwarded=_forwarded(node, components),
        origin=str(node.id),
    )


def _forwarded(node, components=()) -> frozenset[str] | None:
    spec = node.spec
    if spec is None:
        return frozenset()
    if spec.forwarding in ("all", "dropped"):
        return None
    if spec.forwarding in ("keys", "selected"):
        # An expression key comes out under another name (`window`): only named columns pass.
        named = {name for name, code in components if code == repr(name)}
        return frozenset(named) if components else frozenset(node.keys)
    return frozenset()
