"""SPX401 single-partition-window: an ordered or framed window with no `partitionBy`."""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import partial
from textwrap import dedent

import libcst as cst

from sparkpar_lint.edits.chain import method_call
from sparkpar_lint.edits.code import string
from sparkpar_lint.edits.model import UNSAFE, Fix
from sparkpar_lint.graph.literal_rows import literal_rows
from sparkpar_lint.graph.stage_graph import LazySpan, StageGraph, StageNode, WindowSpecValue
from sparkpar_lint.model import Finding, Severity
from sparkpar_lint.rules.base import Invalid, Rule, RuleContext, Valid


class SinglePartitionWindow(Rule):
    id = "SPX401"
    name = "single-partition-window"
    severity = Severity.WARNING
    summary = "A window with `orderBy` or a frame but no `partitionBy` moves every row to one partition."
    fix_safety = UNSAFE
    fix_needs = "needs a key the job already partitions by around the window"
    VALID = [
        # Literal dated rows (constructor calls of constants are literal data): a handful of rows.
        Valid(
            dedent("""\
                from datetime import date
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                days = spark.createDataFrame([(date(2024, 1, 1), 5), (date(2024, 1, 2), 8)], ["day", "sales"])
                days.withColumn("running", F.sum("sales").over(Window.orderBy("day"))).show()
                """)
        ),
        # An aggregate of a join of two literal lists: a handful of rows, whatever the shuffles.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                families = spark.createDataFrame([("ann", 3), ("bo", 5)], ["name", "size"])
                places = spark.createDataFrame([("x", 2, 4), ("y", 4, 8)], ["place", "low", "high"])
                fits = families.join(places, (families["size"] >= places["low"]) & (families["size"] <= places["high"]))
                counts = fits.groupBy("name").agg(F.count("*").alias("n"))
                counts.withColumn("rank", F.row_number().over(Window.orderBy(F.desc("n"), "name"))).show()
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                events.createOrReplaceTempView("events")
                ranked = spark.sql("SELECT id, row_number() OVER (PARTITION BY user ORDER BY ts, id) AS n FROM events")
                ranked.write.parquet("ranked")
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                w = Window.partitionBy("user").orderBy("ts")
                events.withColumn("n", F.row_number().over(w))
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                events.withColumn("total", F.sum("v").over(Window.partitionBy("user")))
                """)
        ),
        # A handful of rows: one per month of an aggregate, literal rows, the first ten rows.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                monthly = events.groupBy("order_month").agg(F.sum("amount").alias("total"))
                monthly.withColumn("prev", F.lag("total").over(Window.orderBy("order_month")))
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                scores = spark.createDataFrame([(1, 3.5), (2, 3.65), (3, 4.0)], ["id", "score"])
                scores.withColumn("rank", F.dense_rank().over(Window.orderBy(F.desc("score"))))
                """)
        ),
        # pandas' rolling window, not Spark's.
        Valid(
            dedent("""\
                import pandas as pd
                pdf = pd.DataFrame()
                pdf.sort_values('ts').rolling(3).mean()
                """)
        ),
        # A local class that happens to be called Window.
        Valid(
            dedent("""\
                class Window:
                    @staticmethod
                    def orderBy(c):
                        return c
                Window.orderBy('ts')
                """)
        ),
        # Keys unpacked from a parameter: partitioned, though the names are unknown here.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                def ranked(df, keys):
                    return df.withColumn("n", F.row_number().over(Window.partitionBy(*keys).orderBy("ts")))
                """)
        ),
    ]
    INVALID = [
        # The same window in SQL: an OVER clause with ORDER BY and no PARTITION BY.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                events.createOrReplaceTempView("events")
                ranked = spark.sql("SELECT id, row_number() OVER (ORDER BY ts, id) AS n FROM events")
                ranked.write.parquet("ranked")
                """),
            line=5,
            column=31,
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                ranked = events.withColumn("rank", F.row_number().over(Window.orderBy("ts")))
                """),
            line=4,
            column=55,
            # No key anywhere near the window: nothing to partition by, no fix.
            expected_fix=None,
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                running = Window.orderBy("user_id").rowsBetween(Window.unboundedPreceding, 0)
                events.groupBy("user_id").agg(F.sum("v").alias("v")).withColumn("cum", F.sum("v").over(running))
                """),
            line=4,
            column=10,
            # The rows are grouped by the order column itself: partitioning by it would be wrong.
            expected_fix=None,
        ),
        # The rows are already hash-partitioned by a key: the window is partitioned by it.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                events.repartition("user").withColumn("n", F.row_number().over(Window.orderBy("ts")))
                """),
            line=4,
            column=63,
            expected_fix=(
                dedent("""\
                    from pyspark.sql import SparkSession, Window, functions as F
                    spark = SparkSession.builder.getOrCreate()
                    events = spark.read.parquet("events")
                    (
                        events.repartition("user")
                        .withColumn("n", F.row_number().over(Window.partitionBy("user").orderBy("ts")))
                    )
                    """)
            ),
        ),
        # The key a later aggregation groups by, for a spec built in a variable with a frame.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                running = Window.orderBy("ts").rowsBetween(Window.unboundedPreceding, 0)
                cum = events.withColumn("cum", F.sum("v").over(running))
                cum.groupBy("account").agg(F.max("cum"))
                """),
            line=4,
            column=10,
            expected_fix=dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                running = Window.partitionBy("account").orderBy("ts").rowsBetween(Window.unboundedPreceding, 0)
                cum = events.withColumn("cum", F.sum("v").over(running))
                cum.groupBy("account").agg(F.max("cum"))
                """),
        ),
        # `partitionBy()` with no keys is no partitioning at all.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                w = Window.partitionBy().orderBy("ts")
                events.repartition("user").withColumn("n", F.row_number().over(w))
                """),
            line=4,
            column=4,
            expected_fix=None,
        ),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        seen = set()
        for spec in ctx.graph.window_specs:
            if spec.span is None or spec.has_partition or not (spec.has_order or spec.has_frame):
                continue
            if spec.span in seen:
                continue
            seen.add(spec.span)
            uses = [
                n
                for n in ctx.graph.nodes
                for c in n.columns.calls
                if c.window is not None and c.window.span == spec.span
            ]
            if uses and all(small_input(ctx.graph, n) for n in uses):
                continue  # a handful of rows: one partition is the right size
            in_sql = any(c.from_sql for n in uses for c in n.columns.calls if c.window == spec)
            if in_sql:
                what = f"`ORDER BY {', '.join(spec.order_by)}`" if spec.has_order else "a row frame"
                partition, instead = "`PARTITION BY`", "`OVER (PARTITION BY key ORDER BY ...)`"
            else:
                what = f"`orderBy({', '.join(spec.order_by)})`" if spec.has_order else "a row frame"
                partition, instead = "`partitionBy`", "`Window.partitionBy(key).orderBy(...)`"
            message = (
                f"this window has {what} but no {partition}: Spark moves every row to a single "
                "partition and one task computes it, however many cores the cluster has. Partition "
                f"by the key the logic actually needs ({instead})"
            )
            yield self.finding(ctx, spec.span, message, fix=_fix(ctx.graph, spec))


# Time buckets: a grouping by them leaves one row per month, day, ... (a few thousand at most).
_TIME_BUCKET = re.compile(r"(^|_)(year|quarter|month|week|day|date|hour)s?($|_)|(year|month|day|date)$", re.IGNORECASE)
_SMALL_LIMIT = 10_000


def small_input(graph: StageGraph, node: StageNode) -> bool:
    """The rows reaching the window are few: literal rows, a small `limit`, or an aggregate
    grouped by time buckets only."""
    sources = [u for u in graph.upstream(node) if u.spec is not None and u.spec.source]
    if sources and all(literal_rows(graph, s) is not None for s in sources):
        return True  # every row it can see is written in the code (joined, aggregated or not)
    for upstream in graph.upstream(node):
        if upstream.method == "limit" and upstream.call is not None and upstream.call.args:
            count = upstream.call.args[0].value
            return isinstance(count, cst.Integer) and int(count.value) <= _SMALL_LIMIT
        if upstream.receiver == "GroupedData" and upstream.spec is not None and upstream.spec.forwarding == "keys":
            # A computed key (`date_format("orderdate", "yy-MMM")`) is read by the columns it uses;
            # string arguments that are no column names (a date format, "yy-MMM") say nothing.
            grouping = graph.input_of(upstream)
            used = grouping.columns.columns if grouping is not None else ()
            keys = [k for k in (*upstream.keys, *used) if k.isidentifier()]
            return bool(keys) and all(_TIME_BUCKET.search(k) for k in keys)
        if upstream.spec is not None and upstream.spec.data_args:
            return False
        if upstream.spec is not None and upstream.spec.source:
            return literal_rows(graph, upstream) is not None
    return False


def _fix(graph: StageGraph, spec: WindowSpecValue) -> Fix | None:
    """`Window.orderBy(...)` → `Window.partitionBy(key).orderBy(...)` (unsafe: it changes the
    window's meaning from "all rows" to "each key's rows").

    The key is one the job already uses around the window: the hash partitioning of the rows it
    is applied to, or else the key of the first keyed shuffle after it; never an order column.
    """
    key = _needed_key(graph, spec)
    start = _spec_start(graph, spec)
    if key is None or start is None or start.attr.value == "partitionBy":
        return None  # `Window.partitionBy()`: a second partitionBy would replace, not add
    partitioned = method_call(start.value, "partitionBy", [string(key)])
    description = f'partition the window by `{key}` (`Window.partitionBy("{key}")`)'
    return Fix(UNSAFE, description, ((start, partial(_with_value, partitioned)),))


def _with_value(value: cst.BaseExpression, attribute: cst.Attribute) -> cst.Attribute:
    return attribute.with_changes(value=value)


def _needed_key(graph: StageGraph, spec: WindowSpecValue) -> str | None:
    users = [n for n in graph.nodes if any(c.window == spec for c in n.columns.calls)]
    if not users:
        return None
    candidates = list(users[0].input_partitioning.keys) if users[0].input_partitioning.kind == "hash" else []
    for later in graph.downstream(users[0]):
        if later.is_shuffle:
            candidates += list(later.keys)
    return next((k for k in candidates if not k.startswith("[") and k not in spec.order_by), None)


def _spec_start(graph: StageGraph, spec: WindowSpecValue) -> cst.Attribute | None:
    """`Window.orderBy` (or `.rowsBetween`, ...): the first link of the spec's chain."""
    if isinstance(spec.span, LazySpan):
        # The builder spans a spec from its first call: no need to place every node to find it.
        call = spec.span.anchor()
        if (
            isinstance(call, cst.Call)
            and isinstance(call.func, cst.Attribute)
            and isinstance(call.func.value, cst.Name)
        ):
            return call.func
        return None
    if spec.span is None:
        return None
    where = (spec.span.line, spec.span.column)
    for node, code_range in graph.positions.items():
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name):
            if (code_range.start.line, code_range.start.column) == where:
                return node
    return None
