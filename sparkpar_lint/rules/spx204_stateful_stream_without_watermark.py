"""SPX204 stateful-stream-without-watermark: streaming state with no event-time pulse upstream."""

from __future__ import annotations

from collections.abc import Iterator

from sparkpar_lint.graph.stage_graph import StageGraph, StageNode
from sparkpar_lint.model import Finding, Severity
from sparkpar_lint.rules.base import Invalid, Rule, RuleContext, Valid

_PRELUDE = (
    "from pyspark.sql import SparkSession, functions as F\n"
    "spark = SparkSession.builder.getOrCreate()\n"
    'clicks = spark.readStream.format("kafka").load()\n'
)


def streaming_inputs(graph: StageGraph, node: StageNode) -> list[StageNode]:
    return [graph.node(i) for i in node.inputs if graph.node(i).streaming]


class StatefulStreamWithoutWatermark(Rule):
    id = "SPX204"
    name = "stateful-stream-without-watermark"
    severity = Severity.WARNING
    summary = "A streaming stateful operator with no `withWatermark` upstream: state grows without bound."
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
        Invalid(_PRELUDE + 'clicks.groupBy("page").count()\n', line=4, column=23),
        Invalid(_PRELUDE + 'clicks.dropDuplicates(["event_id"])\n', line=4, column=7),
        Invalid(
            _PRELUDE
            + 'views = spark.readStream.format("kafka").load().withWatermark("ts", "1 hour")\n'
            + 'clicks.join(views, "ad_id")\n',
            line=5,
            column=7,
        ),
        Invalid(
            _PRELUDE
            + "def track(key, pdfs, state):\n    yield from pdfs\n"
            + 'clicks.groupBy("user").applyInPandasWithState(track, "u string", "n long", "append", "NoTimeout")\n',
            line=6,
            column=23,
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
            yield self.finding(ctx, node.span, _message(node))


def _message(node: StageNode) -> str:
    return (
        f"streaming `{node.method}` keeps state across micro-batches, but no `withWatermark` "
        "reaches it"
        + (" from both sides" if node.spec.data_args else "")
        + ": nothing ever tells it that earlier event time is complete, so its state grows without "
        "bound and results that need complete data are never released. Add "
        "`withWatermark(event_time_column, delay)` upstream"
    )
