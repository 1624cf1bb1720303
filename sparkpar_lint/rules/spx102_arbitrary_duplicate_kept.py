"""SPX102 arbitrary-duplicate-kept: `dropDuplicates(subset)` keeps an arbitrary row per subset."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from sparkpar_lint.graph.order_flow import upstream_sort
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode
from sparkpar_lint.model import Finding, RelatedLocation, Severity
from sparkpar_lint.rules.base import Invalid, Rule, RuleContext, Valid

_PRELUDE = (
    "from pyspark.sql import SparkSession, Window, functions as F\n"
    "spark = SparkSession.builder.getOrCreate()\n"
    'clicks = spark.read.parquet("clicks")\n'
)
_BATCH_FIX = "; keep `row_number()` over `Window.partitionBy(subset).orderBy(sort, tie-breaker)` == 1"
# Streaming queries have no row_number: aggregate the other columns by an order column instead.
_STREAMING_FIX = (
    "; dedupe on every column, or aggregate: `groupBy(subset, window).agg(F.max_by(column, event_time))`"
)
# Consumers whose result is the same whichever duplicate was kept.
_ROW_BLIND = frozenset({"count", "isEmpty"})


class ArbitraryDuplicateKept(Rule):
    id = "SPX102"
    name = "arbitrary-duplicate-kept"
    severity = Severity.ERROR
    summary = "dropDuplicates on a subset keeps an arbitrary row of each duplicate group."
    VALID = [
        Valid(_PRELUDE + "clicks.dropDuplicates()\nclicks.drop_duplicates()\nclicks.distinct()\n"),
        Valid(_PRELUDE + "clicks.dropDuplicates(None)\nclicks.drop_duplicates(subset=None)\n"),
        Valid(
            _PRELUDE
            + 'newest_first = Window.partitionBy("user").orderBy(F.col("ts").desc(), "click_id")\n'
            + 'latest = clicks.withColumn("rn", F.row_number().over(newest_first))'
            + '.filter("rn = 1").drop("rn")\n'
        ),
        # Only the subset columns survive: every duplicate gives the same row.
        Valid(_PRELUDE + 'clicks.dropDuplicates(["user", "url"]).select("user", "url")\n'),
        Valid(_PRELUDE + 'n = clicks.dropDuplicates(["user"]).count()\n'),
        Valid(_PRELUDE + 'pairs = clicks.select("user", F.col("url")).dropDuplicates(["user", "url"])\n'),
        # pandas drop_duplicates keeps the first row of a frame in a defined order.
        Valid(
            "import pandas as pd\npdf = pd.read_csv('c.csv')\n"
            "pdf.sort_values('ts').drop_duplicates(['user'])\n"
        ),
        # A local class with the same method name.
        Valid(
            "class Log:\n    def dropDuplicates(self, cols):\n        return self\n"
            "Log().dropDuplicates(['user'])\n"
        ),
    ]
    INVALID = [
        Invalid(
            _PRELUDE + 'latest = clicks.orderBy(F.col("ts").desc()).dropDuplicates(["user"])\n',
            line=4,
            column=44,
            related_lines=(4,),
            severity=Severity.ERROR,
        ),
        Invalid(
            _PRELUDE + 'one_per_session = clicks.drop_duplicates(subset=["session_id"])\n',
            line=4,
            column=25,
            severity=Severity.WARNING,
        ),
        Invalid(
            "from pyspark.sql import DataFrame\n"
            "def first_click(df: DataFrame) -> DataFrame:\n"
            '    ranked = df.sortWithinPartitions("ts")\n'
            '    return ranked.dropDuplicates(["user", "campaign"])\n',
            line=4,
            column=18,
            related_lines=(3,),
            severity=Severity.ERROR,
        ),
        Invalid(
            _PRELUDE
            + 'stream = spark.readStream.format("kafka").load().withWatermark("ts", "10 minutes")\n'
            + 'stream.dropDuplicatesWithinWatermark(["event_id"]).writeStream.start()\n',
            line=5,
            column=7,
            severity=Severity.WARNING,
        ),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        graph = ctx.graph
        for node in graph.nodes:
            if node.spec is None or not node.spec.keeps_arbitrary_row or not _has_subset(node):
                continue
            if _only_subset_used(graph, node) or _only_subset_present(graph, node):
                continue
            yield self._finding(ctx, node, upstream_sort(graph, node))

    def _finding(self, ctx: RuleContext, node: StageNode, sort: StageNode | None) -> Finding:
        subset = f"({', '.join(node.keys)})" if node.keys else "subset value"
        message = (
            f"`{node.method}` keeps one arbitrary row per {subset}: the other columns come from "
            "whichever duplicate a partition reaches first"
        )
        related = ()
        if sort is not None:
            message += f", not the one `{sort.method}` put first (the shuffle discards that order)"
            related = (RelatedLocation(sort.span, f"`{sort.method}` orders the rows here ..."),)
        message += _STREAMING_FIX if node.streaming else _BATCH_FIX
        severity = Severity.ERROR if sort is not None else Severity.WARNING
        return self.finding(ctx, node.span, message, severity=severity, related=related)


def _has_subset(node: StageNode) -> bool:
    """A subset was passed and is not `None` (which means every column)."""
    if node.call is None:
        return False
    subset = next((a.value for a in node.call.args if a.keyword is None or a.keyword.value == "subset"), None)
    return subset is not None and not (isinstance(subset, cst.Name) and subset.value == "None")


def _only_subset_used(graph: StageGraph, node: StageNode) -> bool:
    """Every consumer reads only subset columns or no row content at all."""
    consumers = graph.consumers(node)
    if not consumers or not node.keys:
        return False
    return all(_reads_only(consumer, set(node.keys)) for consumer in consumers)


def _only_subset_present(graph: StageGraph, node: StageNode) -> bool:
    """`select("user", "url").dropDuplicates(["user", "url"])`: the subset is every column."""
    source = graph.input_of(node)
    return source is not None and node.keys != () and _reads_only(source, set(node.keys))


def _reads_only(consumer: StageNode, subset: set[str]) -> bool:
    if consumer.method in _ROW_BLIND and consumer.spec is not None and consumer.spec.returns == "driver":
        return True
    if consumer.spec is None or consumer.spec.forwarding != "selected" or consumer.call is None:
        return False
    names = {a.value.evaluated_value for a in consumer.call.args if isinstance(a.value, cst.SimpleString)}
    columns = names | set(consumer.columns.columns)
    return bool(columns) and "*" not in columns and columns <= subset
