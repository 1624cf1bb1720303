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

The planner's model is a chain: the chain planned is the longest main-input path ending at a
sink; other branches (a join's second input, side outputs) are named in the notes.
"""

from __future__ import annotations

from sparkpar_lint.plan.operators import Operator

_SELECTIVITY = {"exactly-one": 1.0, "at-most-one": 0.5, "any": 1.0}


def from_stage_graph(graph) -> tuple[tuple[Operator, ...], tuple[str, ...]]:
    """(operators of the main chain, source first; notes about what was left out)."""
    if not graph.nodes:
        return (), ("no Spark operators found in the file",)
    chain = _main_chain(graph)
    names = {}
    operators = []
    for node in chain:
        name = f"{node.method}:{node.span.line}"
        if name in names:
            name = f"{name}#{node.id}"
        names[name] = node
        operators.append(_operator(node, name))
    notes = []
    chosen = {node.id for node in chain}
    left_out = [f"{n.method}:{n.span.line}" for n in graph.nodes if n.id not in chosen]
    if left_out:
        notes.append(f"planned the main chain only; not in it: {', '.join(left_out)}")
    return tuple(operators), tuple(notes)


def _main_chain(graph) -> list:
    consumed = {i for node in graph.nodes for i in node.inputs}
    sinks = [node for node in graph.nodes if node.id not in consumed]
    best = []
    for sink in sinks:
        path = [sink, *graph.upstream(sink)]
        if len(path) > len(best):
            best = path
    return list(reversed(best))


def _operator(node, name: str) -> Operator:
    state = node.state
    key: tuple[str, ...] = ()
    kind = "stateless"
    if state.startswith("partitioned"):
        key = tuple(node.keys)
        kind = "partitioned" if key else "stateful"
    elif state != "stateless":
        kind = "stateful"
    partitioning = node.output_partitioning
    if partitioning.kind == "single" and partitioning.established_by == node.id:
        kind, key = "stateful", ()
    selectivity_class = node.selectivity
    if selectivity_class not in _SELECTIVITY:
        selectivity_class = "any"
    return Operator(
        name=name, kind=kind, key=key, cost=1.0,
        selectivity=_SELECTIVITY[selectivity_class], selectivity_class=selectivity_class,
        forwarded=_forwarded(node), origin=str(node.id))


def _forwarded(node) -> frozenset[str] | None:
    spec = node.spec
    if spec is None:
        return frozenset()
    if spec.forwarding in ("all", "dropped"):
        return None
    if spec.forwarding in ("keys", "selected"):
        return frozenset(node.keys)
    return frozenset()
