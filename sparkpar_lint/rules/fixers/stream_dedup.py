"""The SPX204 fix for a streaming deduplication whose key holds no event time, when the rows carry
one timestamp column named like an event time (typed by a DDL schema in the file).

A whole-row deduplication has that column in its key already: a watermark on it lets Spark forget
rows older than the delay. A deduplication on an id gets `dropDuplicatesWithinWatermark`, which
keeps each id only until the watermark passes its event time plus the delay: a copy that arrives
within the delay is still dropped, one later than that is kept. Spark 3.5 and later. With no event
time, an arrival time the chain stamps (`current_timestamp()`) serves the same way.
"""

from __future__ import annotations

from functools import partial

import libcst as cst

from sparkpar_lint.edits.chain import Rewrite, insert_before
from sparkpar_lint.edits.code import column_name, string
from sparkpar_lint.edits.model import UNSAFE, Fix
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode
from sparkpar_lint.rules.fixers.stream_join import EVENT_TIME_NAME
from sparkpar_lint.rules.fixers.tie_breaker import column_types

_DEDUPS = ("dropDuplicates", "drop_duplicates", "distinct")


def dedup_watermark_fix(graph: StageGraph, node: StageNode, delay: str) -> Fix | None:
    if node.method not in _DEDUPS or node.call is None:
        return None
    rows = graph.input_of(node)
    types = column_types(graph, rows) if rows is not None else None
    times = [c for c, t in (types or {}).items() if t == "timestamp"]
    if len(times) != 1 or not EVENT_TIME_NAME.search(times[0]):
        return _arrival_fix(graph, node, node.call, rows, delay)
    watermark = insert_before("withWatermark", [string(times[0]), string(delay)])
    before = f'`withWatermark("{times[0]}", "{delay}")` before'
    if not node.call.args:
        return Fix(
            UNSAFE,
            f"{before} the whole-row `{node.method}` (the event time is part of every row)",
            ((node.call, watermark),),
        )
    return Fix(
        UNSAFE,
        f"{before} the deduplication, and `dropDuplicatesWithinWatermark` for `{node.method}` (a copy later "
        "than the delay is no longer dropped)",
        ((node.call, partial(_within_watermark, watermark)),),
    )


def _arrival_fix(graph: StageGraph, node: StageNode, call: cst.Call, rows: StageNode | None, delay: str) -> Fix | None:
    """The same fix on the rows' arrival time, for a deduplication on an id (a whole row holds its
    arrival time, so no two rows are alike)."""
    arrival = _arrival_time(graph, rows) if rows is not None and call.args else None
    if arrival is None:
        return None
    watermark = insert_before("withWatermark", [string(arrival), string(delay)])
    return Fix(
        UNSAFE,
        f'`withWatermark("{arrival}", "{delay}")` on the arrival time `{arrival}` (a `current_timestamp()` '
        f"column) and `dropDuplicatesWithinWatermark` for `{node.method}`: a copy is dropped while it comes "
        "within the delay of the first",
        ((call, partial(_within_watermark, watermark)),),
    )


# Stages between the arrival-time column and the deduplication that keep every column as it is.
_KEEPING = frozenset({"filter", "where", "alias", "hint", "withColumn"})


def _arrival_time(graph: StageGraph, rows: StageNode) -> str | None:
    """`name` of a `withColumn(name, current_timestamp())` on the deduplication's own chain that
    reaches it unchanged: each row's arrival time, a timestamp the watermark can advance on."""
    rewritten: set[str] = set()  # columns a later stage gives another value
    for stage in (rows, *graph.upstream(rows)):
        if stage.method not in _KEEPING or stage.call is None or stage.method == "withColumns":
            return None
        if stage.method != "withColumn":
            continue
        args = [a.value for a in stage.call.args if a.keyword is None]
        name = column_name(args[0]) if len(args) == 2 else None
        if name is None:
            return None
        if (
            name not in rewritten
            and isinstance(args[1], cst.Call)
            and any(
                c.call is args[1] and c.function == "current_timestamp" and not c.call.args for c in stage.columns.calls
            )
        ):
            return name
        rewritten.add(name)
    return None


def _within_watermark(watermark: Rewrite, call: cst.Call) -> cst.Call:
    call = cst.ensure_type(watermark(call), cst.Call)
    return call.with_changes(func=call.func.with_changes(attr=cst.Name("dropDuplicatesWithinWatermark")))
