"""SPX107 sort-discarded: an `orderBy`/`sort` whose order a later shuffle throws away unused."""

from __future__ import annotations

from collections.abc import Iterator
from textwrap import dedent

from sparkpar_lint.confidence import rows_differ
from sparkpar_lint.graph.order_flow import discarding_operation, hands_on_every_row, optimizer_drops, order_reader
from sparkpar_lint.graph.stage_graph import StageNode
from sparkpar_lint.model import Finding, RelatedLocation, Severity
from sparkpar_lint.rules.base import Invalid, Rule, RuleContext, Valid

_FIX_BY_RECEIVER = {
    "DataFrame": "sort after the shuffle, or use an ordered window, `min_by`/`max_by`",
    "RDD": "sort after the shuffle (`sortBy`/`sortByKey`), or `takeOrdered`",
}

# Nothing in the code reads the lost order: only a reader of the result could rely on it.
_NOTHING_READS = "a reader of this result expects the order the sort gave"


class SortDiscarded(Rule):
    id = "SPX107"
    name = "sort-discarded"
    severity = Severity.WARNING
    summary = "A sort's order is destroyed by a later shuffle before anything uses it."
    VALID = [
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                latest = events.groupBy("user").agg(F.max_by("page", "ts"))
                """)
        ),
        # The order reaches a writer, a limit, the driver, or nothing at all.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                events.orderBy("ts").write.parquet("out")
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                events.orderBy(F.desc("ts"), "event_id").limit(10).collect()
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                pdf = events.sort("ts").select("user", "ts").toPandas()
                events.orderBy("ts").show()
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                def ordered(df):
                    return df.orderBy("ts")
                """)
        ),
        # A notebook preview of the sorted rows uses the order.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                display(events.groupBy("page").count().orderBy(F.desc("count"), "page"))
                """)
        ),
        # Sorting after the shuffle is the fix, not the bug.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                events.groupBy("user").count().orderBy("count")
                """)
        ),
        # One branch uses the order, so the sort is not wasted.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                ranked = events.orderBy("ts")
                ranked.limit(5).show()
                ranked.groupBy("user").count()
                """)
        ),
        # Only one branch of an if/else sorts: the sorts do not follow one another.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                counts = events.groupBy("page").count()
                if ascending:
                    ranked = counts.orderBy("count")
                else:
                    ranked = counts.orderBy(F.desc("count"))
                ranked.show()
                """)
        ),
        # coalesce(1) merges sorted partitions without a shuffle.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                events.orderBy("ts").coalesce(1).write.csv("out")
                """)
        ),
        # pandas: sort_values then groupby keeps order within groups.
        Valid(
            dedent("""\
                import pandas as pd
                pdf = pd.DataFrame()
                pdf.sort_values('ts').groupby('user').first()
                """)
        ),
        # The optimizer removes a sort that only a join or an aggregation reading no order follows.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                users = spark.read.parquet("users")
                events.orderBy("ts").join(users, "user_id").write.parquet("out")
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                events.sort("ts").filter("ts > 0").groupBy("user").agg(F.max("n")).write.parquet("out")
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                months = spark.sql("WITH m AS (SELECT month FROM calendar ORDER BY month) SELECT s.* FROM sales s JOIN m ON s.month = m.month")
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                per_user = spark.sql("SELECT user, count(*) AS n FROM (SELECT * FROM visits ORDER BY ts) GROUP BY user")
                """)
        ),
        # SQL: the sort comes after the aggregation.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                per_user = spark.sql("SELECT user, count(*) AS n FROM visits GROUP BY user ORDER BY user")
                """)
        ),
    ]
    INVALID = [
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                latest = events.orderBy("ts").groupBy("user").agg(F.last("page"))
                """),
            line=4,
            column=16,
            related_lines=(4, 4),
        ),
        # The rows reach the driver after the join, in whatever order the join made.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                by_time = events.sort(F.col("ts").desc())
                enriched = by_time.withColumn("day", F.to_date("ts"))
                users = spark.read.parquet("users")
                rows = enriched.join(users, "user_id").collect()
                """),
            line=4,
            column=17,
            related_lines=(7, 7),
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, Window, functions as F
                spark = SparkSession.builder.getOrCreate()
                events = spark.read.parquet("events")
                w = Window.partitionBy("user").orderBy("ts")
                events.orderBy("ts").withColumn("rank", F.row_number().over(w))
                """),
            line=5,
            column=7,
            related_lines=(5,),
        ),
        Invalid(
            dedent("""\
                from pyspark import SparkContext
                sc = SparkContext.getOrCreate()
                pairs = sc.textFile("logs").map(lambda line: (line[:8], line))
                by_key = pairs.sortByKey().repartition(8)
                """),
            line=4,
            column=15,
            related_lines=(4,),
        ),
        # SQL: ORDER BY in a subquery, then a GROUP BY whose `first` was meant to see it.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                last_page = spark.sql("SELECT user, first(page) AS p FROM (SELECT * FROM visits ORDER BY ts DESC) GROUP BY user")
                """),
            line=3,
            column=80,
            related_lines=(3, 3),
        ),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        graph = ctx.graph
        for node in graph.nodes:
            if node.spec is None or node.order_effect != "establishes-total":
                continue
            discarder = discarding_operation(graph, node)
            if discarder is None:
                continue
            reader = order_reader(graph, discarder)
            # A sort the optimizer removes, with nothing after it reading order, costs nothing and
            # decides nothing: a subquery's ORDER BY under a join, a sort before `count`.
            if reader is None and optimizer_drops(graph, node, discarder):
                continue
            yield self._finding(ctx, node, discarder, reader)

    def _finding(self, ctx: RuleContext, sort: StageNode, discarder: StageNode, reader: StageNode | None) -> Finding:
        fix = _FIX_BY_RECEIVER.get(sort.receiver, _FIX_BY_RECEIVER["DataFrame"])
        related = [RelatedLocation(discarder.span, f"`{discarder.method}` shuffles the sorted rows here")]
        if reader is None:
            message = (
                f"the order `{sort.method}` establishes is discarded by `{discarder.method}` before "
                f"anything uses it: the sort is wasted work, and whatever relies on it sees rows in "
                f"arbitrary order; {fix}"
            )
            return self.finding(ctx, sort.span, message, related=tuple(related), outcomes=_NOTHING_READS)
        if reader is not discarder:
            related.append(RelatedLocation(reader.span, f"`{reader.method}` reads the row order here"))
        message = (
            f"the order `{sort.method}` establishes is discarded by `{discarder.method}`, and "
            f"`{reader.method}` then reads rows in arbitrary order instead; {fix}"
        )
        outcomes = True if hands_on_every_row(reader) else rows_differ(reader)
        return self.finding(ctx, sort.span, message, related=tuple(related), outcomes=outcomes)
