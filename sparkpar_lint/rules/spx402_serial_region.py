"""SPX402 serial-region: `coalesce(1)`/`repartition(1)` in front of work that needs only per-key
co-location and order, so one task does what one task per key group could."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from textwrap import dedent

import libcst as cst

from sparkpar_lint.edits.chain import method_call, receiver_of
from sparkpar_lint.edits.code import string
from sparkpar_lint.edits.model import UNSAFE, Fix
from sparkpar_lint.graph.partition_state import keyed_state
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode
from sparkpar_lint.model import Finding, RelatedLocation, Severity
from sparkpar_lint.rules.base import Invalid, Rule, RuleContext, Valid
from sparkpar_lint.rules.spx202_partitioned_state_without_partitioning import PARTITION_ROLES

_SERIALISING = frozenset({"by-count", "by-args"})


def serial_point(node: StageNode) -> bool:
    """The node itself squeezes the data into one partition."""
    return (
        node.spec is not None
        and node.spec.partitioning_effect in _SERIALISING
        and node.output_partitioning.kind == "single"
        and node.output_partitioning.established_by == node.id
    )


def per_key_consumer(graph: StageGraph, node: StageNode) -> tuple[StageNode, str] | None:
    """The first later stage in the serial region that only needs rows grouped by a key."""
    for later in graph.downstream(node):
        if later.input_partitioning.established_by != node.id:
            continue  # another shuffle ended the serial region
        for function in later.functions:
            if function.role in PARTITION_ROLES:
                state = keyed_state(function)
                if state:
                    return later, state[0].key
    return None


class SerialRegion(Rule):
    id = "SPX402"
    name = "serial-region"
    severity = Severity.INFO
    summary = "`coalesce(1)`/`repartition(1)` before work that only needs per-key order: the region could be parallel."
    fix_safety = UNSAFE
    fix_needs = "needs an order kept by the serial region (a sort before it or right after it)"
    VALID = [
        # One output file at the end of the job: nothing runs after it.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def sessions(batches):
                    last = {}
                    for pdf in batches:
                        for row in pdf.itertuples():
                            last[row.user] = row.ts
                        yield pdf
                clicks = spark.read.parquet("clicks")
                clicks.coalesce(1).write.csv("out")
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def sessions(batches):
                    last = {}
                    for pdf in batches:
                        for row in pdf.itertuples():
                            last[row.user] = row.ts
                        yield pdf
                clicks = spark.read.parquet("clicks")
                clicks.repartition(16, "user").sortWithinPartitions("user", "ts").mapInPandas(sessions, "user string, ts long")
                """)
        ),
        # coalesce(8) keeps parallelism.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def sessions(batches):
                    last = {}
                    for pdf in batches:
                        for row in pdf.itertuples():
                            last[row.user] = row.ts
                        yield pdf
                clicks = spark.read.parquet("clicks")
                clicks.coalesce(8).mapInPandas(sessions, "user string, ts long")
                """)
        ),
        # In SQL: one output file from a hint at the end, and a hint that keeps eight partitions.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def sessions(batches):
                    last = {}
                    for pdf in batches:
                        for row in pdf.itertuples():
                            last[row.user] = row.ts
                        yield pdf
                clicks = spark.read.parquet("clicks")
                clicks.createOrReplaceTempView("clicks")
                spark.sql("SELECT /*+ COALESCE(1) */ * FROM clicks").write.csv("out")
                spark.sql("SELECT /*+ REPARTITION(8) */ * FROM clicks").mapInPandas(sessions, "user string, ts long")
                """)
        ),
    ]
    INVALID = [
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def sessions(batches):
                    last = {}
                    for pdf in batches:
                        for row in pdf.itertuples():
                            last[row.user] = row.ts
                        yield pdf
                clicks = spark.read.parquet("clicks")
                clicks.orderBy("ts").coalesce(1).mapInPandas(sessions, "user string, ts long")
                """),
            line=10,
            column=21,
            related_lines=(10, 10),
            # The global sort becomes a per-key sort inside hash partitions.
            expected_fix=(
                dedent("""\
                    from pyspark.sql import SparkSession
                    spark = SparkSession.builder.getOrCreate()
                    def sessions(batches):
                        last = {}
                        for pdf in batches:
                            for row in pdf.itertuples():
                                last[row.user] = row.ts
                            yield pdf
                    clicks = spark.read.parquet("clicks")
                    (
                        clicks.repartition("user")
                        .sortWithinPartitions("user", "ts")
                        .mapInPandas(sessions, "user string, ts long")
                    )
                    """)
            ),
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def sessions(batches):
                    last = {}
                    for pdf in batches:
                        for row in pdf.itertuples():
                            last[row.user] = row.ts
                        yield pdf
                clicks = spark.read.parquet("clicks")
                single = clicks.repartition(1)
                single.sortWithinPartitions("ts").mapInPandas(sessions, "user string, ts long")
                """),
            line=10,
            column=16,
            related_lines=(11,),
            expected_fix=dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def sessions(batches):
                    last = {}
                    for pdf in batches:
                        for row in pdf.itertuples():
                            last[row.user] = row.ts
                        yield pdf
                clicks = spark.read.parquet("clicks")
                single = clicks.repartition("user")
                single.sortWithinPartitions("user", "ts").mapInPandas(sessions, "user string, ts long")
                """),
        ),
        # No order anywhere: the function sees arrival order, which a hash shuffle would lose.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def sessions(batches):
                    last = {}
                    for pdf in batches:
                        for row in pdf.itertuples():
                            last[row.user] = row.ts
                        yield pdf
                clicks = spark.read.parquet("clicks")
                clicks.coalesce(1).mapInPandas(sessions, "user string, ts long")
                """),
            line=10,
            column=7,
            related_lines=(10,),
            expected_fix=None,
        ),
        # The SQL forms: a COALESCE(1) or REPARTITION(1) hint in front of the per-user function.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def sessions(batches):
                    last = {}
                    for pdf in batches:
                        for row in pdf.itertuples():
                            last[row.user] = row.ts
                        yield pdf
                clicks = spark.read.parquet("clicks")
                clicks.createOrReplaceTempView("clicks")
                spark.sql("SELECT /*+ COALESCE(1) */ * FROM clicks SORT BY ts").mapInPandas(sessions, "user string, ts long")
                """),
            line=11,
            column=18,
            related_lines=(11,),
            expected_fix=None,
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def sessions(batches):
                    last = {}
                    for pdf in batches:
                        for row in pdf.itertuples():
                            last[row.user] = row.ts
                        yield pdf
                clicks = spark.read.parquet("clicks")
                clicks.createOrReplaceTempView("clicks")
                spark.sql("SELECT /*+ REPARTITION(1) */ * FROM clicks").mapInPandas(sessions, "user string, ts long")
                """),
            line=11,
            column=18,
            related_lines=(11,),
            expected_fix=None,
        ),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        graph = ctx.graph
        for node in graph.nodes:
            if not serial_point(node):
                continue
            found = per_key_consumer(graph, node)
            if found is None:
                continue
            consumer, key = found
            related = []
            sort = next((u for u in graph.upstream(node) if u.order_effect == "establishes-total"), None)
            if sort is not None and sort is graph.input_of(node):
                related.append(RelatedLocation(sort.span, f"a global `{sort.method}` feeds the serial region"))
            related.append(RelatedLocation(consumer.span, f"`{consumer.method}` only needs rows grouped by `{key}`"))
            # A SQL hint stage has no call: name it as written.
            serial = f"`{node.method}`" if node.call is not None else f"`/*+ {node.method.upper()}(1) */`"
            message = (
                f"{serial} squeezes every row into one partition, but `{consumer.method}` only "
                f"needs each `{key}`'s rows together (and in order): the region runs on one core. Use "
                + (
                    f'`repartition(n, "{key}").sortWithinPartitions("{key}", <order>)` instead'
                    if node.call is not None
                    else f"`DISTRIBUTE BY {key} SORT BY {key}, <order>` instead of the hint"
                )
            )
            yield self.finding(ctx, node.span, message, related=tuple(related), fix=_fix(graph, node, key))


def _fix(graph: StageGraph, serial: StageNode, key: str) -> Fix | None:
    """`repartition("key")` for the serial point, and the order it kept made per key.

    The order is a `sortWithinPartitions(by)` right after the serial point (→ `(key, *by)`) or a
    global sort right before it (dropped, and `sortWithinPartitions(key, *by)` added). Without
    either the function relies on arrival order, which a hash shuffle loses: no fix.
    """
    if serial.call is None or receiver_of(serial.call) is None:
        return None
    after = graph.consumers(serial)
    before = graph.input_of(serial)
    description = f'`{serial.method}` → `repartition("{key}")` with a per-`{key}` `sortWithinPartitions`'
    if len(after) == 1 and after[0].method == "sortWithinPartitions" and after[0].call is not None:
        if after[0].keys[:1] == (key,):
            return None
        replacements = ((serial.call, partial(_hash_by, key)), (after[0].call, partial(_with_key_first, key)))
        return Fix(UNSAFE, description, replacements)
    if (
        before is not None
        and before.order_effect == "establishes-total"
        and before.call is not None
        and receiver_of(before.call) is not None
        and len(graph.consumers(before)) == 1
    ):
        return Fix(UNSAFE, description, ((serial.call, partial(_sort_per_key, key)),))
    return None


def _hash_by(key: str, call: cst.Call) -> cst.Call:
    return method_call(_method(call).value, "repartition", [string(key)])


def _with_key_first(key: str, call: cst.Call) -> cst.Call:
    method = _method(call)
    return method_call(method.value, method.attr.value, [string(key), *call.args])


def _sort_per_key(key: str, call: cst.Call) -> cst.Call:
    """`x.orderBy(by).coalesce(1)` → `x.repartition(key).sortWithinPartitions(key, by)`."""
    sort = cst.ensure_type(_method(call).value, cst.Call)
    repartitioned = method_call(_method(sort).value, "repartition", [string(key)])
    return method_call(repartitioned, "sortWithinPartitions", [string(key), *sort.args])


def _method(call: cst.Call) -> cst.Attribute:
    """`df.coalesce` of `df.coalesce(1)`: the fixes rewrite method calls of the serial region only."""
    return cst.ensure_type(call.func, cst.Attribute)
