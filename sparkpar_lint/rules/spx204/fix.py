"""The fixes SPX204's findings carry: `withWatermark` before the stateful stage (or on both sides
of a join), with `outputMode("update")` for a console or unread memory sink in complete mode;
else why not."""

from __future__ import annotations

import re

import libcst as cst

from sparkpar_lint.edits.chain import insert_before, receiver_of
from sparkpar_lint.edits.code import column_name, string
from sparkpar_lint.edits.model import UNSAFE, Fix, Replacement
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode
from sparkpar_lint.model import NoFix
from sparkpar_lint.rules.fixers.console_sort import SORTS, sort_into_foreach_batch, writer_calls
from sparkpar_lint.rules.fixers.stream_dedup import dedup_watermark_fix
from sparkpar_lint.rules.fixers.stream_join import EVENT_TIME_NAME, join_watermark_fix
from sparkpar_lint.rules.spx204.join_range import join_condition
from sparkpar_lint.rules.spx204.state import DEDUPLICATIONS, keeps_every_row

KEYLESS = NoFix(
    "no event time is in the state's key: a watermark would drop none of it, and a window, a TTL or "
    "update mode would change the answer, a choice only the author can make"
)


EQUALITY_JOIN = NoFix(
    "the join matches on equalities alone: a time range between the sides' event times would change "
    "which on-time pairs match, a rule only the author can set"
)


def join_fix(graph: StageGraph, node: StageNode, bounded: bool | None, delay: str) -> Fix | NoFix:
    """Watermarks for the sides that lack one, when the condition already bounds the event times."""
    condition = join_condition(graph, node)
    if bounded is None or condition is None or len(node.inputs) != 2:
        return NoFix(
            "the join's condition is built elsewhere (a helper, a parameter, or a name bound more than once), "
            "so its time range is unknown"
        )
    return join_watermark_fix(graph, node, condition, delay)


def watermark_fix(graph: StageGraph, node: StageNode, delay: str) -> Fix | NoFix:
    """`withWatermark(event_time, delay)` right before the stateful stage.

    Only where the event time is part of the state's key (a `window(...)` column, or a grouping
    or deduplication column named like a time), since only then does the watermark let Spark
    drop old state. Right before the stage, not after the source: the event-time column often
    comes from a `select` in between.
    """
    if node.spec is not None and node.spec.function_role in ("stateful-group", "stateful-processor"):
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
    if keeps_every_row(node):
        return NoFix(
            "a whole-row deduplication whose rows have no single timestamp column named like an event time "
            "in a schema of this file to put a watermark on"
        )
    if node.method in DEDUPLICATIONS:
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


def complete_console_fix(graph: StageGraph, node: StageNode, delay: str) -> Fix | NoFix:
    """An event-time window aggregation shown on the console (or in a memory table nothing reads) in
    complete mode: the watermark fix plus `outputMode("update")`; else why not, for `--show-unfixed`.

    In complete mode a watermark drops no state, so it must come with update mode; on the console
    that only changes which rows each batch prints (the windows that changed, not all of them), and
    a memory table no code reads has nobody to see a difference. A read memory table, a table, Kafka
    or `foreachBatch` sink's readers would see a different result, so those keep the finding and get
    no fix.
    """
    if (node.spec is not None and node.spec.data_args) or not _window_column(graph, node):
        return NoFix("complete mode with no event-time window in the key: no watermark can drop this state")
    watermark = watermark_fix(graph, node, delay)
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


def watermarked_complete_fix(graph: StageGraph, node: StageNode) -> Fix | NoFix:
    """A watermarked window aggregation shown on the console (or an unread memory table) in complete
    mode: `outputMode("update")`, so the watermark it already has can drop closed windows."""
    if not _window_column(graph, node):
        return NoFix("complete mode with no event-time window in the key: update mode would not bound this state")
    grouping = graph.input_of(node) if node.receiver == "GroupedData" else node
    if grouping is None:  # `_window_column` found the grouping
        return NoFix("complete mode, and no watermark on the window's column in this chain to drop windows with")
    watermarked = {
        column_name(n.call.args[0].value)
        for n in graph.upstream(grouping)
        if n.method == "withWatermark" and n.call is not None and n.call.args
    }
    if _event_time(grouping) not in watermarked:
        return NoFix("complete mode, and no watermark on the window's column in this chain to drop windows with")
    update = _console_update_mode(graph, node)
    if isinstance(update, NoFix):
        return update
    return Fix(
        UNSAFE,
        '`outputMode("update")` for the console or unread memory sink, so the watermark can drop closed windows',
        update,
    )


def _console_update_mode(graph: StageGraph, node: StageNode) -> tuple[tuple[cst.CSTNode, Replacement], ...] | NoFix:
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
    replacements: list[tuple[cst.CSTNode, Replacement]] = []
    for sink in sinks:
        settings = _writer_settings(sink.call)
        mode, sink_format = settings.get("outputMode"), settings.get("format")
        if mode is not None and not isinstance(mode, cst.SimpleString):
            return NoFix("an output mode not written as a literal `outputMode(...)` on a sink's chain")
        written = mode.evaluated_value if mode is not None else None
        if mode is None or not isinstance(written, str) or written.lower() != "complete":
            continue
        if not isinstance(sink_format, cst.SimpleString) or sink_format.evaluated_value not in ("console", "memory"):
            return NoFix(
                "complete mode into a sink whose readers get the whole result table each batch; update mode "
                "(which a watermark needs to drop state) would change what they see"
            )
        if sort is not None:
            if sink_format.evaluated_value != "console" or graph.module is None or sort.call is None:
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
        quote = mode.value.index(written)  # keep the string's prefix and quotes
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
    texts = [
        s.evaluated_value for s in graph.nodes_of(cst.SimpleString) if isinstance(s, cst.SimpleString) and s is not name
    ]
    texts += [t.value for t in graph.nodes_of(cst.FormattedStringText) if isinstance(t, cst.FormattedStringText)]
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
