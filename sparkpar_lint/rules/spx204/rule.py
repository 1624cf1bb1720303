"""SPX204 stateful-stream-without-watermark: the rule, its examples and what it flags."""

from __future__ import annotations

from collections.abc import Iterator
from textwrap import dedent

from sparkpar_lint.edits.model import UNSAFE
from sparkpar_lint.model import Finding, Severity
from sparkpar_lint.rules.base import Invalid, Rule, RuleContext, Valid
from sparkpar_lint.rules.spx204.problems import stream_state_problems


class StatefulStreamWithoutWatermark(Rule):
    id = "SPX204"
    name = "stateful-stream-without-watermark"
    severity = Severity.WARNING
    summary = "A streaming stateful operator with no `withWatermark` upstream: state grows without bound."
    fix_safety = UNSAFE
    fix_needs = "needs an event-time column in the state's key"
    VALID = [
        # No event time in the key: no watermark would drop this state (SPX206's finding, not this one's).
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                clicks.groupBy("user_id").count()
                """)
        ),
        # A method of the class that reads a batch table: no stream, no state.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                class Report:
                    def __init__(self):
                        self.spark = SparkSession.builder.getOrCreate()
                    def _tags(self):
                        return self.spark.read.table("tags")
                    def run(self):
                        self._tags().groupBy("tag").count().write.saveAsTable("tag_counts")
                """)
        ),
        # A transformWithState processor whose state expires (a TTL on its handle).
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                from pyspark.sql.streaming.stateful_processor import StatefulProcessor
                class LastSeen(StatefulProcessor):
                    def init(self, handle):
                        self.last = handle.getValueState("last", "ts long", 3600000)
                    def handleInputRows(self, key, rows, timer_values):
                        yield from ()
                clicks.groupBy("user_id").transformWithStateInPandas(LastSeen(), "ts long", "append", "None")
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                clicks.withWatermark("ts", "10 minutes").groupBy(F.window("ts", "5 minutes"), "page").count()
                """)
        ),
        # The watermark is set in a helper the stream passes through.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                def with_event_time(df):
                    return df.withWatermark("ts", "1 hour")
                with_event_time(clicks).dropDuplicates(["event_id", "ts"])
                """)
        ),
        # Batch: no state survives the query.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                spark.read.parquet("clicks").groupBy("page").count()
                """)
        ),
        # A stream-static join keeps no state.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                clicks.join(spark.read.parquet("pages"), "page")
                """)
        ),
        # A broadcast hint on the static side: still a stream-static join.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                clicks.join(F.broadcast(spark.read.parquet("pages")), "page")
                """)
        ),
        # Watermarks on both streams and a time range in the condition: old rows can be dropped.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                shown = spark.readStream.format("kafka").load().withWatermark("shown_at", "1 hour")
                taps = clicks.withWatermark("tapped_at", "1 hour")
                taps.join(shown, F.expr("ad = shown_ad AND tapped_at BETWEEN shown_at AND shown_at + INTERVAL 1 HOUR"))
                taps.join(shown, (taps.ad == shown.shown_ad) & (taps.tapped_at >= shown.shown_at))
                """)
        ),
        # A small label key: one state row per country, bounded, and a watermark could not help.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                clicks.groupBy("country").count()
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                clicks.groupBy("event_type", "status").agg(F.count("*"))
                """)
        ),
        # Complete mode keeps the whole (small) result table by design.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                per_page = clicks.groupBy("page").count()
                per_page.writeStream.outputMode("complete").format("memory").queryName("p").start()
                """)
        ),
        # The state function removes a key's state itself.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                def sessions(key, pdfs, state):
                    if state.hasTimedOut:
                        state.remove()
                    yield from pdfs
                clicks.groupBy("user").applyInPandasWithState(sessions, "u string", "n long", "append", "NoTimeout")
                """)
        ),
        # Ids remembered only until the watermark passes their event time plus the delay.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                views = spark.readStream.schema("view_id string, view_time timestamp").json("views")
                views.withWatermark("view_time", "1 hour").dropDuplicatesWithinWatermark(["view_id"])
                """)
        ),
        # A key made as a remainder takes a fixed set of values, whatever its name.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                clicks.withColumn("user_shard", F.expr("user_id % 16")).groupBy("user_shard").count()
                """)
        ),
    ]
    INVALID = [
        # A watermark that cannot evict anything: complete mode keeps every window forever (and the
        # memory table's readers rely on complete mode, so no fix).
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                counts = clicks.withWatermark("ts", "10 minutes").groupBy(F.window("ts", "5 minutes")).count()
                counts.writeStream.outputMode("complete").format("memory").queryName("w").start()
                spark.sql("SELECT * FROM w ORDER BY window").show()
                """),
            line=4,
            column=87,
            expected_fix=None,
        ),
        # Complete mode keeps every window by design, and the memory table's readers rely on it:
        # no watermark suggested (update mode would change what the table holds).
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                counts = clicks.groupBy(F.window("ts", "5 minutes")).count()
                counts.writeStream.outputMode("complete").format("memory").queryName("c").start()
                spark.table("c").show()
                """),
            line=4,
            column=53,
            expected_fix=None,
        ),
        # A memory table no code reads (the query is watched through its progress): nobody sees the
        # rows update mode leaves out, so a watermark plus update mode, as on the console.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                counts = clicks.groupBy(F.window("ts", "5 minutes")).count()
                query = counts.writeStream.outputMode("complete").format("memory").queryName("probe").start()
                print(query.lastProgress)
                """),
            line=4,
            column=53,
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession, functions as F
                             spark = SparkSession.builder.getOrCreate()
                             clicks = spark.readStream.format("kafka").load()
                             counts = clicks.withWatermark("ts", "10 minutes").groupBy(F.window("ts", "5 minutes")).count()
                             query = counts.writeStream.outputMode("update").format("memory").queryName("probe").start()
                             print(query.lastProgress)
                             """),
        ),
        # A sort of the windows shown on the console: Spark sorts a stream in complete mode only, so
        # the sort moves into a `foreachBatch` that shows each batch, and update mode bounds state.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                counts = clicks.groupBy(F.window("ts", "5 minutes")).count().orderBy("window")
                counts.writeStream.outputMode("complete").format("console").option("truncate", "false").start()
                """),
            line=4,
            column=53,
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession, functions as F
                             spark = SparkSession.builder.getOrCreate()
                             clicks = spark.readStream.format("kafka").load()
                             counts = clicks.withWatermark("ts", "10 minutes").groupBy(F.window("ts", "5 minutes")).count()
                             (
                                 counts.writeStream.outputMode("update")
                                 .foreachBatch(lambda batch, _: batch.orderBy("window").show(truncate=False))
                                 .start()
                             )
                             """),
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                clicks.dropDuplicates(["event_id"])
                """),
            line=4,
            column=7,
            expected_fix=None,
        ),
        # The column of the aggregation's `window(...)` is the event time.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                clicks.groupBy(F.window("ts", "5 minutes"), "page").count()
                """),
            line=4,
            column=52,
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession, functions as F
                             spark = SparkSession.builder.getOrCreate()
                             clicks = spark.readStream.format("kafka").load()
                             clicks.withWatermark("ts", "10 minutes").groupBy(F.window("ts", "5 minutes"), "page").count()
                             """),
        ),
        # A dedup on an id whose rows' schema has one event time: kept only within the watermark.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                views = spark.readStream.schema("view_id string, view_time timestamp").json("views")
                views.dropDuplicates(["view_id"])
                """),
            line=5,
            column=6,
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession, functions as F
                             spark = SparkSession.builder.getOrCreate()
                             clicks = spark.readStream.format("kafka").load()
                             views = spark.readStream.schema("view_id string, view_time timestamp").json("views")
                             views.withWatermark("view_time", "10 minutes").dropDuplicatesWithinWatermark(["view_id"])
                             """),
        ),
        # No event time, but the chain stamps each row's arrival: ids are remembered for the delay.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                seen = clicks.withColumn("seen_at", F.current_timestamp())
                seen.dropDuplicates(["key"])
                """),
            line=5,
            column=5,
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession, functions as F
                             spark = SparkSession.builder.getOrCreate()
                             clicks = spark.readStream.format("kafka").load()
                             seen = clicks.withColumn("seen_at", F.current_timestamp())
                             seen.withWatermark("seen_at", "10 minutes").dropDuplicatesWithinWatermark(["key"])
                             """),
        ),
        # A key named like a time column: the deduplication can forget old events.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                clicks.dropDuplicates(["event_id", "event_time"])
                """),
            line=4,
            column=7,
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession, functions as F
                             spark = SparkSession.builder.getOrCreate()
                             clicks = spark.readStream.format("kafka").load()
                             clicks.withWatermark("event_time", "10 minutes").dropDuplicates(["event_id", "event_time"])
                             """),
        ),
        # The condition already bounds the two event times: each side gets the configured delay.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                views = spark.readStream.format("kafka").load().select("key", F.col("timestamp").alias("view_time"))
                taps = clicks.select(F.col("key").alias("tap_ad"), F.col("timestamp").alias("tap_time"))
                taps.join(views, F.expr("tap_ad = key AND tap_time BETWEEN view_time AND view_time + INTERVAL 1 HOUR"))
                """),
            line=6,
            column=5,
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession, functions as F
                             spark = SparkSession.builder.getOrCreate()
                             clicks = spark.readStream.format("kafka").load()
                             views = spark.readStream.format("kafka").load().select("key", F.col("timestamp").alias("view_time"))
                             taps = clicks.select(F.col("key").alias("tap_ad"), F.col("timestamp").alias("tap_time"))
                             (
                                 taps.withWatermark("tap_time", "10 minutes")
                                 .join(
                                     views.withWatermark("view_time", "10 minutes"),
                                     F.expr("tap_ad = key AND tap_time BETWEEN view_time AND view_time + INTERVAL 1 HOUR"),
                                 )
                             )
                             """),
        ),
        # The range is held in a name bound once before the join: read there, the same fix.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                views = spark.readStream.format("kafka").load().select("key", F.col("timestamp").alias("view_time"))
                taps = clicks.select(F.col("key").alias("tap_ad"), F.col("timestamp").alias("tap_time"))
                soon_after = F.expr("tap_ad = key AND tap_time BETWEEN view_time AND view_time + INTERVAL 1 HOUR")
                taps.join(views, soon_after)
                """),
            line=7,
            column=5,
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession, functions as F
                             spark = SparkSession.builder.getOrCreate()
                             clicks = spark.readStream.format("kafka").load()
                             views = spark.readStream.format("kafka").load().select("key", F.col("timestamp").alias("view_time"))
                             taps = clicks.select(F.col("key").alias("tap_ad"), F.col("timestamp").alias("tap_time"))
                             soon_after = F.expr("tap_ad = key AND tap_time BETWEEN view_time AND view_time + INTERVAL 1 HOUR")
                             (
                                 taps.withWatermark("tap_time", "10 minutes")
                                 .join(views.withWatermark("view_time", "10 minutes"), soon_after)
                             )
                             """),
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                def track(key, pdfs, state):
                    yield from pdfs
                clicks.groupBy("user").applyInPandasWithState(track, "u string", "n long", "append", "NoTimeout")
                """),
            line=6,
            column=23,
            expected_fix=None,
        ),
        # Event-time windows shown on the console in complete mode: a watermark plus update mode.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                counts = clicks.groupBy(F.window("ts", "5 minutes")).count()
                counts.writeStream.outputMode('complete').format("console").start()
                """),
            line=4,
            column=53,
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession, functions as F
                             spark = SparkSession.builder.getOrCreate()
                             clicks = spark.readStream.format("kafka").load()
                             counts = clicks.withWatermark("ts", "10 minutes").groupBy(F.window("ts", "5 minutes")).count()
                             counts.writeStream.outputMode('update').format("console").start()
                             """),
        ),
        # The watermark is there but complete mode keeps every window: on the console, update mode.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.readStream.format("kafka").load()
                counts = clicks.withWatermark("ts", "1 hour").groupBy(F.window("ts", "5 minutes")).count()
                counts.writeStream.format("console").outputMode("complete").start()
                """),
            line=4,
            column=83,
            expected_fix=dedent("""\
                             from pyspark.sql import SparkSession, functions as F
                             spark = SparkSession.builder.getOrCreate()
                             clicks = spark.readStream.format("kafka").load()
                             counts = clicks.withWatermark("ts", "1 hour").groupBy(F.window("ts", "5 minutes")).count()
                             counts.writeStream.format("console").outputMode("update").start()
                             """),
        ),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        for problem in stream_state_problems(ctx):
            if not problem.without_event_time:
                yield self.finding(ctx, problem.span, problem.message, severity=problem.severity, fix=problem.fix)
