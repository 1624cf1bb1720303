"""SPX204 stateful-stream-without-watermark: streaming state with no event-time pulse upstream."""

from __future__ import annotations

import re
from collections.abc import Iterator

from sparkpar_lint.fixes.chain import insert_before, receiver_of
from sparkpar_lint.fixes.edits import column_name, string
from sparkpar_lint.fixes.model import UNSAFE, Fix
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode
from sparkpar_lint.model import Finding, Severity
from sparkpar_lint.rules.base import Invalid, Rule, RuleContext, Valid

_PRELUDE = (
    "from pyspark.sql import SparkSession, functions as F\n"
    "spark = SparkSession.builder.getOrCreate()\n"
    'clicks = spark.readStream.format("kafka").load()\n'
)


# The watermark delay the fix writes: how late an event may arrive and still count. A choice,
# hence an unsafe fix; `[tool.sparkpar]` is the place for a per-project default later.
DEFAULT_WATERMARK_DELAY = "10 minutes"
_EVENT_TIME_NAME = re.compile(r"(^|_)ts$|time", re.IGNORECASE)


def streaming_inputs(graph: StageGraph, node: StageNode) -> list[StageNode]:
    return [graph.node(i) for i in node.inputs if graph.node(i).streaming]


class StatefulStreamWithoutWatermark(Rule):
    id = "SPX204"
    name = "stateful-stream-without-watermark"
    severity = Severity.WARNING
    summary = "A streaming stateful operator with no `withWatermark` upstream: state grows without bound."
    fix_safety = UNSAFE
    VALID = [
        Valid(
            _PRELUDE
            + 'clicks.withWatermark("ts", "10 minutes").groupBy(F.window("ts", "5 minutes"), "page").count()\n'
        ),
        # The watermark is set in a helper the stream passes through.
        Valid(
            _PRELUDE
            + 'def with_event_time(df):\n    return df.withWatermark("ts", "1 hour")\n'
            + 'with_event_time(clicks).dropDuplicates(["event_id", "ts"])\n'
        ),
        # Batch: no state survives the query.
        Valid(
            "from pyspark.sql import SparkSession\nspark = SparkSession.builder.getOrCreate()\n"
            'spark.read.parquet("clicks").groupBy("page").count()\n'
        ),
        # A stream-static join keeps no state.
        Valid(_PRELUDE + 'clicks.join(spark.read.parquet("pages"), "page")\n'),
    ]
    INVALID = [
        # No event-time column among the keys: a watermark would not bound this state, no fix.
        Invalid(_PRELUDE + 'clicks.groupBy("page").count()\n', line=4, column=23, expected_fix=None),
        Invalid(_PRELUDE + 'clicks.dropDuplicates(["event_id"])\n', line=4, column=7, expected_fix=None),
        # The column of the aggregation's `window(...)` is the event time.
        Invalid(
            _PRELUDE + 'clicks.groupBy(F.window("ts", "5 minutes"), "page").count()\n',
            line=4,
            column=52,
            expected_fix=_PRELUDE
            + 'clicks.withWatermark("ts", "10 minutes").groupBy(F.window("ts", "5 minutes"), "page").count()\n',
        ),
        # A key named like a time column: the deduplication can forget old events.
        Invalid(
            _PRELUDE + 'clicks.dropDuplicates(["event_id", "event_time"])\n',
            line=4,
            column=7,
            expected_fix=_PRELUDE + 'clicks.withWatermark("event_time", "10 minutes").dropDuplicates(["event_id", "event_time"])\n',
        ),
        Invalid(
            _PRELUDE
            + 'views = spark.readStream.format("kafka").load().withWatermark("ts", "1 hour")\n'
            + 'clicks.join(views, "ad_id")\n',
            line=5,
            column=7,
            # A stream-stream join needs watermarks on both sides and a time-range condition.
            expected_fix=None,
        ),
        Invalid(
            _PRELUDE
            + "def track(key, pdfs, state):\n    yield from pdfs\n"
            + 'clicks.groupBy("user").applyInPandasWithState(track, "u string", "n long", "append", "NoTimeout")\n',
            line=6,
            column=23,
            expected_fix=None,
        ),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        graph = ctx.graph
        for node in graph.nodes:
            if node.spec is None or not node.spec.streaming_stateful or not node.streaming:
                continue
            inputs = streaming_inputs(graph, node)
            if node.spec.data_args:
                # A join keeps state only between two streams, and needs a pulse from each.
                if len(inputs) < 2:
                    continue
                if all(i.has_watermark_upstream for i in inputs):
                    continue
            elif node.has_watermark_upstream:
                continue
            yield self.finding(ctx, node.span, _message(node), fix=_fix(graph, node))


def _message(node: StageNode) -> str:
    return (
        f"streaming `{node.method}` keeps state across micro-batches, but no `withWatermark` "
        "reaches it"
        + (" from both sides" if node.spec.data_args else "")
        + ": nothing ever tells it that earlier event time is complete, so its state grows without "
        "bound and results that need complete data are never released. Add "
        "`withWatermark(event_time_column, delay)` upstream"
    )


def _fix(graph: StageGraph, node: StageNode) -> Fix | None:
    """`withWatermark(event_time, DEFAULT_WATERMARK_DELAY)` right before the stateful stage.

    Only where the event time is part of the state's key (a `window(...)` column, or a grouping
    or deduplication column named like a time), since only then does the watermark let Spark
    drop old state. Right before the stage, not after the source: the event-time column often
    comes from a `select` in between.
    """
    if node.spec.data_args:
        return None
    grouping = graph.input_of(node) if node.receiver == "GroupedData" else node
    if grouping is None or grouping.call is None or receiver_of(grouping.call) is None:
        return None
    event_time = _event_time(grouping)
    if event_time is None:
        return None
    watermark = insert_before("withWatermark", [string(event_time), string(DEFAULT_WATERMARK_DELAY)])
    description = f'`withWatermark("{event_time}", "{DEFAULT_WATERMARK_DELAY}")` before streaming `{node.method}`'
    return Fix(UNSAFE, description, ((grouping.call, watermark),))


def _event_time(grouping: StageNode) -> str | None:
    for call in grouping.columns.calls:
        if call.function == "window" and call.call is not None and call.call.args:
            return column_name(call.call.args[0].value)
    return next((k for k in grouping.keys if _EVENT_TIME_NAME.search(k)), None)
