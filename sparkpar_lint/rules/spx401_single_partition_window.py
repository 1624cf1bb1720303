"""SPX401 single-partition-window: an ordered or framed window with no `partitionBy`."""

from __future__ import annotations

from collections.abc import Iterator

from sparkpar_lint.model import Finding, Severity
from sparkpar_lint.rules.base import Invalid, Rule, RuleContext, Valid

_PRELUDE = (
    "from pyspark.sql import SparkSession, Window, functions as F\n"
    "spark = SparkSession.builder.getOrCreate()\n"
    'events = spark.read.parquet("events")\n'
)


class SinglePartitionWindow(Rule):
    id = "SPX401"
    name = "single-partition-window"
    severity = Severity.WARNING
    summary = "A window with `orderBy` or a frame but no `partitionBy` moves every row to one partition."
    VALID = [
        Valid(_PRELUDE + 'w = Window.partitionBy("user").orderBy("ts")\nevents.withColumn("n", F.row_number().over(w))\n'),
        Valid(_PRELUDE + 'events.withColumn("total", F.sum("v").over(Window.partitionBy("user")))\n'),
        # pandas' rolling window, not Spark's.
        Valid("import pandas as pd\npdf = pd.DataFrame()\npdf.sort_values('ts').rolling(3).mean()\n"),
        # A local class that happens to be called Window.
        Valid(
            "class Window:\n    @staticmethod\n    def orderBy(c):\n        return c\n"
            "Window.orderBy('ts')\n"
        ),
    ]
    INVALID = [
        Invalid(
            _PRELUDE + 'ranked = events.withColumn("rank", F.row_number().over(Window.orderBy("ts")))\n',
            line=4,
            column=55,
        ),
        Invalid(
            _PRELUDE
            + 'running = Window.orderBy("day").rowsBetween(Window.unboundedPreceding, 0)\n'
            + 'events.groupBy("day").agg(F.sum("v").alias("v")).withColumn("cum", F.sum("v").over(running))\n',
            line=4,
            column=10,
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
            what = f"`orderBy({', '.join(spec.order_by)})`" if spec.has_order else "a row frame"
            message = (
                f"this window has {what} but no `partitionBy`: Spark moves every row to a single "
                "partition and one task computes it, however many cores the cluster has. Partition "
                "by the key the logic actually needs (`Window.partitionBy(key).orderBy(...)`)"
            )
            yield self.finding(ctx, spec.span, message)
