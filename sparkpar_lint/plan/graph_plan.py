"""Planning an operator graph (joins, unions, fan-out), not only a chain.

The graph is cut into segments: maximal chains that hold no fan-in or fan-out inside them. An
operator with several inputs starts a segment and one with several consumers ends one, so a
region (which lives inside a segment) never spans a fan-in: the streams meeting there carry no
common order a region could keep, and their splitter would have to merge them first. Each segment
is planned with the chain model (regions, pipelines, replicas); the segments are then tied
together by their rates:
  * every source produces at the program's input throughput x (rows per time unit per source);
  * an operator with several inputs receives the sum of their output rates (a union passes each
    row on, a join is costed per row arriving from either side); fan-out copies a stream to every
    consumer;
so a segment entered at F rows per source row sustains x <= capacity / F and costs F x work per
source row. Throughput, utilization and the core bound then combine as for a chain.

`brute_force_graph` is exact over the same space as the heuristic (every per-segment
configuration, at most the thread budget in all), by Pareto-pruned product over the segments.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sparkpar_lint.plan.heuristic import _moves, _State, enumerate_configurations
from sparkpar_lint.plan.operators import PlanModel
from sparkpar_lint.plan.throughput import (
    ChainModel,
    Configuration,
    Estimate,
    bounded_throughput,
)


@dataclass(frozen=True)
class Segment:
    operators: tuple[int, ...]  # indexes into the model's operators, upstream first
    entry: float  # rows entering the segment per source row
    source: bool  # no inputs: its first region needs no incoming queue
    sink: bool  # no consumers


class GraphModel:
    def __init__(self, model: PlanModel):
        self.model = model
        ops = model.operators
        index = {op.name: k for k, op in enumerate(ops)}
        reads = [tuple(index[n] for n in names) for names in (model.inputs or ())]
        if len(reads) != len(ops):  # a chain in list order
            reads = [() if k == 0 else (k - 1,) for k in range(len(ops))]
        consumers: list[list[int]] = [[] for _ in ops]
        for k, preds in enumerate(reads):
            for p in preds:
                consumers[p].append(k)
        order = _topological(reads)
        rate_in = [0.0] * len(ops)
        for k in order:
            rate_in[k] = 1.0 if not reads[k] else sum(rate_in[p] * ops[p].selectivity for p in reads[k])
        starts = [k for k in order if len(reads[k]) != 1 or len(consumers[reads[k][0]]) != 1]
        self.segments = []
        for k in starts:
            members = [k]
            while len(consumers[members[-1]]) == 1 and len(reads[consumers[members[-1]][0]]) == 1:
                members.append(consumers[members[-1]][0])
            self.segments.append(Segment(tuple(members), rate_in[k], not reads[k], not consumers[members[-1]]))
        self.chains = [
            ChainModel(
                PlanModel(
                    tuple(ops[k] for k in seg.operators),
                    model.cores,
                    model.thread_switch_cost,
                    model.replication_cost,
                    model.max_threads,
                )
            )
            for seg in self.segments
        ]
        # Every segment is at least one thread of its own: the budget a chain has, plus one
        # thread for each further segment.
        self.budget = model.thread_budget + len(self.segments) - 1

    def region_stats(self, s: int, config: Configuration) -> list[tuple[float, float]]:
        """(capacity in source rows, work per source row) of each region of segment s."""
        seg, chain = self.segments[s], self.chains[s]
        last = len(config.regions) - 1
        stats = []
        for i, rc in enumerate(config.regions):
            cap, work = chain.region(rc, i == 0 and seg.source, i == last and seg.sink)
            stats.append((cap / seg.entry if seg.entry > 0 else cap, work * seg.entry))
        return stats

    def evaluate(self, configs: list[Configuration]) -> Estimate:
        caps, work = [], 0.0
        for s, config in enumerate(configs):
            for cap, w in self.region_stats(s, config):
                caps.append(cap)
                work += w
        unbounded = min(caps)
        utilization = unbounded * work
        return Estimate(
            bounded_throughput(unbounded, utilization, self.model.cores),
            unbounded,
            utilization,
            tuple(caps),
            caps.index(unbounded),
        )

    def sequential(self) -> list[Configuration]:
        return [Configuration.sequential(len(chain)) for chain in self.chains]


def _topological(reads: Sequence[Sequence[int]]) -> list[int]:
    order: list[int] = []
    placed: set[int] = set()
    while len(order) < len(reads):
        for k, preds in enumerate(reads):
            if k not in placed and all(p in placed for p in preds):
                order.append(k)
                placed.add(k)
    return order


def threads(configs: Iterable[Configuration]) -> int:
    return sum(c.threads for c in configs)


def heuristic_graph(graph: GraphModel, *, pipelining: bool = True) -> list[Configuration]:
    """Hill-climb from one thread per segment: the chain planner's moves, in any segment, taken
    while they strictly raise the bounded throughput within the thread budget."""
    configs = graph.sequential()
    current = graph.evaluate(configs)
    for _ in range(8 * sum(len(c) for c in graph.chains) + 4 * graph.budget):
        best = None
        for s, chain in enumerate(graph.chains):
            state = _State(chain, list(configs[s].regions))
            local = [cap for cap, _ in graph.region_stats(s, configs[s])]
            for i, pieces in _moves(chain, state, local.index(min(local)), pipelining):
                pieces = [pieces] if not isinstance(pieces, list) else pieces
                regions = list(configs[s].regions)
                regions[i : i + 1] = pieces
                trial = [*configs[:s], Configuration(tuple(regions)), *configs[s + 1 :]]
                if threads(trial) > graph.budget:
                    continue
                estimate = graph.evaluate(trial)
                if best is None or estimate.throughput > best[0].throughput:
                    best = (estimate, trial)
        if best is None or best[0].throughput <= current.throughput * (1 + 1e-12):
            break
        current, configs = best
    return configs


def brute_force_graph(graph: GraphModel, *, pipelining: bool = True) -> list[Configuration]:
    """The best per-segment configurations within the thread budget, exhaustively."""
    cores, budget = graph.model.cores, graph.budget
    options = []
    for s, chain in enumerate(graph.chains):
        found: dict[tuple[float, float, int], Configuration] = {}
        for config in enumerate_configurations(len(chain), budget, chain):
            if not pipelining and any(rc.cuts for rc in config.regions):
                continue
            stats = graph.region_stats(s, config)
            point = (min(c for c, _ in stats), sum(w for _, w in stats), config.threads)
            found.setdefault(point, config)
        options.append(_pareto(found))
    best_value = -1.0
    best: list[Configuration] | None = None
    for combo in itertools.product(*options):
        if sum(p[2] for p, _ in combo) > budget:
            continue
        cap = min(p[0] for p, _ in combo)
        work = sum(p[1] for p, _ in combo)
        value = min(cap, cores / work) if work > 0 else cap
        if value > best_value:
            best_value, best = value, [c for _, c in combo]
    assert best is not None, "no configuration fits the thread budget"
    return best


def _pareto(
    found: dict[tuple[float, float, int], Configuration],
) -> list[tuple[tuple[float, float, int], Configuration]]:
    """Drop configurations another beats on capacity, work and threads at once (the value is
    monotone in all three, so the optimum survives)."""
    points = sorted(found.items(), key=lambda item: (-item[0][0], item[0][1], item[0][2]))
    kept: list[tuple[tuple[float, float, int], Configuration]] = []
    for point, config in points:
        if not any(o[0] >= point[0] and o[1] <= point[1] and o[2] <= point[2] for o, _ in kept):
            kept.append((point, config))
    return kept


@dataclass(frozen=True)
class GraphPlan:
    configs: tuple[Configuration, ...]
    estimate: Estimate
    method: str
    sequential: Estimate


def plan_graph(model: PlanModel, *, brute: bool = False, pipelining: bool = True) -> GraphPlan:
    graph = GraphModel(model)
    configs = (
        brute_force_graph(graph, pipelining=pipelining) if brute else heuristic_graph(graph, pipelining=pipelining)
    )
    return GraphPlan(
        tuple(configs),
        graph.evaluate(configs),
        "brute-force" if brute else "heuristic",
        graph.evaluate(graph.sequential()),
    )
