"""Choosing a configuration: the three-phase heuristic (fission paper §4) and exact search.

`pipelined_fission` is Algorithm 1: regions (Alg. 2, with the safety conditions of the
auto-parallelizing paper instead of "same or broader key"), then for each utilization split
s in 0, 0.1, ..., 1 pipelines (Alg. 3, budget s*C) and replicas (Alg. 4, budget C), keeping the
best bounded throughput. Two small departures, both cheap and both only ever improve the result:
the replica phase remembers the best bounded configuration it passed through (its last step may
overshoot the cores), and Algorithm 1 is run for a few fusion thresholds alpha.

Both searches work in the same space: configurations using at most the model's thread budget.
Without that limit in the heuristic, its channel-adding steps could go past the budget the exact
search is confined to and "beat" it (a ratio of 1.0009 in bench/plan_quality.py), so the brute
force would not be a bound.

`brute_force` is exact: every way to tile the chain into regions, cut regions into pipelines and
replicate the safe regions within a thread budget (2 x cores by default, the paper's k*C). It is a
depth-first branch and bound — a prefix can only lose capacity and gain work, so
min(capacity, C / work) bounds every completion — which keeps 8-operator chains to milliseconds
without skipping any configuration that could win.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, replace

from sparkpar_lint.plan.operators import OperatorGraph, PlanModel
from sparkpar_lint.plan.regions import form_regions
from sparkpar_lint.plan.throughput import (
    INF,
    ChainModel,
    Configuration,
    Estimate,
    RegionConfig,
)

UTILIZATION_SPLITS = tuple(i / 10 for i in range(11))


@dataclass(frozen=True)
class Plan:
    config: Configuration
    estimate: Estimate
    method: str  # heuristic | brute-force | sequential
    sequential: Estimate  # the same chain with no parallelism, for the speed-up

    @property
    def speedup(self) -> float:
        return self.estimate.throughput / self.sequential.throughput


def plan_chain(model: PlanModel, *, brute: bool = False, pipelining: bool = True) -> Plan:
    chain = ChainModel(model)
    config = brute_force(chain, pipelining=pipelining) if brute else pipelined_fission(chain, pipelining=pipelining)
    return Plan(
        config,
        chain.evaluate(config),
        "brute-force" if brute else "heuristic",
        chain.evaluate(Configuration.sequential(len(chain))),
    )


# --- phase 1: regions ---------------------------------------------------------------------


def configure_regions(chain: ChainModel, alpha: float) -> list[RegionConfig]:
    """Algorithm 2: safe regions costing more than alpha; the rest merged into simple regions."""
    formation = form_regions(OperatorGraph.chain(chain.ops))
    index = {op.name: k for k, op in enumerate(chain.ops)}
    parallel = {}
    for region in formation.regions:
        start = index[region.operators[0]]
        end = index[region.operators[-1]] + 1
        if chain.pipeline_cost(start, end) > alpha:
            parallel[start] = end
    regions, k, pending = [], 0, None
    while k < len(chain):
        if k in parallel:
            if pending is not None:
                regions.append(RegionConfig(pending, k))
                pending = None
            regions.append(RegionConfig(k, parallel[k]))
            k = parallel[k]
        else:
            pending = k if pending is None else pending
            k += 1
    if pending is not None:
        regions.append(RegionConfig(pending, len(chain)))
    return regions


# --- phases 2 and 3 -----------------------------------------------------------------------


# A trial's pieces and their (capacity, work) stats, applied by `_State.set`.
_Change = tuple[list[RegionConfig], list[tuple[float, float]]]


class _State:
    """Regions with their (capacity, work) kept up to date, so a change re-costs one region."""

    def __init__(self, chain: ChainModel, regions: list[RegionConfig]):
        self.chain = chain
        self.regions = list(regions)
        last = len(self.regions) - 1
        self.stats = [chain.region(rc, i == 0, i == last) for i, rc in enumerate(self.regions)]
        self.threads = sum(rc.threads for rc in self.regions)

    def estimate(self) -> Estimate:
        return self.chain.combine([c for c, _ in self.stats], sum(w for _, w in self.stats))

    def trial(self, i: int, pieces: RegionConfig | list[RegionConfig]) -> tuple[Estimate, _Change]:
        """The estimate with region i replaced by `pieces` (one region, or two after a split)."""
        pieces = [pieces] if isinstance(pieces, RegionConfig) else pieces
        last = len(self.regions) - 1
        stats = [
            self.chain.region(rc, i == 0 and k == 0, i == last and k == len(pieces) - 1) for k, rc in enumerate(pieces)
        ]
        caps = [c for c, _ in self.stats[:i]] + [c for c, _ in stats] + [c for c, _ in self.stats[i + 1 :]]
        work = sum(w for _, w in self.stats) - self.stats[i][1] + sum(w for _, w in stats)
        return self.chain.combine(caps, work), (pieces, stats)

    def set(self, i: int, change: _Change) -> None:
        pieces, stats = change
        self.threads += sum(p.threads for p in pieces) - self.regions[i].threads
        self.regions[i : i + 1] = pieces
        self.stats[i : i + 1] = stats

    def config(self) -> Configuration:
        return Configuration(tuple(self.regions))

    def fits(self, i: int, pieces: RegionConfig | list[RegionConfig]) -> bool:
        """Whether replacing region i by `pieces` keeps the configuration in the thread budget."""
        pieces = [pieces] if isinstance(pieces, RegionConfig) else pieces
        threads = self.threads - self.regions[i].threads + sum(p.threads for p in pieces)
        return threads <= self.chain.model.thread_budget


def configure_pipelines(chain: ChainModel, regions: list[RegionConfig], budget: float) -> list[RegionConfig]:
    """Algorithm 3: split the bottleneck pipeline at its best point while U <= budget."""
    state = _State(chain, regions)
    for _ in range(len(chain)):
        current = state.estimate()
        if current.utilization > budget:
            break
        i = current.bottleneck
        rc = state.regions[i]
        a, b = _bottleneck_pipeline(chain, rc)
        best = None
        for k in range(a + 1, b):
            candidate = replace(rc, cuts=tuple(sorted((*rc.cuts, k))))
            if not state.fits(i, candidate):
                continue
            estimate, stat = state.trial(i, candidate)
            if best is None or estimate.unbounded > best[0].unbounded:
                best = (estimate, candidate, stat)
        if best is None or best[0].unbounded <= current.unbounded:
            break  # the bottleneck pipeline cannot be improved, so nothing can
        state.set(i, best[2])
    return state.regions


def _bottleneck_pipeline(chain: ChainModel, rc: RegionConfig) -> tuple[int, int]:
    worst, found = INF, rc.pipelines[0]
    for a, b in rc.pipelines:
        rate = chain.G[a] / max(chain.pipeline_cost(a, b), 1e-300)
        if rate < worst:
            worst, found = rate, (a, b)
    return found


def configure_replicas(chain: ChainModel, regions: list[RegionConfig]) -> tuple[Configuration, Estimate]:
    """Algorithm 4: add a channel to the bottleneck region while U <= C and it helps."""
    state = _State(chain, [replace(rc, replicas=1) for rc in regions])
    current = state.estimate()
    best = (state.config(), current)
    budget = chain.model.thread_budget
    for _ in range(budget * len(regions)):
        if current.utilization > chain.cores:
            break
        i = current.bottleneck
        rc = state.regions[i]
        if not chain.can_replicate(rc.start, rc.end):
            break  # a serial region is the bottleneck: more channels elsewhere cannot help
        if chain.scalability(rc.start, rc.end, rc.replicas + 1) <= chain.scalability(rc.start, rc.end, rc.replicas):
            break  # the key domain bounds this region
        candidate = replace(rc, replicas=rc.replicas + 1)
        if not state.fits(i, candidate):
            break
        estimate, stat = state.trial(i, candidate)
        if estimate.unbounded < current.unbounded:
            break
        state.set(i, stat)
        current = estimate
        if current.throughput > best[1].throughput:
            best = (state.config(), current)
    return best


def pipelined_fission(chain: ChainModel, *, pipelining: bool = True) -> Configuration:
    """Algorithm 1, over a few fusion thresholds alpha; the best bounded throughput wins."""
    overhead = 2 * chain.delta + chain.cp
    sequential = Configuration.sequential(len(chain))  # one thread: always within the budget
    best = (sequential, chain.evaluate(sequential))
    for alpha in sorted({0.0, overhead, 4 * overhead}):
        regions = configure_regions(chain, alpha)
        for split in UTILIZATION_SPLITS if pipelining else (0.0,):
            pipelined = configure_pipelines(chain, regions, split * chain.cores)
            config, estimate = configure_replicas(chain, pipelined)
            if config.threads > chain.model.thread_budget:
                continue  # more regions than the budget has threads
            if estimate.throughput > best[1].throughput:
                best = (config, estimate)
    return refine(chain, best[0], pipelining=pipelining)


def refine(chain: ChainModel, config: Configuration, *, pipelining: bool = True) -> Configuration:
    """Hill-climb from the heuristic's answer, one move at a time, on bounded throughput.

    Moves: a channel more or a new pipeline cut in the bottleneck region (Algorithms 3 and 4 do
    these only in that order, so a bottleneck met in the pipeline phase that only fission can
    relieve stops pipelining everywhere); a channel less or a cut fewer anywhere (the last step
    may overshoot the cores). Only strictly better moves are taken, so it terminates.
    """
    state = _State(chain, list(config.regions))
    current = state.estimate()
    for _ in range(4 * len(chain) + 4 * chain.model.thread_budget):
        best = None
        for i, candidate in _moves(chain, state, current.bottleneck, pipelining):
            if not state.fits(i, candidate):
                continue
            estimate, stat = state.trial(i, candidate)
            if best is None or estimate.throughput > best[0].throughput:
                best = (estimate, i, candidate, stat)
        if best is None or best[0].throughput <= current.throughput * (1 + 1e-12):
            break
        current = best[0]
        state.set(best[1], best[3])
    return state.config()


def _moves(
    chain: ChainModel, state: _State, bottleneck: int, pipelining: bool
) -> Iterator[tuple[int, RegionConfig | list[RegionConfig]]]:
    rc = state.regions[bottleneck]
    if chain.can_replicate(rc.start, rc.end) and chain.scalability(
        rc.start, rc.end, rc.replicas + 1
    ) > chain.scalability(rc.start, rc.end, rc.replicas):
        yield bottleneck, replace(rc, replicas=rc.replicas + 1)
    for k in range(rc.start + 1, rc.end):
        if pipelining and k not in rc.cuts:
            yield bottleneck, replace(rc, cuts=tuple(sorted((*rc.cuts, k))))
        # Split the region in two and give one side a channel more (or the other one less).
        left = RegionConfig(rc.start, k, tuple(c for c in rc.cuts if c < k), rc.replicas)
        right = RegionConfig(k, rc.end, tuple(c for c in rc.cuts if c > k), rc.replicas)
        for dl, dr in ((1, 0), (0, 1), (1, -1), (-1, 1)):
            pieces = [replace(left, replicas=left.replicas + dl), replace(right, replicas=right.replicas + dr)]
            if all(p.replicas == 1 or (p.replicas > 1 and chain.can_replicate(p.start, p.end)) for p in pieces):
                yield bottleneck, pieces
    for i, other in enumerate(state.regions):
        if other.replicas > 1:
            yield i, replace(other, replicas=other.replicas - 1)
        for cut in other.cuts:
            yield i, replace(other, cuts=tuple(c for c in other.cuts if c != cut))


# --- exact search -------------------------------------------------------------------------


def brute_force(chain: ChainModel, *, pipelining: bool = True, max_threads: int | None = None) -> Configuration:
    """The best configuration within the thread budget, found by exhaustive branch and bound."""
    n, cores = len(chain), chain.cores
    budget = max_threads or chain.model.thread_budget
    options = [_region_options(chain, start, budget, pipelining) for start in range(n)]
    best_value = -1.0
    best_path: list[RegionConfig] | None = None
    path: list[RegionConfig] = []

    def search(start: int, cap: float, work: float, threads: int) -> None:
        nonlocal best_value, best_path
        if start == n:
            value = min(cap, cores / work) if work > 0 else cap
            if value > best_value:
                best_value, best_path = value, list(path)
            return
        for rc, rcap, rwork in options[start]:
            if threads + rc.threads > budget:
                continue
            ncap, nwork = min(cap, rcap), work + rwork
            if min(ncap, cores / nwork if nwork > 0 else INF) <= best_value:
                continue
            path.append(rc)
            search(rc.end, ncap, nwork, threads + rc.threads)
            path.pop()

    search(0, INF, 0.0, 0)
    assert best_path is not None, "no configuration fits the thread budget"
    return Configuration(tuple(best_path))


def _region_options(
    chain: ChainModel, start: int, budget: int, pipelining: bool
) -> list[tuple[RegionConfig, float, float]]:
    """Every (region, capacity, work) starting at `start`, most capable first."""
    n = len(chain)
    found = []
    for end in range(start + 1, n + 1):
        inner = range(start + 1, end)
        cut_sets = (
            itertools.chain.from_iterable(itertools.combinations(inner, k) for k in range(len(inner) + 1))
            if pipelining
            else [()]
        )
        safe = chain.can_replicate(start, end)
        for cuts in cut_sets:
            pipes = len(cuts) + 1
            for replicas in range(1, (budget // pipes if safe else 1) + 1):
                rc = RegionConfig(start, end, tuple(cuts), replicas)
                cap, work = chain.region(rc, start == 0, end == n)
                found.append((rc, cap, work))
    found.sort(key=lambda option: -option[1])
    return found


def enumerate_configurations(n: int, budget: int, chain: ChainModel) -> Iterator[Configuration]:
    """Every valid configuration, plainly (small n only): the check on `brute_force` itself."""
    for region_cuts in itertools.product((0, 1, 2), repeat=n - 1):  # none | pipeline | region
        bounds = 0
        regions: list[tuple[int, int, tuple[int, ...]]] = []
        cuts: list[int] = []
        for k, kind in enumerate(region_cuts, start=1):
            if kind == 2:
                regions.append((bounds, k, tuple(cuts)))
                bounds, cuts = k, []
            elif kind == 1:
                cuts.append(k)
        regions.append((bounds, n, tuple(cuts)))
        choices = [range(1, budget + 1) if chain.can_replicate(s, e) else (1,) for s, e, _ in regions]
        for replicas in itertools.product(*choices):
            config = Configuration(tuple(RegionConfig(s, e, c, r) for (s, e, c), r in zip(regions, replicas)))
            if config.threads <= budget:
                yield config


def best_by_enumeration(chain: ChainModel, budget: int) -> tuple[Configuration, float]:
    best = max(enumerate_configurations(len(chain), budget, chain), key=lambda c: chain.evaluate(c).throughput)
    return best, chain.evaluate(best).throughput
