"""The SPX204 fix for a stream-stream join whose condition already bounds the sides' event times.

Such a join keeps both sides' rows until a watermark says they can no longer match; the time range
is the author's rule of which rows belong together, the watermark only how late a row may arrive.
So the fix adds the missing watermarks (the configured delay) and nothing else: a join matched on an
equality alone gets no fix, since a time range would change which on-time pairs match.
"""

from __future__ import annotations

import re
from functools import partial

import libcst as cst
import libcst.matchers as m

from sparkpar_lint.edits.chain import method_call
from sparkpar_lint.edits.code import column_name, string
from sparkpar_lint.edits.model import UNSAFE, Fix
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode
from sparkpar_lint.model import NoFix

# A column named like an event time: `ts`, `*_ts`, `*time*`.
EVENT_TIME_NAME = re.compile(r"(^|_)ts$|time", re.IGNORECASE)
_INTERVAL = re.compile(r"\binterval\b", re.IGNORECASE)


def join_watermark_fix(graph: StageGraph, node: StageNode, condition: cst.BaseExpression, delay: str) -> Fix | NoFix:
    """`withWatermark(<side's time column>, delay)` on each side of `node` that has none, when the
    condition's time range (an `INTERVAL`, so the columns are timestamps) names exactly one time
    column made on that side; else why not."""
    call = node.call
    if call is None or not isinstance(call.func, cst.Attribute) or not call.args or call.args[0].keyword:
        return NoFix("the join is not written as `left.join(right, condition)`")
    if not any(_INTERVAL.search(text) for text in _texts(condition)):
        return NoFix("the join's time range has no `INTERVAL`, so nothing shows its columns are timestamps")
    names = _time_names(condition)
    left, right = (graph.node(i) for i in node.inputs[:2])
    columns: list[str | None] = []
    for side, other in ((left, right), (right, left)):
        if side.has_watermark_upstream:
            columns.append(None)
            continue
        mine = [n for n in names if n in _made_on(graph, side) and n not in _made_on(graph, other)]
        if len(mine) != 1:
            return NoFix("the join's time range names no single event-time column made on each side to watermark")
        columns.append(mine[0])
    sides = " and ".join(
        f'`withWatermark("{c}", "{delay}")` on the {where} side' for c, where in zip(columns, ("left", "right")) if c
    )
    return Fix(
        UNSAFE,
        f"{sides} of the stream-stream join (its time range already says which rows can match)",
        ((call, partial(_watermark_sides, columns[0], columns[1], delay)),),
    )


def _watermark_sides(left: str | None, right: str | None, delay: str, call: cst.Call) -> cst.Call:
    def watermarked(frame: cst.BaseExpression, column: str) -> cst.Call:
        return method_call(frame, "withWatermark", [string(column), string(delay)])

    if right is not None:
        first = call.args[0]
        call = call.with_changes(args=[first.with_changes(value=watermarked(first.value, right)), *call.args[1:]])
    if left is not None and isinstance(call.func, cst.Attribute):  # join_watermark_fix checked it is
        call = call.with_changes(func=call.func.with_changes(value=watermarked(call.func.value, left)))
    return call


def _time_names(condition: cst.BaseExpression) -> list[str]:
    """Time-named columns the condition mentions: words of its strings, `frame.x`, `frame["x"]`, `col("x")`."""
    names: list[str | None] = []
    for text in _texts(condition):
        names += re.findall(r"[A-Za-z_]\w*", text)
    names += [a.attr.value for a in m.findall(condition, m.Attribute()) if isinstance(a, cst.Attribute)]
    names += [column_name(c) for c in m.findall(condition, m.Call()) if isinstance(c, cst.Call)]
    return list(dict.fromkeys(n for n in names if n and EVENT_TIME_NAME.search(n)))


def _made_on(graph: StageGraph, side: StageNode) -> set[str]:
    """The words of every string on the side's own chain (a rename, an alias, the source's schema)."""
    words: set[str] = set()
    for stage in (side, *graph.upstream(side)):
        for text in _texts(stage.call) if stage.call is not None else ():
            words.update(re.findall(r"\w+", text))
    return words


def _texts(node: cst.CSTNode) -> list[str]:
    """The values of the string literals in `node` (a bytes literal reads as empty)."""
    found = [s.evaluated_value for s in m.findall(node, m.SimpleString()) if isinstance(s, cst.SimpleString)]
    return [value if isinstance(value, str) else "" for value in found]
