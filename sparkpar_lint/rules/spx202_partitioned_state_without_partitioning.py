"""SPX202 partitioned-state-without-partitioning: per-key state in a partition-level function whose
input is not hash-partitioned by that key."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from textwrap import dedent

import libcst as cst

from sparkpar_lint.edits.chain import insert_before, method_call, receiver_of, through_rdd, wrap_receiver
from sparkpar_lint.edits.code import string
from sparkpar_lint.edits.model import SAFE, Fix
from sparkpar_lint.graph.order_sensitivity import find_order_dependence, parameter_kinds
from sparkpar_lint.graph.partition_state import KeyedState, keyed_state
from sparkpar_lint.graph.passed_function import UserFunction
from sparkpar_lint.graph.stage_graph import Partitioning, StageGraph, StageNode
from sparkpar_lint.model import Finding, RelatedLocation, Severity
from sparkpar_lint.rules.base import Invalid, Rule, RuleContext, Valid

PARTITION_ROLES = frozenset({"partition", "partition-with-index"})


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
    fix_safety = SAFE
    fix_needs = "needs the key the state is kept by, as a column or the pair's first element"
    VALID = [
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                def last_seen(rows):
                    latest = {}
                    for row in rows:
                        latest[row.device] = max(latest.get(row.device, 0), row.ts)
                    return iter(latest.items())
                spark.read.parquet("e").repartition(8, "device").rdd.mapPartitions(last_seen)
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                def per_user(batches):
                    for pdf in batches:
                        yield pdf.groupby("user", as_index=False)["amount"].sum()
                spark.read.parquet("e").repartition(16, "user").mapInPandas(per_user, "user string, amount double")
                """)
        ),
        # RDD partitionBy hashes the pair's key, which the function keys its state by.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                def totals(pairs):
                    acc = {}
                    for k, v in pairs:
                        acc[k] = acc.get(k, 0) + v
                    return iter(acc.items())
                spark.sparkContext.textFile("t").map(lambda l: (l, 1)).partitionBy(8).mapPartitions(totals)
                """)
        ),
        # A fresh dict per row is not state; a broadcast lookup read by key is not either.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                def widen(rows):
                    for row in rows:
                        out = {}
                        out[row.user] = row.ts
                        yield out
                spark.read.parquet("e").rdd.mapPartitions(widen)
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                def enrich(rows):
                    for row in rows:
                        yield (row.user, names.value[row.user])
                names = spark.sparkContext.broadcast({})
                spark.read.parquet("e").rdd.mapPartitions(enrich)
                """)
        ),
        # Grouped: Spark hands the function one key's rows.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                spark.read.parquet("e").groupBy("user").applyInPandas(lambda pdf: pdf.groupby("user").sum(), "s")
                """)
        ),
    ]
    INVALID = [
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                def last_seen(rows):
                    latest = {}
                    for row in rows:
                        latest[row.device] = max(latest.get(row.device, 0), row.ts)
                    return iter(latest.items())
                spark.read.parquet("e").rdd.mapPartitions(last_seen)
                """),
            line=8,
            column=28,
            related_lines=(6,),
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession, functions as F
                             spark = SparkSession.builder.getOrCreate()
                             def last_seen(rows):
                                 latest = {}
                                 for row in rows:
                                     latest[row.device] = max(latest.get(row.device, 0), row.ts)
                                 return iter(latest.items())
                             spark.read.parquet("e").repartition("device").rdd.mapPartitions(last_seen)
                             """),
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                def per_user(batches):
                    for pdf in batches:
                        yield pdf.groupby("user", as_index=False)["amount"].sum()
                spark.read.parquet("e").repartition(16).mapInPandas(per_user, "user string, amount double")
                """),
            line=6,
            column=40,
            related_lines=(5, 6),
            # The repartition right before is re-keyed rather than followed by a second shuffle.
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession, functions as F
                             spark = SparkSession.builder.getOrCreate()
                             def per_user(batches):
                                 for pdf in batches:
                                     yield pdf.groupby("user", as_index=False)["amount"].sum()
                             spark.read.parquet("e").repartition(16, "user").mapInPandas(per_user, "user string, amount double")
                             """),
        ),
        # Partitioned, but by another key than the state's.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                def dedup(rows):
                    seen = set()
                    for row in rows:
                        if row.event_id not in seen:
                            seen.add(row.event_id)
                            yield row
                spark.read.parquet("e").repartition(8, "user").rdd.mapPartitions(dedup).count()
                """),
            line=9,
            column=51,
            related_lines=(7, 9),
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession, functions as F
                             spark = SparkSession.builder.getOrCreate()
                             def dedup(rows):
                                 seen = set()
                                 for row in rows:
                                     if row.event_id not in seen:
                                         seen.add(row.event_id)
                                         yield row
                             spark.read.parquet("e").repartition(8, "event_id").rdd.mapPartitions(dedup).count()
                             """),
        ),
        # A pair RDD whose state is keyed by the pair's key: `partitionBy` (None: Spark's default count).
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                def totals(pairs):
                    acc = {}
                    for k, v in pairs:
                        acc[k] = acc.get(k, 0) + v
                    return iter(acc.items())
                spark.sparkContext.textFile("t").map(lambda l: (l, 1)).mapPartitions(totals)
                """),
            line=8,
            column=55,
            related_lines=(6,),
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession, functions as F
                             spark = SparkSession.builder.getOrCreate()
                             def totals(pairs):
                                 acc = {}
                                 for k, v in pairs:
                                     acc[k] = acc.get(k, 0) + v
                                 return iter(acc.items())
                             spark.sparkContext.textFile("t").map(lambda l: (l, 1)).partitionBy(None).mapPartitions(totals)
                             """),
        ),
        # The function reads each device's rows in time order: the global sort becomes a per-key one.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                def deltas(rows):
                    last = {}
                    for row in rows:
                        if row.device in last:
                            yield row.device, row.ts - last[row.device]
                        last[row.device] = row.ts
                spark.read.parquet("e").orderBy("ts").rdd.mapPartitions(deltas)
                """),
            line=9,
            column=42,
            related_lines=(8, 9),
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession, functions as F
                             spark = SparkSession.builder.getOrCreate()
                             def deltas(rows):
                                 last = {}
                                 for row in rows:
                                     if row.device in last:
                                         yield row.device, row.ts - last[row.device]
                                     last[row.device] = row.ts
                             (
                                 spark.read.parquet("e")
                                 .repartition("device")
                                 .sortWithinPartitions("device", "ts")
                                 .rdd.mapPartitions(deltas)
                             )
                             """),
        ),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        for node in ctx.graph.nodes:
            for function in node.functions:
                if function.role not in PARTITION_ROLES:
                    continue
                state = next((s for s in keyed_state(function) if not co_located(node.input_partitioning, s.key)), None)
                if state is not None:
                    yield self._finding(ctx, node, function, state)

    def _finding(self, ctx: RuleContext, node: StageNode, function: UserFunction, state: KeyedState) -> Finding:
        name = function.name
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
            f'Hash-partition by `{key}` right before (`repartition(n, "{key}")`, RDD `partitionBy`), '
            "plus `sortWithinPartitions` if it also needs order"
        )
        return self.finding(ctx, node.span, message, related=tuple(related), fix=_fix(graph, node, function, key))


def _fix(graph: StageGraph, node: StageNode, function: UserFunction, key: str) -> Fix | None:
    """A safe shuffle right before the function: every row of one key in one partition.

    A DataFrame (also under `.rdd`) is hash-repartitioned by the state's column, with Spark's
    default partition count; a pair RDD keyed by the state's key goes through `partitionBy`. A
    `repartition` right before the function is re-keyed instead of stacking a second shuffle. When
    the rows arrived sorted and the function depends on their order, the sort is kept per key
    (`sortWithinPartitions(key, *by)`); a sort right before is replaced by that.
    """
    receiver = receiver_of(node.call) if node.call is not None else None
    if node.call is None or receiver is None:
        return None
    frame = through_rdd(receiver)
    if key.startswith("["):
        if key != "[0]" or node.receiver != "RDD" or frame is not None:
            return None
        rewrite = insert_before("partitionBy", [cst.Name("None")])
        description = "hash-partition the pairs by key (`partitionBy`) before the partition function"
        return Fix(SAFE, description, ((node.call, rewrite),))
    if frame is None and node.receiver != "DataFrame":
        return None  # rows of a plain RDD: no column to repartition by
    description = f'hash-repartition by `{key}` (`repartition("{key}")`) before the partition function'
    before = frame if frame is not None else receiver
    order = _needed_order(graph, node, function, key)
    established = node.input_order.established_by  # set whenever `order` is
    if order and established is not None:
        sort = graph.node(established)
        sorted_by = [string(key), *(string(c) for c in order)]
        replace = (
            before is sort.call
            and sort.call is not None
            and receiver_of(sort.call) is not None
            and sort.method in ("orderBy", "sort")
        )
        build = partial(_per_key_sort, key, tuple(sorted_by), replace)
        return Fix(SAFE, description + ", sorted per key", ((node.call, wrap_receiver(build, skip_rdd=True)),))
    if (
        isinstance(before, cst.Call)
        and isinstance(before.func, cst.Attribute)
        and before.func.attr.value == "repartition"
    ):
        return Fix(SAFE, description, ((node.call, partial(_rekey, key, frame is not None)),))
    return Fix(SAFE, description, ((node.call, insert_before("repartition", [string(key)], skip_rdd=True)),))


def _per_key_sort(
    key: str, sorted_by: tuple[cst.BaseExpression, ...], replace_sort: bool, frame: cst.BaseExpression
) -> cst.Call:
    """`frame.repartition(key).sortWithinPartitions(key, by)`; with `replace_sort`, the sort that
    ends `frame` (`x.orderBy(by)`) gives way to it."""
    if replace_sort:
        frame = _receiver(frame)
    return method_call(method_call(frame, "repartition", [string(key)]), "sortWithinPartitions", sorted_by)


def _needed_order(graph: StageGraph, node: StageNode, function: UserFunction, key: str) -> tuple[str, ...]:
    """The sort columns (other than `key`) the function reads its rows in, if it depends on order."""
    order = node.input_order
    if order.kind not in ("total", "per-key") or not order.by or order.established_by is None:
        return ()
    helpers = {n.name.value: n for n in graph.definitions if isinstance(n, cst.FunctionDef)}
    kinds = parameter_kinds(function.node, function.role, node.receiver)
    if not kinds or find_order_dependence(function.node, kinds, node.keys, helpers) is None:
        return ()
    return tuple(c for c in order.by if c != key)


def _rekey(key: str, under_rdd: bool, call: cst.Call) -> cst.Call:
    """`x.repartition(16).op(...)` → `x.repartition(16, "key").op(...)` (also through `.rdd`)."""
    receiver = _receiver(call)
    repartition = cst.ensure_type(through_rdd(receiver) if under_rdd else receiver, cst.Call)
    counts = [a.value for a in repartition.args if isinstance(a.value, cst.Integer) and a.keyword is None]
    rekeyed = method_call(_receiver(repartition), "repartition", [*counts[:1], string(key)])
    new_receiver = receiver.with_changes(value=rekeyed) if under_rdd else rekeyed
    return call.with_changes(func=call.func.with_changes(value=new_receiver))


def _receiver(call: cst.BaseExpression) -> cst.BaseExpression:
    """`x` of `x.op(...)`: the fix checked each call it rewrites is a method call."""
    return cst.ensure_type(cst.ensure_type(call, cst.Call).func, cst.Attribute).value
