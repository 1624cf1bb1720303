"""SPX206 stream-state-without-event-time: streaming state that no watermark can ever drop."""

from __future__ import annotations

from collections.abc import Iterator
from textwrap import dedent

from sparkpar_lint.model import Finding, Severity
from sparkpar_lint.rules.base import Invalid, Rule, RuleContext, Valid
from sparkpar_lint.rules.spx204.problems import stream_state_problems


class StreamStateWithoutEventTime(Rule):
    id = "SPX206"
    name = "stream-state-without-event-time"
    severity = Severity.WARNING
    summary = "Streaming state keyed by no event time (or a join with no time range): no watermark can drop it."
    VALID = [
        # An event-time window in the key: a watermark can drop it (without one, SPX204 says so).
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                clicks.withWatermark("ts", "10 minutes").groupBy(F.window("ts", "1 hour"), "user_id").count()
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                clicks.groupBy(F.window("ts", "5 minutes"), "user_id").count()
                """)
        ),
        # A small label key: one state row per label value, bounded.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                clicks.groupBy("country").count()
                """)
        ),
        # A deduplication on an id: `dropDuplicatesWithinWatermark` can bound it (SPX204's).
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                clicks.dropDuplicates(["event_id"])
                """)
        ),
        # A time range in the join's condition: watermarks on both sides let Spark forget rows.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                shown = spark.readStream.format("kafka").load().withWatermark("shown_at", "1 hour")
                taps = clicks.withWatermark("tapped_at", "1 hour")
                taps.join(shown, F.expr("ad = shown_ad AND tapped_at BETWEEN shown_at AND shown_at + INTERVAL 1 HOUR"))
                """)
        ),
        # A key whose name says nothing of its size, in complete mode: the author says it is small.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                counts = clicks.groupBy("page").count()
                counts.writeStream.outputMode("complete").format("console").start()
                """)
        ),
    ]
    INVALID = [
        # The stream comes from a method of the same class (`self._tweets()`): followed into it.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                class Trending:
                    def __init__(self):
                        self.spark = SparkSession.builder.getOrCreate()
                    def _tweets(self):
                        return self.spark.readStream.format("kafka").load()
                    def run(self):
                        words = self._tweets().select(F.explode(F.split("value", " ")).alias("tag"))
                        words.groupBy("tag").count().writeStream.outputMode("complete").start()
                """),
            line=9,
            column=29,
        ),
        # One state row per user for ever.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                clicks.groupBy("user_id").count()
                """),
            line=4,
            column=26,
            expected_fix=None,
        ),
        # A key whose name says nothing of its size: a note.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                clicks.groupBy("page").count()
                """),
            line=4,
            column=23,
            severity=Severity.INFO,
            expected_fix=None,
        ),
        # Words split out of free text, in complete mode: the key space grows with the vocabulary.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                words = clicks.select(F.explode(F.split(F.col("value").cast("string"), " ")).alias("word"))
                counts = words.groupBy("word").count()
                counts.writeStream.outputMode("complete").format("console").start()
                """),
            line=5,
            column=31,
            expected_fix=None,
        ),
        # A watermark upstream does not help a key with no event time in it.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                counts = clicks.withWatermark("ts", "1 hour").groupBy("user_id").count()
                counts.writeStream.outputMode("complete").format("console").start()
                """),
            line=4,
            column=65,
            expected_fix=None,
        ),
        # Both streams watermarked, but matched on the id alone: every row of both sides is kept.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                shown = spark.readStream.format("kafka").load().withWatermark("shown_at", "1 hour")
                taps = clicks.withWatermark("tapped_at", "1 hour")
                taps.join(shown, taps.ad == shown.shown_ad)
                """),
            line=6,
            column=5,
            expected_fix=None,
        ),
        # A broadcast hint does not make a stream static: both sides are still buffered.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                views = spark.readStream.format("kafka").load()
                clicks.join(F.broadcast(views), "ad_id")
                """),
            line=5,
            column=7,
            expected_fix=None,
        ),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        for problem in stream_state_problems(ctx):
            if problem.without_event_time:
                yield self.finding(ctx, problem.span, problem.message, severity=problem.severity, fix=problem.fix)
