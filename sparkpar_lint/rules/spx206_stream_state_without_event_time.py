"""SPX206 stream-state-without-event-time: streaming state that no watermark can ever drop."""

from __future__ import annotations

from collections.abc import Iterator

from sparkpar_lint.model import Finding, Severity
from sparkpar_lint.rules.base import Invalid, Rule, RuleContext, Valid
from sparkpar_lint.rules.spx204_stateful_stream_without_watermark import stream_state_problems

_PRELUDE = (
    "from pyspark.sql import SparkSession, functions as F\n"
    "spark = SparkSession.builder.getOrCreate()\n"
    'clicks = spark.readStream.format("kafka").load()\n'
)


class StreamStateWithoutEventTime(Rule):
    id = "SPX206"
    name = "stream-state-without-event-time"
    severity = Severity.WARNING
    summary = "Streaming state keyed by no event time (or a join with no time range): no watermark can drop it."
    VALID = [
        # An event-time window in the key: a watermark can drop it (without one, SPX204 says so).
        Valid(
            _PRELUDE + 'clicks.withWatermark("ts", "10 minutes").groupBy(F.window("ts", "1 hour"), "user_id").count()\n'
        ),
        Valid(_PRELUDE + 'clicks.groupBy(F.window("ts", "5 minutes"), "user_id").count()\n'),
        # A small label key: one state row per label value, bounded.
        Valid(_PRELUDE + 'clicks.groupBy("country").count()\n'),
        # A deduplication on an id: `dropDuplicatesWithinWatermark` can bound it (SPX204's).
        Valid(_PRELUDE + 'clicks.dropDuplicates(["event_id"])\n'),
        # A time range in the join's condition: watermarks on both sides let Spark forget rows.
        Valid(
            _PRELUDE
            + 'shown = spark.readStream.format("kafka").load().withWatermark("shown_at", "1 hour")\n'
            + 'taps = clicks.withWatermark("tapped_at", "1 hour")\n'
            + 'taps.join(shown, F.expr("ad = shown_ad AND tapped_at BETWEEN shown_at AND shown_at + INTERVAL 1 HOUR"))\n'
        ),
        # A key whose name says nothing of its size, in complete mode: the author says it is small.
        Valid(
            _PRELUDE
            + 'counts = clicks.groupBy("page").count()\n'
            + 'counts.writeStream.outputMode("complete").format("console").start()\n'
        ),
    ]
    INVALID = [
        # The stream comes from a method of the same class (`self._tweets()`): followed into it.
        Invalid(
            "from pyspark.sql import SparkSession, functions as F\n"
            "class Trending:\n"
            "    def __init__(self):\n"
            "        self.spark = SparkSession.builder.getOrCreate()\n"
            "    def _tweets(self):\n"
            '        return self.spark.readStream.format("kafka").load()\n'
            "    def run(self):\n"
            '        words = self._tweets().select(F.explode(F.split("value", " ")).alias("tag"))\n'
            '        words.groupBy("tag").count().writeStream.outputMode("complete").start()\n',
            line=9,
            column=29,
        ),
        # One state row per user for ever.
        Invalid(_PRELUDE + 'clicks.groupBy("user_id").count()\n', line=4, column=26, expected_fix=None),
        # A key whose name says nothing of its size: a note.
        Invalid(
            _PRELUDE + 'clicks.groupBy("page").count()\n', line=4, column=23, severity=Severity.INFO, expected_fix=None
        ),
        # Words split out of free text, in complete mode: the key space grows with the vocabulary.
        Invalid(
            _PRELUDE
            + 'words = clicks.select(F.explode(F.split(F.col("value").cast("string"), " ")).alias("word"))\n'
            + 'counts = words.groupBy("word").count()\n'
            + 'counts.writeStream.outputMode("complete").format("console").start()\n',
            line=5,
            column=31,
            expected_fix=None,
        ),
        # A watermark upstream does not help a key with no event time in it.
        Invalid(
            _PRELUDE
            + 'counts = clicks.withWatermark("ts", "1 hour").groupBy("user_id").count()\n'
            + 'counts.writeStream.outputMode("complete").format("console").start()\n',
            line=4,
            column=65,
            expected_fix=None,
        ),
        # Both streams watermarked, but matched on the id alone: every row of both sides is kept.
        Invalid(
            _PRELUDE
            + 'shown = spark.readStream.format("kafka").load().withWatermark("shown_at", "1 hour")\n'
            + 'taps = clicks.withWatermark("tapped_at", "1 hour")\n'
            + "taps.join(shown, taps.ad == shown.shown_ad)\n",
            line=6,
            column=5,
            expected_fix=None,
        ),
        # A broadcast hint does not make a stream static: both sides are still buffered.
        Invalid(
            _PRELUDE
            + 'views = spark.readStream.format("kafka").load()\n'
            + 'clicks.join(F.broadcast(views), "ad_id")\n',
            line=5,
            column=7,
            expected_fix=None,
        ),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        for problem in stream_state_problems(ctx):
            if problem.without_event_time:
                yield self.finding(ctx, problem.span, problem.message, severity=problem.severity, fix=problem.fix)
