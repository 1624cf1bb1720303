"""The pipelined-fission throughput model (Gedik et al., §3.2), for a chain of operators.

A configuration cuts the chain into regions, each region into pipelines (one thread per pipeline
replica) and gives each region a replica count. Notation follows the paper: c pipeline cost (2),
h thread-switching overhead (5, 10), R_j backpressure recursion (3, 11), R* replicated throughput
with the replication cost factor c_p (8), R+ with the region's own switching cost (9), bounded
throughput R * C / U (13) with utilization U (14).

Two algebraic facts make evaluation O(regions + pipelines) and let the searches reuse work:
  * the backpressure recursion (3)/(11) unrolls to a minimum: the program's input throughput is
    min over regions of R+(P_i) / S_i, where S_i is the selectivity of everything before region i
    (and likewise for pipelines inside a region), and
  * selectivity before operator k is a prefix product G[k], so a pipeline's cost (2) is
    (PC[b] - PC[a]) / G[a] with PC the prefix sum of G[k] * c(o_k).

Bounded throughput scales only down: when the unbounded configuration needs fewer cores than the
machine has (U <= C), Eq. 13 read literally would promise more than the unbounded throughput;
we use R * min(1, C / U).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from sparkpar_lint.plan.operators import Operator, PlanModel
from sparkpar_lint.plan.regions import replicable

INF = math.inf


@dataclass(frozen=True)
class RegionConfig:
    start: int  # index of the first operator
    end: int  # one past the last operator
    cuts: tuple[int, ...] = ()  # operator indexes where a new pipeline (threaded port) starts
    replicas: int = 1

    @property
    def pipelines(self) -> list[tuple[int, int]]:
        bounds = [self.start, *self.cuts, self.end]
        return list(zip(bounds, bounds[1:]))

    @property
    def threads(self) -> int:
        return self.replicas * (len(self.cuts) + 1)


@dataclass(frozen=True)
class Configuration:
    regions: tuple[RegionConfig, ...]

    @property
    def threads(self) -> int:
        return sum(r.threads for r in self.regions)

    @property
    def operator_replicas(self) -> int:
        return sum(r.replicas * (r.end - r.start) for r in self.regions)

    @classmethod
    def sequential(cls, n: int) -> Configuration:
        return cls((RegionConfig(0, n),))


@dataclass(frozen=True)
class Estimate:
    throughput: float  # bounded input throughput, rows per time unit at the source
    unbounded: float
    utilization: float  # cores busy under the unbounded throughput
    region_capacity: tuple[float, ...]  # R+(P_i) normalized to source rows
    bottleneck: int  # index of the region that limits the unbounded throughput


class ChainModel:
    """Precomputed prefix products/sums for one chain and machine."""

    def __init__(self, model: PlanModel):
        self.model = model
        self.ops: tuple[Operator, ...] = model.operators
        self.delta = model.thread_switch_cost
        self.cp = model.replication_cost
        self.cores = model.cores
        n = len(self.ops)
        self.G = [1.0] * (n + 1)  # selectivity before operator k
        self.PC = [0.0] * (n + 1)  # sum of G[k] * c(o_k) for operators before k
        for k, op in enumerate(self.ops):
            self.G[k + 1] = self.G[k] * op.selectivity
            self.PC[k + 1] = self.PC[k] + self.G[k] * op.cost
        self._replicable: dict[tuple[int, int], bool] = {}
        self._limit: dict[tuple[int, int], int | None] = {}

    def __len__(self) -> int:
        return len(self.ops)

    # --- per-piece quantities -------------------------------------------------------------

    def can_replicate(self, start: int, end: int) -> bool:
        span = (start, end)
        if span not in self._replicable:
            self._replicable[span] = replicable(self.ops[start:end])
        return self._replicable[span]

    def scalability(self, start: int, end: int, replicas: int) -> float:
        """f<P_i>(x) = min over the region's operators (Eq. 7)."""
        span = (start, end)
        if span not in self._limit:
            limits = [op.max_replicas for op in self.ops[start:end] if op.max_replicas]
            self._limit[span] = min(limits) if limits else None
        limit = self._limit[span]
        return float(replicas if limit is None else min(replicas, limit))

    def pipeline_cost(self, a: int, b: int) -> float:
        """c(P_ij), Eq. 2, per row entering the pipeline."""
        return (self.PC[b] - self.PC[a]) / self.G[a]

    def region(self, rc: RegionConfig, first: bool, last: bool) -> tuple[float, float]:
        """(capacity, work) of one region, both per source row.

        capacity: R+(P_i) / S_i, the source rate the region sustains alone (Eq. 3-10);
        work: S_i * (c_p log2 r + h(P_i) + sum_j s_j (h(P_ij) + c(P_ij))), its share of Eq. 14.
        """
        G, delta = self.G, self.delta
        start, end = rc.start, rc.end
        pipes = rc.pipelines
        capacity = INF  # R(P_i) in rows entering the region
        work = 0.0  # per row entering the region
        for j, (a, b) in enumerate(pipes):
            sel_before = G[a] / G[start]
            h = delta * ((j > 0) + (j < len(pipes) - 1) * (G[b] / G[a]))
            c = self.pipeline_cost(a, b)
            if c + h > 0:
                capacity = min(capacity, 1.0 / (c + h) / sel_before)
            work += sel_before * (h + c)
        r = rc.replicas
        ordering = self.cp * math.log2(r) if r > 1 else 0.0
        inv = ordering + (1.0 / (capacity * self.scalability(start, end, r)) if capacity < INF else 0.0)
        h_region = delta * ((not first) + (not last) * (G[end] / G[start]))
        inv += h_region
        region_capacity = (1.0 / inv if inv > 0 else INF) / G[start]
        return region_capacity, G[start] * (ordering + h_region + work)

    # --- whole configurations -------------------------------------------------------------

    def evaluate(self, config: Configuration) -> Estimate:
        caps, work = [], 0.0
        last = len(config.regions) - 1
        for i, rc in enumerate(config.regions):
            cap, w = self.region(rc, i == 0, i == last)
            caps.append(cap)
            work += w
        return self.combine(caps, work)

    def combine(self, caps: Sequence[float], work: float) -> Estimate:
        unbounded = min(caps)
        bottleneck = caps.index(unbounded)
        utilization = unbounded * work
        bounded = bounded_throughput(unbounded, utilization, self.cores)
        return Estimate(bounded, unbounded, utilization, tuple(caps), bottleneck)

    def validate(self, config: Configuration) -> None:
        """Raise ValueError unless `config` covers the chain and replicates only safe regions."""
        expected = 0
        for rc in config.regions:
            if rc.start != expected or rc.end <= rc.start:
                raise ValueError(f"regions must tile the chain; got {rc.start}..{rc.end}")
            if any(not rc.start < cut < rc.end for cut in rc.cuts) or list(rc.cuts) != sorted(set(rc.cuts)):
                raise ValueError(f"bad pipeline cuts {rc.cuts} in region {rc.start}..{rc.end}")
            if rc.replicas > 1 and not self.can_replicate(rc.start, rc.end):
                raise ValueError(f"region {rc.start}..{rc.end} cannot be replicated safely")
            expected = rc.end
        if expected != len(self.ops):
            raise ValueError("regions must cover every operator")


def bounded_throughput(unbounded: float, utilization: float, cores: int) -> float:
    """Eq. 13, scaling down only: R(P, C) = R(P) * min(1, C / U(P))."""
    if utilization <= cores:
        return unbounded
    return unbounded * cores / utilization
