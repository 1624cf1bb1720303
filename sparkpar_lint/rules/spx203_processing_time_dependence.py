"""SPX203 processing-time-dependence: the wall clock inside transformations or state logic."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from sparkpar_lint.graph.imports import ImportTable, dotted_name
from sparkpar_lint.graph.user_functions import executor_functions
from sparkpar_lint.model import Finding, Severity
from sparkpar_lint.rules.base import Invalid, Rule, RuleContext, Valid

# Wall-clock readers in Python, resolved through the module's imports.
WALL_CLOCK = frozenset(
    {
        "time.time",
        "time.time_ns",
        "datetime.datetime.now",
        "datetime.datetime.utcnow",
        "datetime.datetime.today",
        "datetime.date.today",
        "pandas.Timestamp.now",
        "pandas.Timestamp.utcnow",
        "pandas.Timestamp.today",
    }
)
# Processing-time timers of the state APIs (GroupState / StatefulProcessor handles).
_STATE_CLOCK_METHODS = frozenset({"getCurrentProcessingTimeMs", "setTimeoutDuration"})
_PROCESSING_TIME_MARKERS = ("ProcessingTimeTimeout", "processingtime")

_PRELUDE = "from pyspark.sql import SparkSession, functions as F\nspark = SparkSession.builder.getOrCreate()\n"


class _ClockCalls(cst.CSTVisitor):
    def __init__(self, imports: ImportTable) -> None:
        self.imports = imports
        self.found: list[tuple[cst.Call, str]] = []

    def visit_Import(self, node: cst.Import) -> None:
        self.imports.add(node)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        self.imports.add(node)

    def visit_Call(self, node: cst.Call) -> None:
        name = dotted_name(node.func)
        if name is None:
            return
        head, _, rest = name.partition(".")
        resolved = self.imports.resolve_name(head)
        qualified = f"{resolved}.{rest}" if resolved and rest else resolved or name
        if qualified in WALL_CLOCK:
            self.found.append((node, name))
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value in _STATE_CLOCK_METHODS:
            self.found.append((node, node.func.attr.value))


class ProcessingTimeDependence(Rule):
    id = "SPX203"
    name = "processing-time-dependence"
    severity = Severity.WARNING
    summary = "Wall-clock time inside a transformation or state logic: replays and reprocessing differ."
    VALID = [
        Valid(_PRELUDE + 'spark.read.parquet("e").withColumn("day", F.to_date("event_time"))\n'),
        # The driver may read the clock: it picks a path, not a row's value.
        Valid(
            _PRELUDE
            + "import datetime\n"
            + 'run_date = datetime.date.today().isoformat()\n'
            + 'spark.read.parquet("e").write.parquet(f"out/{run_date}")\n'
        ),
        # A local helper called `now` is not the clock.
        Valid(
            _PRELUDE
            + "def now(row):\n    return row.ts\n"
            + 'spark.read.parquet("e").rdd.map(now)\n'
        ),
        Valid(
            _PRELUDE
            + "def expire(key, pdfs, state):\n    yield from pdfs\n"
            + 'spark.readStream.table("e").withWatermark("ts", "1 hour").groupBy("k")'
            + '.applyInPandasWithState(expire, "k string", "n long", "append", "EventTimeTimeout")\n'
        ),
    ]
    INVALID = [
        Invalid(
            _PRELUDE + 'spark.readStream.table("e").filter(F.col("ts") > F.current_timestamp() - F.expr("INTERVAL 1 HOUR"))\n',
            line=3,
            column=49,
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
            for call in node.columns.calls:
                if call.spec is not None and call.spec.processing_time:
                    yield self.finding(ctx, call.span, _message(f"`{call.function}()`", "in a column expression"))
            if node.spec is not None and node.spec.functions and node.call is not None:
                for arg in node.call.args:
                    text = arg.value.evaluated_value if isinstance(arg.value, cst.SimpleString) else None
                    if isinstance(text, str) and text.lower().replace("_", "") in (m.lower() for m in _PROCESSING_TIME_MARKERS):
                        yield self.finding(ctx, graph.span_of(arg.value), _message(f'"{text}"', f"as `{node.method}`'s timeout"))
                    elif isinstance(arg.value, cst.Attribute) and arg.value.attr.value == "ProcessingTimeTimeout":
                        yield self.finding(ctx, graph.span_of(arg.value), _message("`ProcessingTimeTimeout`", f"in `{node.method}`"))
        for function, _ in executor_functions(graph):
            visitor = _ClockCalls(ImportTable(graph.imports))
            function.node.body.visit(visitor)
            for call, name in visitor.found:
                yield self.finding(ctx, graph.span_of(call), _message(f"`{name}`", f"in `{function.name}`, which Spark runs per row"))


def _message(what: str, where: str) -> str:
    return (
        f"{what} reads the wall clock {where}: the result depends on when each row is processed, "
        "so a replay, a retried task or a backfill gives different output. Use an event-time "
        "column (and `withWatermark` / `EventTimeTimeout` for state)"
    )
