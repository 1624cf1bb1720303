"""SPX203 processing-time-dependence: values computed afresh in every run of a task (the wall
clock, `random`, `uuid` inside functions Spark runs per row or group), and processing-time
timeouts in state logic.

`current_timestamp()`/`current_date()` are not flagged: Spark fixes them once per query (once per
micro-batch in streaming, and a replayed micro-batch reuses the time in its offset log), so they do
not change with partitioning or retries. Spark's own `rand()`/`uuid()`/`shuffle()` are SPX105's.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from textwrap import dedent

import libcst as cst

from sparkpar_lint.graph.imports import ImportTable
from sparkpar_lint.graph.made_up_rows import runs_on_made_up_rows, stages_running
from sparkpar_lint.graph.per_task_values import per_task_values
from sparkpar_lint.graph.user_functions import executor_functions
from sparkpar_lint.graph.visiting import visit
from sparkpar_lint.model import Finding, Severity
from sparkpar_lint.rules.base import Invalid, Rule, RuleContext, Valid

# Processing-time timers of the state APIs (GroupState / StatefulProcessor handles).
_STATE_CLOCK_METHODS = frozenset({"getCurrentProcessingTimeMs"})
_PROCESSING_TIME_MARKERS = ("ProcessingTimeTimeout", "processingtime")
# What one call of the function covers, by catalogue role.
_GROUP_ROLES = frozenset({"group", "cogroup", "stateful-group", "stateful-processor"})
_PARTITION_ROLES = frozenset({"partition", "partition-with-index"})

# A draw over rows the job makes up (`spark.range`, the rate stream) is usually the data being
# generated: that a retry must repeat it is assumed, not seen.
_GENERATED = "a retried task must draw the same values: these rows are made up by the job, like test data"
_KAFKA_ONLY = (
    "something past the Kafka topic must dedup or join on this value: here it only goes out to an "
    "at-least-once Kafka sink, which sends a replayed batch's records again anyway"
)
# A Kafka sink's format on the write chain.
_KAFKA_FORMAT = re.compile(r"""\.format\(\s*['"]kafka['"]\s*\)""")
# Stages that match rows by their values: a value that changes on retry changes what they match.
_MATCHING = frozenset(
    {
        "join",
        "dropDuplicates",
        "drop_duplicates",
        "dropDuplicatesWithinWatermark",
        "distinct",
        "groupBy",
        "groupByKey",
        "foreachBatch",
        "foreach",
        "foreachPartition",
    }
)


class ProcessingTimeDependence(Rule):
    id = "SPX203"
    name = "processing-time-dependence"
    severity = Severity.WARNING
    summary = "A value computed afresh in every run of a task (clock, random, uuid): retries and replays differ."
    VALID = [
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                spark.read.parquet("e").withColumn("day", F.to_date("event_time"))
                """)
        ),
        # The query time is fixed once per query (per micro-batch, reused on replay).
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                spark.read.parquet("e").withColumn("loaded_at", F.current_timestamp())
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                spark.readStream.table("e").filter(F.col("ts") > F.current_timestamp() - F.expr("INTERVAL 1 HOUR"))
                """)
        ),
        # The driver may read the clock: it picks a path, not a row's value.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                import datetime
                run_date = datetime.date.today().isoformat()
                spark.read.parquet("e").write.parquet(f"out/{run_date}")
                """)
        ),
        # A local helper called `now` is not the clock.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                def now(row):
                    return row.ts
                spark.read.parquet("e").rdd.map(now)
                """)
        ),
        # Timing a partition for the log changes no output.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                import time, logging
                log = logging.getLogger(__name__)
                def parse(rows):
                    start = time.time()
                    out = [r.value.split(',') for r in rows]
                    log.info('parsed in %.1fs', time.time() - start)
                    return out
                spark.read.parquet("e").rdd.mapPartitions(parse)
                """)
        ),
        # A generator seeded inside the function draws the same numbers on a retry.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                import random
                def jitter(row):
                    random.seed(row.id)
                    return (row.id, random.random())
                spark.read.parquet("e").rdd.map(jitter)
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                def expire(key, pdfs, state):
                    yield from pdfs
                spark.readStream.table("e").withWatermark("ts", "1 hour").groupBy("k").applyInPandasWithState(expire, "k string", "n long", "append", "EventTimeTimeout")
                """)
        ),
    ]
    INVALID = [
        # A partition function that draws: a retried map task sends its records elsewhere.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                import random
                pairs = spark.sparkContext.textFile("t").map(lambda l: (l[:4], l))
                spread = pairs.partitionBy(8, partitionFunc=lambda k: random.randrange(8))
                """),
            line=5,
            column=54,
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                import time
                def tag(line):
                    return (line, time.time())
                spark.sparkContext.textFile("t").map(tag)
                """),
            line=5,
            column=18,
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                from datetime import datetime as dt
                @F.udf('boolean')
                def is_fresh(ts):
                    return (dt.now() - ts).total_seconds() < 3600
                spark.read.parquet("e").filter(is_fresh("ts"))
                """),
            line=6,
            column=12,
        ),
        # A salt drawn per row: a retried map task sends rows to other join partitions.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                import random
                salt = F.udf(lambda: random.randint(0, 9), 'int')
                spark.read.parquet("e").withColumn("salt", salt()).repartition("k", "salt")
                """),
            line=4,
            column=21,
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                import uuid
                def with_id(pdf):
                    pdf['id'] = [str(uuid.uuid4()) for _ in range(len(pdf))]
                    return pdf
                spark.read.parquet("e").groupBy("k").applyInPandas(with_id, "k string, id string")
                """),
            line=5,
            column=21,
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                def expire(key, pdfs, state):
                    yield from pdfs
                spark.readStream.table("e").groupBy("k").applyInPandasWithState(expire, "k string", "n long", "append", "ProcessingTimeTimeout")
                """),
            line=5,
            column=104,
        ),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        graph = ctx.graph
        for node in graph.nodes:
            if node.spec is not None and node.spec.functions and node.call is not None:
                for arg in node.call.args:
                    text = arg.value.evaluated_value if isinstance(arg.value, cst.SimpleString) else None
                    if isinstance(text, str) and text.lower().replace("_", "") in (
                        m.lower() for m in _PROCESSING_TIME_MARKERS
                    ):
                        yield self.finding(ctx, graph.span_of(arg.value), _timeout_message(f'"{text}"', node.method))
                    elif isinstance(arg.value, cst.Attribute) and arg.value.attr.value == "ProcessingTimeTimeout":
                        yield self.finding(
                            ctx, graph.span_of(arg.value), _timeout_message("`ProcessingTimeTimeout`", node.method)
                        )
        for function, _ in executor_functions(graph):
            values = per_task_values(function.node, ImportTable(graph.imports))
            random = any(v.kind == "random" for v in values)
            generated = random and runs_on_made_up_rows(graph, function)
            assumed = _GENERATED if generated else _KAFKA_ONLY if random and _only_to_kafka(graph, function) else None
            for value in values:
                yield self.finding(
                    ctx,
                    graph.span_of(value.call),
                    _message(value.name, value.kind, function),
                    outcomes=assumed if value.kind == "random" else None,
                )
            for call in _state_clock_calls(function.node):
                yield self.finding(
                    ctx,
                    graph.span_of(call),
                    f"`{call.func.attr.value}()` in `{function.name}` reads the processing time of the "
                    "micro-batch: state decisions made on it depend on when batches run, not on the data; "
                    "compare event times against the watermark (`getCurrentWatermarkMs`) instead",
                )


def _only_to_kafka(graph, function) -> bool:
    """The rows the function runs on go only to Kafka sinks (a producer minting event ids), with
    no stage on the way that matches rows by value."""
    stages = stages_running(graph, function)
    for stage in stages:
        later = list(graph.downstream(stage))
        sinks = [n for n in later if n.spec is not None and n.spec.sink]
        if not sinks or any(n.method in _MATCHING for n in later):
            return False
        if not all(n.call is not None and _KAFKA_FORMAT.search(cst.Module([]).code_for_node(n.call)) for n in sinks):
            return False
    return bool(stages)


def _message(name: str, kind: str, function) -> str:
    per = "row"
    if function.role in _GROUP_ROLES:
        per = "group"
    elif function.role in _PARTITION_ROLES:
        per = "partition"
    what = "reads the wall clock" if kind == "clock" else "draws a random value"
    use = (
        "an event-time column (or `current_timestamp()`, fixed once per query)"
        if kind == "clock"
        else ("a value derived from the data (a hash of the key columns), or a seed taken from it")
    )
    where = "a lambda" if function.name == "<lambda>" else f"`{function.name}`"
    return (
        f"`{name}()` {what} in {where}, which Spark runs per {per}: a retried or speculative "
        "task, or a replay, computes a different value for the same rows, and any key, filter or join "
        f"built on it changes; use {use}"
    )


def _timeout_message(what: str, method: str) -> str:
    return (
        f"{what} in `{method}`: timeouts fire by the wall clock, so which micro-batch expires a key "
        "depends on when batches run, and reprocessing the same input gives different output; use "
        "`EventTimeTimeout` with a watermark"
    )


def _state_clock_calls(function) -> list[cst.Call]:
    found: list[cst.Call] = []

    class _Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Attribute) and node.func.attr.value in _STATE_CLOCK_METHODS:
                found.append(node)

    visit(function.body, _Calls())
    return found
