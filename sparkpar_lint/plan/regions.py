"""Safe parallel regions (auto-parallelizing paper §3.1, §3.3, §3.4, §4.4).

Regions are formed left to right: a region starts as close to a source as possible and keeps
taking the next operator while every safety condition holds — state stateless or partitioned,
selectivity at most one, fan-in and fan-out at most one, compatible (intersecting) keys that every
operator before the keyed one forwards, fusion partners inside the same region. Each region's
ordering strategy comes from Table 1; adjacent regions whose keys are incompatible are joined by a
shuffle instead of a serial merge-and-split.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sparkpar_lint.plan.operators import Operator, OperatorGraph

ROUND_ROBIN = "round-robin"
SEQNO = "seqno"
SEQNO_PULSES = "seqno+pulses"
NOT_PARALLEL = "not parallel"

# Table 1: (state, selectivity class) -> ordering strategy.
TABLE_1 = {
    ("stateless", "exactly-one"): ROUND_ROBIN,
    ("stateless", "at-most-one"): SEQNO_PULSES,
    ("stateless", "any"): NOT_PARALLEL,
    ("partitioned", "exactly-one"): SEQNO,
    ("partitioned", "at-most-one"): SEQNO_PULSES,
    ("partitioned", "any"): NOT_PARALLEL,
    ("stateful", "exactly-one"): NOT_PARALLEL,
    ("stateful", "at-most-one"): NOT_PARALLEL,
    ("stateful", "any"): NOT_PARALLEL,
}


def ordering_strategy(state: str, selectivity_class: str) -> str:
    """Table 1 of the auto-parallelizing paper; `stateful` is its "unknown state" row."""
    return TABLE_1[(state, selectivity_class)]


def region_state(ops: Sequence[Operator]) -> str:
    kinds = {op.kind for op in ops}
    if "stateful" in kinds:
        return "stateful"
    return "partitioned" if "partitioned" in kinds else "stateless"


def region_selectivity_class(ops: Sequence[Operator]) -> str:
    classes = {op.selectivity_class for op in ops}
    if "any" in classes:
        return "any"
    return "at-most-one" if "at-most-one" in classes else "exactly-one"


def extend_key(
    key: tuple[str, ...] | None, members: Sequence[Operator], op: Operator
) -> tuple[tuple[str, ...] | None, str]:
    """The region key after adding `op`, or an empty reason string when it may not be added.

    Returns (new key, "") on success and (None, reason) when the keys are incompatible or the
    key is not forwarded by an earlier member.
    """
    if not op.parallelizable:
        return None, _serial_reason(op)
    if op.kind != "partitioned":
        return key, ""
    new_key = op.key if key is None else tuple(k for k in key if k in op.key)
    if not new_key:
        return None, f"key {_fmt(op.key)} is incompatible with the region key {_fmt(key)}"
    for member in members:
        if not member.forwards(new_key):
            return None, f"{member.name} does not forward the key {_fmt(new_key)}"
    return new_key, ""


def replicable(ops: Sequence[Operator]) -> bool:
    """L_p of the fission paper plus the forwarded-key condition: may these run as replicas?"""
    key: tuple[str, ...] | None = None
    for index, op in enumerate(ops):
        key, reason = extend_key(key, ops[:index], op)
        if reason:
            return False
    return True


def region_key(ops: Sequence[Operator]) -> tuple[str, ...]:
    key: tuple[str, ...] | None = None
    for index, op in enumerate(ops):
        key, _ = extend_key(key, ops[:index], op)
    return key or ()


@dataclass(frozen=True)
class ParallelRegion:
    operators: tuple[str, ...]
    state: str  # stateless | partitioned
    key: tuple[str, ...]
    selectivity_class: str
    strategy: str
    first_joint: str  # parallel source | split | shuffle
    last_joint: str  # parallel sink | merge | shuffle
    ended_because: str = ""  # why the next operator did not join


@dataclass(frozen=True)
class SerialOperator:
    name: str
    reason: str


@dataclass(frozen=True)
class RegionFormation:
    regions: tuple[ParallelRegion, ...]
    serial: tuple[SerialOperator, ...]

    def region_of(self, name: str) -> ParallelRegion | None:
        return next((r for r in self.regions if name in r.operators), None)


def form_regions(graph: OperatorGraph) -> RegionFormation:
    """Left-to-right region formation with the fusion condition iterated to a fixed point."""
    pinned: dict[str, str] = {}
    while True:
        groups, serial = _grow(graph, pinned)
        newly = _fusion_violations(graph, groups, pinned)
        if not newly:
            break
        pinned.update(newly)
    return RegionFormation(tuple(_finish(graph, groups)), tuple(serial))


def _grow(graph: OperatorGraph, pinned: dict[str, str]):
    groups: list[tuple[list[Operator], tuple[str, ...], str]] = []
    serial: list[SerialOperator] = []
    assigned: set[str] = set()
    for op in _topological(graph):
        if op.name in assigned:
            continue
        reason = _ineligible(graph, op, pinned)
        if reason:
            serial.append(SerialOperator(op.name, reason))
            assigned.add(op.name)
            continue
        members, key, ended = [op], (op.key if op.kind == "partitioned" else None), ""
        assigned.add(op.name)
        while True:
            successors = graph.successors(members[-1].name)
            if len(successors) != 1:
                ended = "end of the stream" if not successors else "fan-out > 1"
                break
            nxt = graph.by_name[successors[0]]
            ended = _ineligible(graph, nxt, pinned)
            if not ended:
                new_key, ended = extend_key(key, members, nxt)
            if ended:
                break
            members.append(nxt)
            key = new_key
            assigned.add(nxt.name)
        groups.append((members, key or (), ended))
    return groups, serial


def _ineligible(graph: OperatorGraph, op: Operator, pinned: dict[str, str]) -> str:
    if op.name in pinned:
        return pinned[op.name]
    if not op.parallelizable:
        return _serial_reason(op)
    if graph.fan_in(op.name) > 1:
        return f"fan-in {graph.fan_in(op.name)} > 1"
    if graph.fan_out(op.name) > 1:
        return f"fan-out {graph.fan_out(op.name)} > 1"
    return ""


def _serial_reason(op: Operator) -> str:
    if op.kind == "stateful":
        return "unknown or non-partitioned state"
    return "selectivity may exceed one"


def _fusion_violations(graph, groups, pinned) -> dict[str, str]:
    home = {op.name: index for index, (members, _, _) in enumerate(groups) for op in members}
    found = {}
    for op in graph.operators:
        for partner in op.fused_with:
            if op.name in home and home.get(partner) != home[op.name] and op.name not in pinned:
                found[op.name] = f"fusion dependency with {partner} outside its region"
    return found


def _finish(graph: OperatorGraph, groups) -> list[ParallelRegion]:
    by_first = {members[0].name: index for index, (members, _, _) in enumerate(groups)}
    by_last = {members[-1].name: index for index, (members, _, _) in enumerate(groups)}
    shuffled_in: set[int] = set()
    shuffled_out: set[int] = set()
    # Two regions joined directly by a stream stayed apart because their keys clash: a shuffle.
    for src, dst in graph.edges:
        if src in by_last and dst in by_first:
            shuffled_out.add(by_last[src])
            shuffled_in.add(by_first[dst])
    regions = []
    for index, (members, key, ended) in enumerate(groups):
        first, last = members[0].name, members[-1].name
        state = region_state(members)
        sel = region_selectivity_class(members)
        regions.append(
            ParallelRegion(
                operators=tuple(op.name for op in members),
                state=state,
                key=key,
                selectivity_class=sel,
                strategy=ordering_strategy(state, sel),
                first_joint="shuffle"
                if index in shuffled_in
                else ("parallel source" if graph.fan_in(first) == 0 else "split"),
                last_joint="shuffle"
                if index in shuffled_out
                else ("parallel sink" if graph.fan_out(last) == 0 else "merge"),
                ended_because=ended,
            )
        )
    return regions


def _topological(graph: OperatorGraph) -> list[Operator]:
    """Operators sources-first, keeping the listed order among the ready ones."""
    indegree = {op.name: graph.fan_in(op.name) for op in graph.operators}
    order: list[Operator] = []
    done: set[str] = set()
    while len(order) < len(graph.operators):
        ready = [op for op in graph.operators if op.name not in done and indegree[op.name] == 0]
        if not ready:  # a cycle: fall back to the listed order for the rest
            ready = [op for op in graph.operators if op.name not in done]
        op = ready[0]
        order.append(op)
        done.add(op.name)
        for succ in graph.successors(op.name):
            indegree[succ] -= 1
    return order


def _fmt(key: tuple[str, ...] | None) -> str:
    return "{" + ", ".join(key or ()) + "}"
