"""SPX203 processing-time-dependence: values computed afresh in every run of a task (the wall
clock, `random`, `uuid` inside functions Spark runs per row or group), and processing-time
timeouts in state logic.

`current_timestamp()`/`current_date()` are not flagged as such: Spark fixes them once per query
(once per micro-batch in streaming, and a replayed micro-batch reuses the time in its offset log),
so they do not change with partitioning or retries. They are flagged where a batch frame carrying
one is read on the driver by one action and evaluated again by another: each action is a query
of its own. Spark's own `rand()`/`uuid()`/`shuffle()` are SPX105's.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from textwrap import dedent
from typing import cast

import libcst as cst
import libcst.matchers as m

from sparkpar_lint.graph.executor_functions import executor_functions
from sparkpar_lint.graph.imports import ImportTable
from sparkpar_lint.graph.made_up_rows import runs_on_made_up_rows, stages_running
from sparkpar_lint.graph.passed_function import UserFunction
from sparkpar_lint.graph.per_task_values import per_task_values
from sparkpar_lint.graph.stage_graph import ColumnCall, StageGraph, StageNode
from sparkpar_lint.graph.visiting import visit
from sparkpar_lint.model import Finding, RelatedLocation, Severity
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
        # The time read once on the driver and stamped with `lit`: every action sees the same value.
        Valid(
            dedent("""\
                import datetime
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                run_id = datetime.datetime.now().strftime("%Y%m%d%H%M%S")
                loads = spark.read.csv("in").withColumn("batch_id", F.lit(run_id))
                first_id = loads.select("batch_id").limit(1).collect()[0][0]
                loads.write.mode("append").parquet("out")
                """)
        ),
        # Near misses of the lazy batch id: the frame is cached before the read, or nothing
        # evaluates it again, or the driver reads another column.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                loads = spark.read.csv("in").withColumn("batch_id", F.date_format(F.current_timestamp(), "yyyyMMddHHmmss"))
                loads.cache()
                batch_id = loads.select("batch_id").first()[0]
                loads.write.mode("append").parquet("out")
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                loads = spark.read.csv("in").withColumn("loaded_at", F.current_timestamp())
                started = loads.select("loaded_at").first()[0]
                print("load started", started)
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                loads = spark.read.csv("in").withColumn("loaded_at", F.current_timestamp())
                newest = loads.select("event_id").first()[0]
                loads.write.mode("append").parquet("out")
                """)
        ),
    ]
    INVALID = [
        # A batch id made from the query time on a lazy frame: the driver collects it in one query,
        # the write runs another, seconds later, and stamps the rows with another id.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                loads = spark.read.csv("in").withColumn("batch_id", F.date_format(F.current_timestamp(), "yyyyMMddHHmmss"))
                batch_id = loads.select("batch_id").limit(1).collect()[0][0]
                loads.write.mode("append").parquet("out")
                spark.createDataFrame([(batch_id, "done")], "batch_id string, state string").write.mode("append").parquet("runs")
                """),
            line=3,
            column=66,
            related_lines=(4,),
        ),
        # The same frame handed to a helper after the read: the helper's write is another query.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                from jobs.checks import validate
                spark = SparkSession.builder.getOrCreate()
                def run(path):
                    rows = spark.read.parquet(path).withColumn("run_ts", F.current_timestamp())
                    run_ts = rows.select("run_ts").first()["run_ts"]
                    validate(rows, run_ts)
                """),
            line=5,
            column=57,
            related_lines=(6,),
        ),
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
        for time, read, again in _query_time_read_twice(graph):
            yield self.finding(
                ctx,
                time.span,
                f"`{time.function}()` is fixed once per query, and every action on this uncached frame is "
                f"a new query: the value `{read.method}` reads on line {read.span.line} can differ from the "
                f"one the rows carry when the frame is evaluated again (line {again}), so an id or load time "
                "taken from it need not match the rows written. Compute the time once on the driver and add it "
                "with `lit(...)`, or `cache()`/`checkpoint()` the frame before reading it",
                related=(RelatedLocation(read.span, f"`{read.method}` reads the value in one query"),),
            )
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
                # Method calls only (`handle.getCurrentProcessingTimeMs()`): see _state_clock_calls.
                method = cast(cst.Attribute, call.func).attr.value
                yield self.finding(
                    ctx,
                    graph.span_of(call),
                    f"`{method}()` in `{function.name}` reads the processing time of the "
                    "micro-batch: state decisions made on it depend on when batches run, not on the data; "
                    "compare event times against the watermark (`getCurrentWatermarkMs`) instead",
                )


# Spark's query-time functions: fixed once per query, and every action on a frame is a new query.
_QUERY_TIME = frozenset({"current_timestamp", "current_date", "now", "localtimestamp"})
# Actions that bring rows to the driver, where a value read once stands for the whole run.
_COLLECTING = frozenset({"collect", "first", "head", "take", "tail", "toPandas", "toLocalIterator"})
# Materialising the frame once: later actions read the stored rows, not a new query.
_KEPT = frozenset({"cache", "persist", "checkpoint", "localCheckpoint"})


def _query_time_read_twice(graph: StageGraph) -> Iterator[tuple[ColumnCall, StageNode, int]]:
    """A batch column computed from `current_timestamp()` (a run's batch id, a load time) whose
    value the driver collects once while the same uncached frame is evaluated again later (passed
    on, written): each action runs the query at its own time, so the collected value is not the
    one the rows carry. (column call, the collecting action, line of the other evaluation)"""
    for node in graph.nodes:
        if node.streaming or node.method != "withColumn" or node.call is None or not node.call.args:
            continue
        times = [c for c in node.columns.calls if c.function in _QUERY_TIME and c.spec is not None and c.window is None]
        named = node.call.args[0].value
        column = named.evaluated_value if isinstance(named, cst.SimpleString) else None
        if not times or not isinstance(column, str):
            continue
        later = list(graph.downstream(node))
        if any(n.method in _KEPT for n in [node, *graph.upstream(node), *later]):
            continue
        read = next((a for a in later if a.method in _COLLECTING and _reads_column(graph, node, a, column)), None)
        if read is None:
            continue
        again = _evaluated_again(graph, node, read, later)
        if again is not None:
            yield times[0], read, again


def _reads_column(graph: StageGraph, node: StageNode, action: StageNode, column: str) -> bool:
    """A stage between `node` and `action` selects the column by name (`select("batch_id")`)."""
    between: list[StageNode] = []
    for stage in graph.upstream(action):
        if stage.id == node.id:
            return any(column in _named(s) for s in between)
        between.append(stage)
    return False


def _named(stage: StageNode) -> set[str]:
    """Columns a stage names: read off its column expressions and its string arguments."""
    names = {*stage.columns.columns, *stage.keys}
    for arg in stage.call.args if stage.call is not None else ():
        if isinstance(arg.value, cst.SimpleString) and isinstance(arg.value.evaluated_value, str):
            names.add(arg.value.evaluated_value)
    return names


def _evaluated_again(graph: StageGraph, node: StageNode, read: StageNode, later: list[StageNode]) -> int | None:
    """Line of another evaluation of `node`'s rows after `read`: an action or write downstream
    that is not on the collecting chain, or the frame's variable handed to a call."""
    chain = {read.id, *(s.id for s in graph.upstream(read))}
    for other in later:
        if other.id not in chain and other.spec is not None and (other.spec.sink or other.spec.returns == "driver"):
            return other.span.line
    variable = _bound_name(graph, node)
    if variable is None:
        return None
    for call in graph.nodes_of(cst.Call):
        if not isinstance(call, cst.Call) or graph.positions[call].start.line <= read.span.line:
            continue
        if any(isinstance(a.value, cst.Name) and a.value.value == variable for a in call.args):
            return graph.positions[call].start.line
    return None


def _bound_name(graph: StageGraph, node: StageNode) -> str | None:
    """The variable the statement holding `node`'s call assigns (`df = spark.read...withColumn(...)`)."""
    for assign in graph.nodes_of(cst.Assign):
        if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
            continue
        target = assign.targets[0].target
        if isinstance(target, cst.Name) and any(c is node.call for c in m.findall(assign.value, m.Call())):
            return target.value
    return None


def _only_to_kafka(graph: StageGraph, function: UserFunction) -> bool:
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


def _message(name: str, kind: str, function: UserFunction) -> str:
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


def _state_clock_calls(function: cst.FunctionDef | cst.Lambda) -> list[cst.Call]:
    found: list[cst.Call] = []

    class _Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Attribute) and node.func.attr.value in _STATE_CLOCK_METHODS:
                found.append(node)

    visit(function.body, _Calls())
    return found
