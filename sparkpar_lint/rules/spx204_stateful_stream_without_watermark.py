"""SPX204 stateful-stream-without-watermark: streaming state with no event-time pulse upstream."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from textwrap import dedent

import libcst as cst
import libcst.matchers as m

from sparkpar_lint.edits.chain import insert_before, receiver_of
from sparkpar_lint.edits.code import column_name, string
from sparkpar_lint.edits.model import UNSAFE, Fix
from sparkpar_lint.graph.key_space import (
    ENTITY,
    EVENT_TIME,
    LABEL,
    UNKNOWN,
    KeySpace,
    bounded_by_derivation,
    free_text,
    key_space,
)
from sparkpar_lint.graph.processors import expires_state, processor_class
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode
from sparkpar_lint.model import Finding, NoFix, Severity, Span
from sparkpar_lint.rules.base import Invalid, Rule, RuleContext, Valid
from sparkpar_lint.rules.fixers.console_sort import SORTS, sort_into_foreach_batch, writer_calls
from sparkpar_lint.rules.fixers.stream_dedup import dedup_watermark_fix
from sparkpar_lint.rules.fixers.stream_join import EVENT_TIME_NAME, join_watermark_fix


def streaming_inputs(graph: StageGraph, node: StageNode) -> list[StageNode]:
    return [graph.node(i) for i in node.inputs if graph.node(i).streaming]


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


@dataclass(frozen=True)
class StateProblem:
    """Streaming state that nothing lets Spark drop. `without_event_time`: no event time is in the
    state's key (or, for a join, in its condition), so no watermark could drop it either (SPX206's);
    otherwise a watermark would (SPX204's)."""

    span: Span
    message: str
    severity: Severity | None
    fix: Fix | NoFix | None
    without_event_time: bool


def stream_state_problems(ctx: RuleContext) -> Iterator[StateProblem]:
    graph = ctx.graph
    delay = ctx.settings.watermark_delay
    for node in graph.nodes:
        if node.spec is None or not node.spec.streaming_stateful or not node.streaming:
            continue
        inputs = streaming_inputs(graph, node)
        if node.spec.data_args:
            # A join keeps state only between two streams, and needs a pulse from each.
            if len(inputs) < 2:
                continue
            bounded = _join_time_range(graph, node)
            watermarked = all(i.has_watermark_upstream for i in inputs)
            if bounded is False:
                yield StateProblem(node.span, _unbounded_join_message(node, watermarked), None, _EQUALITY_JOIN, True)
            elif not watermarked:
                yield StateProblem(node.span, _join_message(node), None, _join_fix(graph, node, bounded, delay), False)
            continue
        grouping = graph.input_of(node) if node.receiver == "GroupedData" else node
        if _processor_expires_state(graph, node):
            continue
        space = _state_key_space(graph, node, grouping)
        # A deduplication or a state function can be bounded by a watermark whatever its key
        # (`dropDuplicatesWithinWatermark`, an event-time timeout); an aggregation only through one.
        by_watermark = (
            space.window
            or space.kind == EVENT_TIME
            or node.method in _DEDUPLICATIONS
            or node.spec.function_role in ("stateful-group", "stateful-processor")
        )
        if space.kind == LABEL:
            continue  # one state row per label value: bounded, and no watermark could help
        complete = _complete_mode(graph, node)
        if node.has_watermark_upstream and by_watermark:
            if complete:
                message = _COMPLETE_WITH_WATERMARK.format(method=node.method)
                yield StateProblem(node.span, message, None, _watermarked_complete_fix(graph, node), False)
            elif (event_time := _watermark_outside_dedup_key(graph, node)) is not None:
                message = _DEDUP_KEY_WITHOUT_WATERMARK.format(method=node.method, column=event_time)
                yield StateProblem(node.span, message, None, None, False)
            continue
        if complete and not space.grows and not _keeps_every_row(node):
            continue  # complete mode says the result table is small; nothing says otherwise
        severity = Severity.WARNING if space.grows or _keeps_every_row(node) else Severity.INFO
        if not by_watermark:
            # A watermark upstream changes nothing here: none of the key is event time.
            yield StateProblem(node.span, _keyless_message(node, space, complete), severity, _KEYLESS, True)
            continue
        fix = _complete_console_fix(graph, node, delay) if complete else _fix(graph, node, delay)
        yield StateProblem(node.span, _message(node, space, complete), severity, fix, False)


_DEDUPLICATIONS = ("dropDuplicates", "drop_duplicates", "distinct", "dropDuplicatesWithinWatermark")
_KEYLESS = NoFix(
    "no event time is in the state's key: a watermark would drop none of it, and a window, a TTL or "
    "update mode would change the answer, a choice only the author can make"
)


def _state_key_space(graph: StageGraph, node: StageNode, grouping: StageNode | None) -> KeySpace:
    if grouping is None:
        return KeySpace(UNKNOWN)
    window = next(
        (
            c
            for c in grouping.columns.calls
            if c.spec is not None and c.spec.time_window and c.call is not None and c.call.args
        ),
        None,
    )
    window_column = column_name(window.call.args[0].value) if window is not None else None
    if window is not None and window_column is None:
        window_column = "the event time"
    keys = tuple(k for k in grouping.keys if not bounded_by_derivation(graph, grouping, k))
    if window_column is None and grouping.keys and not keys:
        return KeySpace(LABEL, grouping.keys[0])
    space = key_space(keys, window_column)
    if space.kind in (UNKNOWN, LABEL):
        text = next((k for k in keys if free_text(graph, grouping, k)), None)
        if text is not None:
            return KeySpace(ENTITY, text)
    return space


_DEDUP_KEY_WITHOUT_WATERMARK = (
    "`{method}` has a watermark on `{column}` upstream, but `{column}` is not in its key: Spark drops "
    "deduplication state only through the watermarked column of the key, so every key seen is kept for "
    "ever. Add `{column}` to the key, or use `dropDuplicatesWithinWatermark`"
)


def _watermark_outside_dedup_key(graph: StageGraph, node: StageNode) -> str | None:
    """The watermarked column of a streaming `dropDuplicates(subset)` whose subset leaves it out.
    Only named columns on both sides: a key computed from the event time is not judged here."""
    if node.method not in ("dropDuplicates", "drop_duplicates") or _keeps_every_row(node) or not node.keys:
        return None
    marks = [n for n in graph.upstream(node) if n.method == "withWatermark" and n.call is not None and n.call.args]
    columns = {column_name(n.call.args[0].value) for n in marks}
    if len(columns) != 1 or None in columns:
        return None
    column = columns.pop()
    return column if column not in node.keys else None


def _keeps_every_row(node: StageNode) -> bool:
    """`dropDuplicates()`/`distinct()` on a stream: the key is the whole row."""
    no_subset = node.call is not None and not node.call.args
    return node.method in _DEDUPLICATIONS and no_subset


_COMPLETE_WITH_WATERMARK = (
    "`{method}` has a watermark upstream, but the query writes in complete mode: every result row is "
    "re-emitted each trigger, so Spark keeps all state and the watermark drops none; the state grows "
    "with every new key or window. Use update or append mode, or drop the watermark's promise"
)


def _processor_expires_state(graph: StageGraph, node: StageNode) -> bool:
    """A transformWithState processor that sets a TTL or timers bounds its own state, and so does
    an `applyInPandasWithState` function that removes a key's state (`state.remove()`)."""
    classes = [processor_class(graph, f) for f in node.functions if f.role == "stateful-processor"]
    if any(c is not None and expires_state(c) for c in classes):
        return True
    return any(f.role == "stateful-group" and _removes_state(f.node) for f in node.functions)


def _removes_state(function) -> bool:
    names = [p.name.value for p in function.params.params]
    if not names:
        return False
    state = names[-1]
    for call in m.findall(function, m.Call(func=m.Attribute(attr=m.Name("remove")))):
        if isinstance(call.func.value, cst.Name) and call.func.value.value == state:
            return True
    return False


def _complete_mode(graph: StageGraph, node: StageNode) -> bool:
    """The query writes in complete mode: all state is kept by design, a watermark drops none."""
    for later in graph.downstream(node):
        if later.spec is None or not later.spec.sink or later.call is None:
            continue
        texts = [*later.keywords.values()]
        call = later.call
        # The writer's settings sit on the receiver chain: `.writeStream.outputMode("complete").start()`.
        while isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute):
            if call.func.attr.value == "outputMode" and call.args:
                texts.append(cst.Module([]).code_for_node(call.args[0].value))
            receiver = call.func.value
            while isinstance(receiver, cst.Attribute):
                receiver = receiver.value
            call = receiver
        if any(t.strip("\"'").lower() == "complete" for t in texts):
            return True
    return False


_EQUALITY_JOIN = NoFix(
    "the join matches on equalities alone: a time range between the sides' event times would change "
    "which on-time pairs match, a rule only the author can set"
)


def _join_fix(graph: StageGraph, node: StageNode, bounded: bool | None, delay: str) -> Fix | NoFix:
    """Watermarks for the sides that lack one, when the condition already bounds the event times."""
    condition = _join_condition(graph, node)
    if bounded is None or condition is None or len(node.inputs) != 2:
        return NoFix(
            "the join's condition is built elsewhere (a helper, a parameter, or a name bound more than once), "
            "so its time range is unknown"
        )
    return join_watermark_fix(graph, node, condition, delay)


def _unbounded_join_message(node: StageNode, watermarked: bool) -> str:
    head = f"streaming `{node.method}` of two {'watermarked ' if watermarked else ''}streams on an equality alone"
    watermarks = "" if watermarked else ", with `withWatermark` on both streams"
    return (
        f"{head}: with no event-time range in the condition nothing says when a buffered row can no "
        "longer match, so Spark keeps both sides' rows for the life of the query, watermark or not. "
        "Add a time-range condition (`right.ts BETWEEN left.ts AND left.ts + INTERVAL 1 HOUR`) or join "
        f"on an event-time window{watermarks}"
    )


# A condition that bounds how far apart matching rows' times may be.
_RANGE_TEXT = re.compile(r"<|>|\bbetween\b|\binterval\b|\bwindow\b", re.IGNORECASE)


def _join_time_range(graph: StageGraph, node: StageNode) -> bool | None:
    """Whether the join condition bounds the two sides' event times: False for column names or
    equalities only, True for a comparison, `between`, an interval or a window, None when the
    condition is built elsewhere (a helper, a parameter, a name bound more than once)."""
    condition = _join_condition(graph, node)
    if condition is None:
        return None
    bounded = _bounds_time(condition)
    if bounded is True:
        return True
    # A part held in a name, `(orders.id == payments.id) & within_a_day`: read where it is bound.
    parts = [
        _held_by(graph, operand, node.call)
        for operation in m.findall(condition, m.BinaryOperation())
        for operand in (operation.left, operation.right)
        if isinstance(operand, cst.Name)
    ]
    if None in parts:
        return None
    return True if any(_bounds_time(part) for part in parts) else bounded


def _join_condition(graph: StageGraph, node: StageNode) -> cst.BaseExpression | None:
    """The join's one condition argument (second positional or `on=`), or the expression a name
    there holds, or None."""
    call = node.call
    if call is None:
        return None
    conditions = [a.value for a in call.args[1:2] if a.keyword is None]
    conditions += [a.value for a in call.args if a.keyword is not None and a.keyword.value == "on"]
    if len(conditions) != 1:
        return None
    condition = conditions[0]
    return _held_by(graph, condition, call) if isinstance(condition, cst.Name) else condition


def _held_by(graph: StageGraph, name: cst.Name, call: cst.Call) -> cst.BaseExpression | None:
    """The value of `name = <expr>` when that is the name's only binding in the function (or module
    level) that holds `call`, and comes before it."""
    scope = _enclosing_def(graph, call)
    bindings = [
        n
        for kind in (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.For, cst.NamedExpr, cst.Param)
        for n in graph.nodes_of(kind)
        if name.value in _bound_names(n) and _enclosing_def(graph, n) is scope
    ]
    if len(bindings) != 1 or not isinstance(bindings[0], cst.Assign) or len(bindings[0].targets) != 1:
        return None
    if graph.positions[bindings[0]].end.line >= graph.positions[call].start.line:
        return None
    return bindings[0].value


def _bound_names(node: cst.CSTNode) -> set[str]:
    if isinstance(node, cst.Param):
        return {node.name.value}
    if isinstance(node, cst.Assign):
        targets = [t.target for t in node.targets]
    elif isinstance(node, (cst.For, cst.NamedExpr, cst.AnnAssign, cst.AugAssign)):
        targets = [node.target]
    else:
        return set()
    return {n.value for t in targets for n in m.findall(t, m.Name())}


def _enclosing_def(graph: StageGraph, node: cst.CSTNode) -> cst.CSTNode | None:
    """The innermost `def` or lambda around `node` (a parameter belongs to its own), None at module level."""
    where = graph.positions[node]
    holders = [
        d
        for d in [*graph.nodes_of(cst.FunctionDef), *graph.nodes_of(cst.Lambda)]
        if d is not node
        and (graph.positions[d].start.line, graph.positions[d].start.column) <= (where.start.line, where.start.column)
        and (graph.positions[d].end.line, graph.positions[d].end.column) >= (where.end.line, where.end.column)
    ]
    return max(holders, key=lambda d: (graph.positions[d].start.line, graph.positions[d].start.column), default=None)


def _bounds_time(condition: cst.BaseExpression) -> bool | None:
    if isinstance(condition, cst.SimpleString):
        return bool(_RANGE_TEXT.search(condition.evaluated_value or ""))
    if isinstance(condition, (cst.List, cst.Tuple)):
        parts = [_bounds_time(e.value) for e in condition.elements]
        return None if None in parts else any(parts)
    if isinstance(condition, cst.Name):
        return None
    if m.findall(
        condition,
        m.Comparison(
            comparisons=[
                m.AtLeastN(
                    m.ComparisonTarget(
                        operator=m.LessThan() | m.GreaterThan() | m.LessThanEqual() | m.GreaterThanEqual()
                    ),
                    n=1,
                )
            ]
        ),
    ):
        return True
    strings = m.findall(condition, m.SimpleString())
    if any(_RANGE_TEXT.search(text.evaluated_value or "") for text in strings):
        return True
    if m.findall(condition, m.Call(func=m.Attribute(attr=m.Name("between")) | m.Name("window"))):
        return True
    names = m.findall(condition, m.Name())
    if any(isinstance(n, cst.Name) and n.value in ("window", "between") for n in names):
        return True
    comparisons = m.findall(condition, m.Comparison())
    return False if comparisons else None


def _join_message(node: StageNode) -> str:
    return (
        f"streaming `{node.method}` of two streams buffers every row of both sides, and no "
        "`withWatermark` reaches it from both sides: nothing tells it a row can no longer match, so "
        "its state grows without bound. Add `withWatermark` on both streams and a time-range "
        "condition to the join"
    )


def _message(node: StageNode, space: KeySpace, complete: bool) -> str:
    """SPX204's: state a watermark would let Spark drop."""
    head = f"streaming `{node.method}` keeps state across micro-batches with no `withWatermark` upstream"
    if _keeps_every_row(node):
        why = ": it remembers every row it has ever seen, so its state grows with the stream"
    elif space.window:
        why = (
            f": it keeps one state row per `{space.column}` window and no window ever closes, so state "
            "grows with every new window (and append-mode output is never emitted)"
        )
    elif space.kind == EVENT_TIME:
        why = f": it keeps one state row per `{space.column}` value, a time that keeps advancing, so state grows without bound"
    else:
        why = f": it keeps one state row per {_key_text(space)} value for the life of the query{_growth(space)}"
    if complete:
        return (
            head
            + why
            + "; complete output mode keeps every group by design and a watermark drops none: use update mode with an event-time window and a watermark if the state must stay bounded"
        )
    if _keeps_every_row(node):
        return (
            head
            + why
            + (
                ". Add `withWatermark(event_time, delay)` upstream: the event time is part of every row, so "
                "the watermark lets Spark forget rows older than the delay"
            )
        )
    if space.kind == EVENT_TIME:
        column = f'"{space.column}"' if space.column != "the event time" else "event_time"
        return head + why + f". Add `withWatermark({column}, delay)` upstream"
    if node.method in _DEDUPLICATIONS:
        return (
            head + why + ". Add `withWatermark(event_time, delay)` upstream and use "
            "`dropDuplicatesWithinWatermark`: a key is then forgotten once the watermark passes its event "
            "time plus the delay"
        )
    return (
        head + why + ". Add `withWatermark(event_time, delay)` upstream and an event-time timeout, or "
        "remove a key's state when it is done (`state.remove()`)"
    )


def _keyless_message(node: StageNode, space: KeySpace, complete: bool) -> str:
    """SPX206's: state keyed by no event time, which no watermark can drop."""
    head = (
        f"streaming `{node.method}` keeps one state row per {_key_text(space)} value for the life of the "
        f"query{_growth(space)}. No event time is in the key, so no watermark can drop any of it"
    )
    if complete:
        return (
            head + "; complete output mode keeps every group by design: if the state must stay bounded, "
            "group by an event-time `window(...)` too, with a watermark and update mode"
        )
    return (
        head + ": add an event-time `window(...)` to the key with a watermark, or expire keys yourself "
        "(`transformWithState` with a TTL)"
    )


def _key_text(space: KeySpace) -> str:
    return f"`{space.column}`" if space.column else "key"


def _growth(space: KeySpace) -> str:
    if space.kind == ENTITY:
        return ", and that key space keeps growing"
    return f"; that is fine if {_key_text(space)} has few values, and grows without bound if not"


def _fix(graph: StageGraph, node: StageNode, delay: str) -> Fix | NoFix:
    """`withWatermark(event_time, delay)` right before the stateful stage.

    Only where the event time is part of the state's key (a `window(...)` column, or a grouping
    or deduplication column named like a time), since only then does the watermark let Spark
    drop old state. Right before the stage, not after the source: the event-time column often
    comes from a `select` in between.
    """
    if node.spec.function_role in ("stateful-group", "stateful-processor"):
        return NoFix("the state function decides when a key's state expires (a timeout, a TTL or `state.remove()`)")
    grouping = graph.input_of(node) if node.receiver == "GroupedData" else node
    if grouping is None or grouping.call is None or receiver_of(grouping.call) is None:
        return NoFix("the stateful stage is not a method call on a frame to put a watermark before")
    event_time = _event_time(grouping)
    if event_time is None:
        return dedup_watermark_fix(graph, node, delay) or _no_event_time(node, grouping)
    watermark = insert_before("withWatermark", [string(event_time), string(delay)])
    description = f'`withWatermark("{event_time}", "{delay}")` before streaming `{node.method}`'
    return Fix(UNSAFE, description, ((grouping.call, watermark),))


def _no_event_time(node: StageNode, grouping: StageNode) -> NoFix:
    """Why a state with no event-time column in its key gets no watermark."""
    keys = ", ".join(grouping.keys)
    if _keeps_every_row(node):
        return NoFix(
            "a whole-row deduplication whose rows have no single timestamp column named like an event time "
            "in a schema of this file to put a watermark on"
        )
    if node.method in _DEDUPLICATIONS:
        return NoFix(
            f"the deduplication key ({keys or 'its subset'}) has no column named like an event time: only "
            "`dropDuplicatesWithinWatermark` over a timestamp column of the rows could drop its state, "
            "and no DDL schema in this file gives the rows a single `timestamp` one named like an event time "
            "(a string time needs parsing, in a format only the author knows), nor does the chain stamp "
            "their arrival (`withColumn(name, current_timestamp())`)"
        )
    return NoFix(f"the state's key ({keys or 'its grouping'}) has no plain event-time column to put a watermark on")


# Stages that may sit between the aggregation and a console sink switched to update mode: each is
# allowed in update mode (a sort or a limit after an aggregation is allowed in complete mode only).
_UPDATE_MODE_STAGES = frozenset(
    {
        *("writeStream", "select", "selectExpr", "withColumn", "withColumns", "withColumnRenamed"),
        *("filter", "where", "drop", "alias", "toDF"),
    }
)


def _complete_console_fix(graph: StageGraph, node: StageNode, delay: str) -> Fix | NoFix:
    """An event-time window aggregation shown on the console (or in a memory table nothing reads) in
    complete mode: the watermark fix plus `outputMode("update")`; else why not, for `--show-unfixed`.

    In complete mode a watermark drops no state, so it must come with update mode; on the console
    that only changes which rows each batch prints (the windows that changed, not all of them), and
    a memory table no code reads has nobody to see a difference. A read memory table, a table, Kafka
    or `foreachBatch` sink's readers would see a different result, so those keep the finding and get
    no fix.
    """
    if node.spec.data_args or not _window_column(graph, node):
        return NoFix("complete mode with no event-time window in the key: no watermark can drop this state")
    watermark = _fix(graph, node, delay)
    if isinstance(watermark, NoFix):
        return NoFix("the window's time column is not a plain column to put a watermark on")
    update = _console_update_mode(graph, node)
    if isinstance(update, NoFix):
        return update
    return Fix(
        UNSAFE,
        watermark.description
        + ', and `outputMode("update")` for the console or unread memory sink (complete mode keeps every window)',
        (*watermark.replacements, *update),
    )


def _watermarked_complete_fix(graph: StageGraph, node: StageNode) -> Fix | NoFix:
    """A watermarked window aggregation shown on the console (or an unread memory table) in complete
    mode: `outputMode("update")`, so the watermark it already has can drop closed windows."""
    if not _window_column(graph, node):
        return NoFix("complete mode with no event-time window in the key: update mode would not bound this state")
    grouping = graph.input_of(node) if node.receiver == "GroupedData" else node
    watermarked = {
        column_name(n.call.args[0].value)
        for n in graph.upstream(grouping)
        if n.method == "withWatermark" and n.call is not None and n.call.args
    }
    if grouping is None or _event_time(grouping) not in watermarked:
        return NoFix("complete mode, and no watermark on the window's column in this chain to drop windows with")
    update = _console_update_mode(graph, node)
    if isinstance(update, NoFix):
        return update
    return Fix(
        UNSAFE,
        '`outputMode("update")` for the console or unread memory sink, so the watermark can drop closed windows',
        update,
    )


def _console_update_mode(graph: StageGraph, node: StageNode) -> tuple[tuple[cst.CSTNode, cst.CSTNode], ...] | NoFix:
    """Each complete-mode sink's literal `outputMode("complete")` and its `"update"` replacement,
    when every such sink is the console or an unread memory table and nothing after the aggregation
    needs complete mode; else why not. Each `start()` is a query of its own, so a sink in another mode is left as it is."""
    later = list(graph.downstream(node))
    sinks = [n for n in later if n.spec is not None and n.spec.sink]
    blocking = [n for n in later if n not in sinks and n.method not in _UPDATE_MODE_STAGES]
    sort = blocking[0] if len(blocking) == 1 and blocking[0].method in SORTS and blocking[0].call else None
    if blocking and sort is None:
        return NoFix(
            f"`{blocking[0].method}` after the aggregation is allowed in complete mode only, which keeps every "
            "window; update mode (which a watermark needs) would need that step moved into a `foreachBatch` "
            "function, a rewrite left to the author"
        )
    replacements: list = []
    for sink in sinks:
        settings = _writer_settings(sink.call)
        mode, sink_format = settings.get("outputMode"), settings.get("format")
        if "outputMode" in settings and not isinstance(mode, cst.SimpleString):
            return NoFix("an output mode not written as a literal `outputMode(...)` on a sink's chain")
        if mode is None or (mode.evaluated_value or "").lower() != "complete":
            continue
        if not isinstance(sink_format, cst.SimpleString) or sink_format.evaluated_value not in ("console", "memory"):
            return NoFix(
                "complete mode into a sink whose readers get the whole result table each batch; update mode "
                "(which a watermark needs to drop state) would change what they see"
            )
        if sort is not None:
            if sink_format.evaluated_value != "console" or graph.module is None:
                return NoFix(
                    f"`{sort.method}` after the aggregation is allowed in complete mode only, and only a console "
                    "sink's sort can move into a `foreachBatch` that shows each batch"
                )
            moved = sort_into_foreach_batch(graph.module, sort.call, writer_calls(sink.call))
            if isinstance(moved, NoFix):
                return moved
            replacements += moved
        if sink_format.evaluated_value == "memory":
            unread = _unread_memory_table(graph, settings.get("queryName"))
            if isinstance(unread, NoFix):
                return unread
        quote = mode.value.index(mode.evaluated_value)  # keep the string's prefix and quotes
        replacements.append(
            (mode, mode.with_changes(value=mode.value[:quote] + "update" + mode.value[quote + len("complete") :]))
        )
    if not replacements:
        return NoFix("complete mode not set as a literal `outputMode(...)` on a sink's chain in this module")
    return tuple(replacements)


def _unread_memory_table(graph: StageGraph, name: cst.BaseExpression | None) -> None | NoFix:
    """None when no string of the module but the `queryName(...)` itself names the memory table
    (no `spark.table("t")`, no `FROM t` in SQL text): no reader here sees the whole table, so update
    mode changes only rows nobody reads. Else why not."""
    if not isinstance(name, cst.SimpleString) or not isinstance(name.evaluated_value, str):
        return NoFix("complete mode into a memory table whose name is not a literal `queryName(...)`")
    table = name.evaluated_value
    read = re.compile(rf"^{re.escape(table)}$|\b(from|join|table)\s+`?{re.escape(table)}\b", re.IGNORECASE)
    texts = [s.evaluated_value for s in graph.nodes_of(cst.SimpleString) if s is not name]
    texts += [t.value for t in graph.nodes_of(cst.FormattedStringText)]
    if any(isinstance(t, str) and read.search(t) for t in texts):
        return NoFix(
            f"complete mode into the memory table `{table}`, which this module reads whole: update mode "
            "(which a watermark needs to drop state) would change what it reads"
        )
    return None


def _window_column(graph: StageGraph, node: StageNode) -> bool:
    grouping = graph.input_of(node) if node.receiver == "GroupedData" else node
    return grouping is not None and any(c.spec is not None and c.spec.time_window for c in grouping.columns.calls)


def _writer_settings(call: cst.Call | None) -> dict[str, cst.BaseExpression]:
    """The single positional argument of each setter on a `writeStream` chain, by method name."""
    return {
        name: setter.args[0].value
        for name, setter in writer_calls(call).items()
        if len(setter.args) == 1 and setter.args[0].keyword is None
    }


def _event_time(grouping: StageNode) -> str | None:
    for call in grouping.columns.calls:
        if call.function == "window" and call.call is not None and call.call.args:
            return _time_column(call.call.args[0].value, _chain_root(grouping.call))
    return next((k for k in grouping.keys if EVENT_TIME_NAME.search(k)), None)


def _time_column(expr: cst.BaseExpression, frame: str | None) -> str | None:
    """The column a window is over: a name, `col("x")`, or `frame.x` / `frame["x"]` of the very frame
    the chain starts from (another name's attribute may be a setting holding a column name)."""
    if isinstance(expr, (cst.Attribute, cst.Subscript)):
        if not isinstance(expr.value, cst.Name) or frame is None or expr.value.value != frame:
            return None
        if isinstance(expr, cst.Attribute):
            return expr.attr.value
        index = expr.slice[0].slice if len(expr.slice) == 1 else None
        return column_name(index.value) if isinstance(index, cst.Index) else None
    return column_name(expr)


def _chain_root(call: cst.BaseExpression | None) -> str | None:
    """`events` of `events.withColumn(...).groupBy(...)`."""
    while isinstance(call, (cst.Call, cst.Attribute)):
        call = call.func if isinstance(call, cst.Call) else call.value
    return call.value if isinstance(call, cst.Name) else None
