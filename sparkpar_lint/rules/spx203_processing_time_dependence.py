"""SPX203 processing-time-dependence: values computed afresh in every run of a task (the wall
clock, `random`, `uuid` inside functions Spark runs per row or group), and processing-time
timeouts in state logic.

`current_timestamp()`/`current_date()` are not flagged: Spark fixes them once per query (once per
micro-batch in streaming, and a replayed micro-batch reuses the time in its offset log), so they do
not change with partitioning or retries. Spark's own `rand()`/`uuid()`/`shuffle()` are SPX105's.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from sparkpar_lint.graph.imports import ImportTable
from sparkpar_lint.graph.made_up_rows import runs_on_made_up_rows
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

_PRELUDE = "from pyspark.sql import SparkSession, functions as F\nspark = SparkSession.builder.getOrCreate()\n"


class ProcessingTimeDependence(Rule):
    id = "SPX203"
    name = "processing-time-dependence"
    severity = Severity.WARNING
    summary = "A value computed afresh in every run of a task (clock, random, uuid): retries and replays differ."
    VALID = [
        Valid(_PRELUDE + 'spark.read.parquet("e").withColumn("day", F.to_date("event_time"))\n'),
        # The query time is fixed once per query (per micro-batch, reused on replay).
        Valid(_PRELUDE + 'spark.read.parquet("e").withColumn("loaded_at", F.current_timestamp())\n'),
        Valid(
            _PRELUDE
            + 'spark.readStream.table("e").filter(F.col("ts") > F.current_timestamp() - F.expr("INTERVAL 1 HOUR"))\n'
        ),
        # The driver may read the clock: it picks a path, not a row's value.
        Valid(
            _PRELUDE
            + "import datetime\n"
            + "run_date = datetime.date.today().isoformat()\n"
            + 'spark.read.parquet("e").write.parquet(f"out/{run_date}")\n'
        ),
        # A local helper called `now` is not the clock.
        Valid(_PRELUDE + "def now(row):\n    return row.ts\n" + 'spark.read.parquet("e").rdd.map(now)\n'),
        # Timing a partition for the log changes no output.
        Valid(
            _PRELUDE
            + "import time, logging\nlog = logging.getLogger(__name__)\n"
            + "def parse(rows):\n"
            + "    start = time.time()\n"
            + "    out = [r.value.split(',') for r in rows]\n"
            + "    log.info('parsed in %.1fs', time.time() - start)\n"
            + "    return out\n"
            + 'spark.read.parquet("e").rdd.mapPartitions(parse)\n'
        ),
        # A generator seeded inside the function draws the same numbers on a retry.
        Valid(
            _PRELUDE
            + "import random\n"
            + "def jitter(row):\n    random.seed(row.id)\n    return (row.id, random.random())\n"
            + 'spark.read.parquet("e").rdd.map(jitter)\n'
        ),
        Valid(
            _PRELUDE
            + "def expire(key, pdfs, state):\n    yield from pdfs\n"
            + 'spark.readStream.table("e").withWatermark("ts", "1 hour").groupBy("k")'
            + '.applyInPandasWithState(expire, "k string", "n long", "append", "EventTimeTimeout")\n'
        ),
    ]
    INVALID = [
        # A partition function that draws: a retried map task sends its records elsewhere.
        Invalid(
            _PRELUDE
            + "import random\n"
            + 'pairs = spark.sparkContext.textFile("t").map(lambda l: (l[:4], l))\n'
            + "spread = pairs.partitionBy(8, partitionFunc=lambda k: random.randrange(8))\n",
            line=5,
            column=54,
        ),
        Invalid(
            _PRELUDE
            + "import time\n"
            + "def tag(line):\n    return (line, time.time())\n"
            + 'spark.sparkContext.textFile("t").map(tag)\n',
            line=5,
            column=18,
        ),
        Invalid(
            _PRELUDE
            + "from datetime import datetime as dt\n"
            + "@F.udf('boolean')\n"
            + "def is_fresh(ts):\n    return (dt.now() - ts).total_seconds() < 3600\n"
            + 'spark.read.parquet("e").filter(is_fresh("ts"))\n',
            line=6,
            column=12,
        ),
        # A salt drawn per row: a retried map task sends rows to other join partitions.
        Invalid(
            _PRELUDE
            + "import random\n"
            + "salt = F.udf(lambda: random.randint(0, 9), 'int')\n"
            + 'spark.read.parquet("e").withColumn("salt", salt()).repartition("k", "salt")\n',
            line=4,
            column=21,
        ),
        Invalid(
            _PRELUDE
            + "import uuid\n"
            + "def with_id(pdf):\n    pdf['id'] = [str(uuid.uuid4()) for _ in range(len(pdf))]\n    return pdf\n"
            + 'spark.read.parquet("e").groupBy("k").applyInPandas(with_id, "k string, id string")\n',
            line=5,
            column=21,
        ),
        Invalid(
            _PRELUDE
            + "def expire(key, pdfs, state):\n    yield from pdfs\n"
            + 'spark.readStream.table("e").groupBy("k")'
            + '.applyInPandasWithState(expire, "k string", "n long", "append", "ProcessingTimeTimeout")\n',
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
            generated = any(v.kind == "random" for v in values) and runs_on_made_up_rows(graph, function)
            for value in values:
                yield self.finding(
                    ctx,
                    graph.span_of(value.call),
                    _message(value.name, value.kind, function),
                    outcomes=_GENERATED if generated and value.kind == "random" else None,
                )
            for call in _state_clock_calls(function.node):
                yield self.finding(
                    ctx,
                    graph.span_of(call),
                    f"`{call.func.attr.value}()` in `{function.name}` reads the processing time of the "
                    "micro-batch: state decisions made on it depend on when batches run, not on the data; "
                    "compare event times against the watermark (`getCurrentWatermarkMs`) instead",
                )


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
