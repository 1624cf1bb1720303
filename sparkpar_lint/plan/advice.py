"""From a chosen configuration to a report: regions in Spark terms and concrete advice.

Mapping to Spark: a replicated region is a set of `replicas` concurrent tasks; a keyed
(partitioned) region is a hash exchange on its key, i.e. `repartition(n, *key)` or the exchange a
`groupBy(key)` inserts, with n taken from `spark.sql.shuffle.partitions`; a region that cannot be
replicated is a serial stretch (`coalesce(1)`, a global sort, a stateful driver-side step, a UDF
with hidden state) that caps the whole job.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sparkpar_lint.plan.heuristic import Plan
from sparkpar_lint.plan.operators import OperatorGraph, PlanModel
from sparkpar_lint.plan.regions import (
    NOT_PARALLEL,
    form_regions,
    ordering_strategy,
    region_key,
    region_selectivity_class,
    region_state,
)
from sparkpar_lint.plan.throughput import ChainModel


@dataclass(frozen=True)
class RegionRow:
    operators: tuple[str, ...]
    pipelines: tuple[tuple[str, ...], ...]
    state: str
    key: tuple[str, ...]
    strategy: str
    replicas: int
    capacity: float  # source rows per time unit this region sustains on its own
    bottleneck: bool
    serial_reason: str = ""

    def to_dict(self) -> dict:
        return {
            "operators": list(self.operators),
            "pipelines": [list(p) for p in self.pipelines],
            "state": self.state,
            "key": list(self.key),
            "strategy": self.strategy,
            "replicas": self.replicas,
            "capacity": _finite(self.capacity),
            "bottleneck": self.bottleneck,
            "serial_reason": self.serial_reason,
        }


@dataclass(frozen=True)
class PlanReport:
    source: str
    cores: int
    method: str
    throughput: float
    sequential_throughput: float
    utilization: float
    threads: int
    regions: tuple[RegionRow, ...]
    shuffle_partitions: int
    advice: tuple[str, ...]
    notes: tuple[str, ...] = field(default=())
    unit: str = "rows/unit"  # rows/s when the costs are a profile's seconds
    spark: dict | None = None  # the Spark cost model's prediction (spark_advice.py), with a stage profile

    @property
    def speedup(self) -> float:
        return self.throughput / self.sequential_throughput

    def to_dict(self) -> dict:
        return {
            "source": self.source,
            "cores": self.cores,
            "method": self.method,
            "throughput": _finite(self.throughput),
            "sequential_throughput": _finite(self.sequential_throughput),
            "speedup": _finite(self.speedup),
            "utilization": self.utilization,
            "threads": self.threads,
            "shuffle_partitions": self.shuffle_partitions,
            "regions": [r.to_dict() for r in self.regions],
            "advice": list(self.advice),
            "notes": list(self.notes),
            "unit": self.unit,
            **({"spark": self.spark} if self.spark is not None else {}),
        }


def build_report(
    model: PlanModel,
    plan: Plan,
    source: str,
    *,
    spark: bool = True,
    notes: tuple[str, ...] = (),
    unit: str = "rows/unit",
) -> PlanReport:
    chain = ChainModel(model)
    ops = model.operators
    serial_reasons = {s.name: s.reason for s in form_regions(OperatorGraph.chain(ops)).serial}
    rows = []
    for i, rc in enumerate(plan.config.regions):
        members = ops[rc.start : rc.end]
        safe = chain.can_replicate(rc.start, rc.end)
        state = region_state(members)
        strategy = ordering_strategy(state, region_selectivity_class(members)) if safe else NOT_PARALLEL
        reason = "" if safe else _serial_reason(members, serial_reasons)
        rows.append(
            RegionRow(
                operators=tuple(op.name for op in members),
                pipelines=tuple(tuple(op.name for op in ops[a:b]) for a, b in rc.pipelines),
                state=state,
                key=region_key(members) if safe else (),
                strategy=strategy,
                replicas=rc.replicas,
                capacity=plan.estimate.region_capacity[i],
                bottleneck=i == plan.estimate.bottleneck,
                serial_reason=reason,
            )
        )
    keyed = [r.replicas for r in rows if r.state == "partitioned" and r.key]
    partitions = max(keyed) if keyed else max((r.replicas for r in rows), default=1)
    return PlanReport(
        source=source,
        cores=model.cores,
        method=plan.method,
        throughput=plan.estimate.throughput,
        sequential_throughput=plan.sequential.throughput,
        utilization=plan.estimate.utilization,
        threads=plan.config.threads,
        regions=tuple(rows),
        shuffle_partitions=partitions,
        advice=tuple(_advice(rows, partitions, model, spark)),
        notes=notes,
        unit=unit,
    )


def build_graph_report(
    model: PlanModel, plan, source: str, *, spark: bool = False, notes: tuple[str, ...] = (), unit: str = "rows/unit"
) -> PlanReport:
    """The report of a graph plan (graph_plan.GraphPlan): one row per region of every segment."""
    from sparkpar_lint.plan.graph_plan import GraphModel

    graph = GraphModel(model)
    rows, flat = [], 0
    for chain, config in zip(graph.chains, plan.configs):
        ops = chain.ops
        serial_reasons = {s.name: s.reason for s in form_regions(OperatorGraph.chain(ops)).serial}
        for rc in config.regions:
            members = ops[rc.start : rc.end]
            safe = chain.can_replicate(rc.start, rc.end)
            state = region_state(members)
            rows.append(
                RegionRow(
                    operators=tuple(op.name for op in members),
                    pipelines=tuple(tuple(op.name for op in ops[a:b]) for a, b in rc.pipelines),
                    state=state,
                    key=region_key(members) if safe else (),
                    strategy=(ordering_strategy(state, region_selectivity_class(members)) if safe else NOT_PARALLEL),
                    replicas=rc.replicas,
                    capacity=plan.estimate.region_capacity[flat],
                    bottleneck=flat == plan.estimate.bottleneck,
                    serial_reason="" if safe else _serial_reason(members, serial_reasons),
                )
            )
            flat += 1
    keyed = [r.replicas for r in rows if r.state == "partitioned" and r.key]
    partitions = max(keyed) if keyed else max((r.replicas for r in rows), default=1)
    notes = notes + (
        f"graph of {len(model.operators)} operators in {len(graph.segments)} segments "
        f"(a region never spans a fan-in or fan-out); every source runs at the throughput "
        f"shown",
    )
    return PlanReport(
        source=source,
        cores=model.cores,
        method=plan.method,
        throughput=plan.estimate.throughput,
        sequential_throughput=plan.sequential.throughput,
        utilization=plan.estimate.utilization,
        threads=sum(c.threads for c in plan.configs),
        regions=tuple(rows),
        shuffle_partitions=partitions,
        advice=tuple(_advice(rows, partitions, model, spark)),
        notes=notes,
        unit=unit,
    )


def _serial_reason(members, serial_reasons) -> str:
    for op in members:
        if op.name in serial_reasons:
            return f"{op.name}: {serial_reasons[op.name]}"
    return "keys incompatible or not forwarded within the region"


_GROUPING = ("groupBy", "groupby", "groupByKey", "rollup", "cube", "partitionBy")


def _keyed_entry(row: RegionRow, ops_by_name) -> str:
    """Where the hash split belongs: before the first keyed operator (or its groupBy)."""
    names = list(row.operators)
    for k, name in enumerate(names):
        if ops_by_name[name].kind == "partitioned":
            if k and names[k - 1].split(":")[0] in _GROUPING:
                return names[k - 1]
            return name
    return names[0]


_RDD_APIS = ("RDD", "DStream", "SparkContext", "StreamingContext")


def _key_code(row: RegionRow, ops_by_name) -> str:
    """The region key as `repartition` arguments: names quoted, expressions as the job wrote them."""
    members = [ops_by_name[name] for name in row.operators]
    codes = []
    for component in row.key:
        owner = next((op for op in members if component in op.key), None)
        codes.append(owner.code_of(component) if owner else repr(component))
    return ", ".join(codes)


def _advice(rows: list[RegionRow], partitions: int, model: PlanModel, spark: bool) -> list[str]:
    advice = []
    ops_by_name = {op.name: op for op in model.operators}
    apis = {op.api for op in model.operators if op.api}
    rdd = bool(apis) and apis <= set(_RDD_APIS)
    # Keyed streaming state is split into the shuffle partitions recorded in the checkpoint.
    stateful_stream = [op.name for op in model.operators if op.streaming and op.kind != "stateless"]
    for index, row in enumerate(rows):
        first = row.operators[0]
        if row.replicas > 1 and row.key and stateful_stream and set(row.operators) & set(stateful_stream):
            advice.append(
                f"{', '.join(row.operators)} keep streaming state: they run as the "
                f"checkpoint's number of shuffle partitions whatever a `repartition` "
                f"before them says (the plan would use {row.replicas})."
            )
        elif row.replicas > 1 and row.key:
            if rdd:
                code = f".partitionBy({row.replicas})"
            else:
                code = f".repartition({row.replicas}, {_key_code(row, ops_by_name)})"
            after = rows[index - 1] if index else None
            if after is not None and after.replicas > 1 and after.key and after.key != row.key:
                where = (
                    f"a shuffle between `{after.operators[-1]}` and `{first}` (keys "
                    f"{_set(after.key)} and {_set(row.key)} are incompatible)"
                )
            else:
                entry = _keyed_entry(row, ops_by_name)
                reads = dict(zip((op.name for op in model.operators), model.inputs or ()))
                where = (
                    f"on each input of `{entry}` ({', '.join(reads[entry])})"
                    if len(reads.get(entry, ())) > 1
                    else f"before `{entry}`"
                )
            advice.append(
                f"{where}: `{code}` — "
                f"{', '.join(row.operators)} then share one hash partitioning "
                f"({row.replicas} tasks, ordering: {row.strategy})."
            )
        elif row.replicas > 1:
            advice.append(
                f"`{first}`..`{row.operators[-1]}` are stateless: run them as "
                f"{row.replicas} tasks (`.repartition({row.replicas})` or "
                f"{row.replicas} input partitions; ordering: {row.strategy})."
            )
        if row.serial_reason and (row.bottleneck or row.capacity < 1.5 * min(r.capacity for r in rows)):
            advice.append(
                f"serial region {', '.join(row.operators)} blocks parallelism "
                f"({row.serial_reason}); it caps the job at "
                f"{row.capacity:.4g} source rows per time unit."
            )
    if spark and stateful_stream:
        keyed = max((r.replicas for r in rows if r.key), default=1)
        stateless = max((r.replicas for r in rows if r.state == "stateless"), default=1)
        instead = (
            [
                f"to run the keyed state as {keyed} tasks, start it as a new query with a new "
                f"checkpointLocation and the setting in place before its first start (its "
                f"state is rebuilt from the source)"
            ]
            if keyed > 1
            else []
        )
        if stateless > 1:
            instead.append(f"scale the stateless steps before the state with `.repartition({stateless})`")
        advice.append(
            f"leave spark.sql.shuffle.partitions alone for this stateful streaming query "
            f"({', '.join(stateful_stream)}): its state is split into the number of partitions "
            f"recorded in its checkpoint, and Spark restores that number on every restart, "
            f"ignoring a new setting" + (f"; {'; or '.join(instead)}." if instead else ".")
        )
    elif spark and rdd and partitions > 1:
        advice.append(
            f"RDD shuffles ignore spark.sql.shuffle.partitions: give {partitions} as "
            f"the numPartitions argument of the shuffle (reduceByKey, join, groupByKey) "
            f"or set spark.default.parallelism when the SparkContext is created."
        )
    elif spark and not rdd:
        advice.append(
            f'`spark.conf.set("spark.sql.shuffle.partitions", "{partitions}")` '
            f"(for {model.cores} cores; Spark's default of 200 adds per-task overhead "
            f"on a job this size)."
        )
    bottleneck = next((r for r in rows if r.bottleneck), None)
    if bottleneck is not None and bottleneck.serial_reason:
        advice.append(
            f"the bottleneck is serial: {bottleneck.serial_reason}; keyed state "
            f"(`groupBy(key)`, `applyInPandas`) instead would let it scale."
        )
    return advice


def _set(key) -> str:
    return "{" + ", ".join(key) + "}"


def _finite(value: float):
    return value if value != float("inf") else None
