"""The SPX204 fix for a streaming deduplication whose key holds no event time, when the rows carry
one timestamp column named like an event time (typed by a DDL schema in the file).

A whole-row deduplication has that column in its key already: a watermark on it lets Spark forget
rows older than the delay. A deduplication on an id gets `dropDuplicatesWithinWatermark`, which
keeps each id only until the watermark passes its event time plus the delay: a copy that arrives
within the delay is still dropped, one later than that is kept. Spark 3.5 and later.
"""

from __future__ import annotations

from functools import partial

import libcst as cst

from sparkpar_lint.fixes.chain import Rewrite, insert_before
from sparkpar_lint.fixes.edits import string
from sparkpar_lint.fixes.model import UNSAFE, Fix
from sparkpar_lint.fixes.stream_join import EVENT_TIME_NAME
from sparkpar_lint.fixes.tie_breaker import column_types
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode

_DEDUPS = ("dropDuplicates", "drop_duplicates", "distinct")


def dedup_watermark_fix(graph: StageGraph, node: StageNode, delay: str) -> Fix | None:
    if node.method not in _DEDUPS or node.call is None:
        return None
    rows = graph.input_of(node)
    types = column_types(graph, rows) if rows is not None else None
    times = [c for c, t in (types or {}).items() if t == "timestamp"]
    if len(times) != 1 or not EVENT_TIME_NAME.search(times[0]):
        return None
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


def _within_watermark(watermark: Rewrite, call: cst.Call) -> cst.Call:
    call = watermark(call)
    return call.with_changes(func=call.func.with_changes(attr=cst.Name("dropDuplicatesWithinWatermark")))
