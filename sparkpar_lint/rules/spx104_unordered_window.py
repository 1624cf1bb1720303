"""SPX104 unordered-window: `first`, `collect_list`, ... over a window spec with no `orderBy`."""

from __future__ import annotations

from collections.abc import Iterator

from sparkpar_lint.catalogue import load_catalogue
from sparkpar_lint.graph.stage_graph import ColumnCall
from sparkpar_lint.model import Finding, RelatedLocation, Severity
from sparkpar_lint.rules.base import Invalid, Rule, RuleContext, Valid

_PRELUDE = (
    "from pyspark.sql import SparkSession, Window, functions as F\n"
    "spark = SparkSession.builder.getOrCreate()\n"
    'events = spark.read.parquet("events")\n'
)


class UnorderedWindow(Rule):
    id = "SPX104"
    name = "unordered-window"
    severity = Severity.ERROR
    summary = "An order-sensitive window function runs over a window with no orderBy."
    VALID = [
        Valid(_PRELUDE + 'by_user = Window.partitionBy("user").orderBy("ts", "event_id")\n'
              'sessions = events.withColumn("entry_page", F.first("page").over(by_user))\n'),
        # Order-insensitive functions need no order.
        Valid(_PRELUDE + 'w = Window.partitionBy("user")\n'
              'events.withColumn("n", F.count("page").over(w)).withColumn("m", F.max("ts").over(w))\n'),
        # Sorting the collected list removes the dependence on arrival order.
        Valid(_PRELUDE + 'w = Window.partitionBy("user")\n'
              'events.select(F.array_sort(F.collect_list("page").over(w)).alias("pages"))\n'),
        Valid(
            _PRELUDE
            + 'events.withColumn("n", F.size(F.collect_list("page").over(Window.partitionBy("user"))))\n'
        ),
        # The spec comes from a helper that orders it.
        Valid(_PRELUDE + 'def by_user():\n    return Window.partitionBy("user").orderBy(F.col("ts").desc())\n'
              'events.withColumn("last_page", F.first("page").over(by_user()))\n'),
        Valid(_PRELUDE + 'events.selectExpr("first(page) OVER (PARTITION BY user ORDER BY ts) AS entry")\n'
              'events.withColumn("e", F.expr("first(page) OVER (PARTITION BY user ORDER BY ts)"))\n'),
        # A groupBy aggregate is SPX101's business, and pandas' first is not Spark's.
        Valid("import pandas as pd\npdf = pd.DataFrame()\npdf.groupby('user').first()\n"
              "pdf.rolling(3).apply(lambda xs: xs[0])\n"),
        # A local `first` shadows Spark's.
        Valid(_PRELUDE + "def first(column):\n    return F.min(column)\n"
              'events.withColumn("f", first("page").over(Window.partitionBy("user")))\n'),
    ]
    INVALID = [
        Invalid(
            _PRELUDE + 'by_user = Window.partitionBy("user")\n'
            'sessions = events.withColumn("entry_page", F.first("page").over(by_user))\n',
            line=5,
            column=43,
            related_lines=(4,),
        ),
        Invalid(
            "from pyspark.sql.functions import collect_list as gather\n"
            "from pyspark.sql.window import Window\n"
            "def with_history(df):\n"
            '    spec = Window.partitionBy("device").rowsBetween(Window.unboundedPreceding, 0)\n'
            '    return df.withColumn("history", gather("status").over(spec))\n',
            line=5,
            column=36,
            related_lines=(4,),
        ),
        Invalid(
            "import pyspark.sql.functions as fn\n"
            "from pyspark.sql import Window\n"
            "def by(key):\n"
            "    return Window.partitionBy(key)\n"
            "def latest(df):\n"
            '    return df.select("device", fn.last("status", ignorenulls=True)\n'
            '                     .over(by("device")).alias("status"))\n',
            line=6,
            column=31,
            related_lines=(4,),
        ),
        Invalid(
            _PRELUDE + 'events.selectExpr("user", "first(page) OVER (PARTITION BY user) AS entry_page")\n',
            line=4,
            column=26,
        ),
        Invalid(
            _PRELUDE + 'stream = spark.readStream.format("kafka").load()\n'
            'stream.withColumn("second", F.nth_value("page", 2).over(Window.partitionBy("user")))\n',
            line=5,
            column=28,
            related_lines=(5,),
        ),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        for node in ctx.graph.nodes:
            for call in node.columns.calls:
                if _unordered_window_call(call):
                    yield self._finding(ctx, call)

    def _finding(self, ctx: RuleContext, call: ColumnCall) -> Finding:
        window = call.window
        related = ()
        if window.span is not None:
            related = (RelatedLocation(window.span, "the window spec is built here without `orderBy`"),)
        message = (
            f"`{call.function}` over a window with no `orderBy` sees each partition's rows in the "
            "order the shuffle delivers them; the result changes with partitioning. Add "
            "`orderBy(<sort column>, <tie-breaker>)` to the window spec"
        )
        return self.finding(ctx, call.span, message, related=related)


def _unordered_window_call(call: ColumnCall) -> bool:
    if call.window is None or call.window.has_order:
        return False
    if call.spec is None or not call.spec.order_sensitive:
        return False
    functions = load_catalogue().functions
    return not any(functions[name].order_normalizing for name in call.enclosing if name in functions)
