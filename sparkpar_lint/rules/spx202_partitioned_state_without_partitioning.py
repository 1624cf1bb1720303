"""SPX202 partitioned-state-without-partitioning: per-key state in a partition-level function whose
input is not hash-partitioned by that key."""

from __future__ import annotations

from collections.abc import Iterator

from sparkpar_lint.graph.partition_state import KeyedState, keyed_state
from sparkpar_lint.graph.stage_graph import Partitioning, StageNode
from sparkpar_lint.model import Finding, RelatedLocation, Severity
from sparkpar_lint.rules.base import Invalid, Rule, RuleContext, Valid

PARTITION_ROLES = frozenset({"partition", "partition-with-index"})
_PRELUDE = "from pyspark.sql import SparkSession, functions as F\nspark = SparkSession.builder.getOrCreate()\n"
_SESSIONIZE = (
    "def last_seen(rows):\n"
    "    latest = {}\n"
    "    for row in rows:\n"
    "        latest[row.device] = max(latest.get(row.device, 0), row.ts)\n"
    "    return iter(latest.items())\n"
)
_PANDAS = (
    "def per_user(batches):\n"
    "    for pdf in batches:\n"
    '        yield pdf.groupby("user", as_index=False)["amount"].sum()\n'
)


def co_located(partitioning: Partitioning, key: str) -> bool:
    """Every row with the same `key` is in one partition."""
    if partitioning.kind == "single":
        return True
    if partitioning.kind == "hash":
        return key in partitioning.keys or (key.startswith("[") and partitioning.keys == ("[0]",))
    return partitioning.kind == "range" and partitioning.keys == (key,)


class PartitionedStateWithoutPartitioning(Rule):
    id = "SPX202"
    name = "partitioned-state-without-partitioning"
    severity = Severity.ERROR
    summary = "Per-key state in a partition-level function whose input is not partitioned by that key."
    VALID = [
        Valid(_PRELUDE + _SESSIONIZE + 'spark.read.parquet("e").repartition(8, "device").rdd.mapPartitions(last_seen)\n'),
        Valid(_PRELUDE + _PANDAS + 'spark.read.parquet("e").repartition(16, "user").mapInPandas(per_user, "user string, amount double")\n'),
        # RDD partitionBy hashes the pair's key, which the function keys its state by.
        Valid(
            _PRELUDE
            + "def totals(pairs):\n    acc = {}\n    for k, v in pairs:\n        acc[k] = acc.get(k, 0) + v\n"
            + "    return iter(acc.items())\n"
            + 'spark.sparkContext.textFile("t").map(lambda l: (l, 1)).partitionBy(8).mapPartitions(totals)\n'
        ),
        # A fresh dict per row is not state; a broadcast lookup read by key is not either.
        Valid(
            _PRELUDE
            + "def widen(rows):\n    for row in rows:\n        out = {}\n        out[row.user] = row.ts\n        yield out\n"
            + 'spark.read.parquet("e").rdd.mapPartitions(widen)\n'
        ),
        Valid(
            _PRELUDE
            + "def enrich(rows):\n    for row in rows:\n        yield (row.user, names.value[row.user])\n"
            + 'names = spark.sparkContext.broadcast({})\nspark.read.parquet("e").rdd.mapPartitions(enrich)\n'
        ),
        # Grouped: Spark hands the function one key's rows.
        Valid(_PRELUDE + 'spark.read.parquet("e").groupBy("user").applyInPandas(lambda pdf: pdf.groupby("user").sum(), "s")\n'),
    ]
    INVALID = [
        Invalid(
            _PRELUDE + _SESSIONIZE + 'spark.read.parquet("e").rdd.mapPartitions(last_seen)\n',
            line=8,
            column=28,
            related_lines=(6,),
        ),
        Invalid(
            _PRELUDE + _PANDAS + 'spark.read.parquet("e").repartition(16).mapInPandas(per_user, "user string, amount double")\n',
            line=6,
            column=40,
            related_lines=(5, 6),
        ),
        # Partitioned, but by another key than the state's.
        Invalid(
            _PRELUDE
            + "def dedup(rows):\n    seen = set()\n    for row in rows:\n        if row.event_id not in seen:\n"
            + "            seen.add(row.event_id)\n            yield row\n"
            + 'spark.read.parquet("e").repartition(8, "user").rdd.mapPartitions(dedup).count()\n',
            line=9,
            column=51,
            related_lines=(7, 9),
        ),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        for node in ctx.graph.nodes:
            for function in node.functions:
                if function.role not in PARTITION_ROLES:
                    continue
                state = next((s for s in keyed_state(function) if not co_located(node.input_partitioning, s.key)), None)
                if state is not None:
                    yield self._finding(ctx, node, function.name, state)

    def _finding(self, ctx: RuleContext, node: StageNode, name: str, state: KeyedState) -> Finding:
        graph = ctx.graph
        partitioning = node.input_partitioning
        key = state.key
        what = "a pandas `groupby`" if state.container == "groupby" else f"`{state.container}`"
        related = [RelatedLocation(graph.span_of(state.node), f"{what} keeps state per `{key}` here")]
        if partitioning.established_by is not None and partitioning.kind in ("hash", "round-robin", "range"):
            establisher = graph.node(partitioning.established_by)
            related.append(RelatedLocation(establisher.span, f"`{establisher.method}` partitions the rows here"))
        how = (
            f"hash-partitioned by {', '.join(partitioning.keys)}"
            if partitioning.kind == "hash"
            else {"round-robin": "spread round-robin", "source": "split as the source is read"}.get(
                partitioning.kind, "not partitioned by any key"
            )
        )
        message = (
            f"`{name}` keeps {what} per `{key}` inside each partition, but its input is {how}: rows "
            f"of one `{key}` land in several partitions and each sees only part of them. "
            f"Hash-partition by `{key}` right before (`repartition(n, \"{key}\")`, RDD `partitionBy`), "
            "plus `sortWithinPartitions` if it also needs order"
        )
        return self.finding(ctx, node.span, message, related=tuple(related))
