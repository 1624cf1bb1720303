"""The text of SPX204's and SPX206's findings: what state grows, and what would let Spark drop it."""

from __future__ import annotations

from sparkpar_lint.graph.key_space import (
    ENTITY,
    EVENT_TIME,
    KeySpace,
)
from sparkpar_lint.graph.stage_graph import StageNode
from sparkpar_lint.rules.spx204.state import DEDUPLICATIONS, keeps_every_row

DEDUP_KEY_WITHOUT_WATERMARK = (
    "`{method}` has a watermark on `{column}` upstream, but `{column}` is not in its key: Spark drops "
    "deduplication state only through the watermarked column of the key, so every key seen is kept for "
    "ever. Add `{column}` to the key, or use `dropDuplicatesWithinWatermark`"
)


COMPLETE_WITH_WATERMARK = (
    "`{method}` has a watermark upstream, but the query writes in complete mode: every result row is "
    "re-emitted each trigger, so Spark keeps all state and the watermark drops none; the state grows "
    "with every new key or window. Use update or append mode, or drop the watermark's promise"
)


def unbounded_join_message(node: StageNode, watermarked: bool) -> str:
    head = f"streaming `{node.method}` of two {'watermarked ' if watermarked else ''}streams on an equality alone"
    watermarks = "" if watermarked else ", with `withWatermark` on both streams"
    return (
        f"{head}: with no event-time range in the condition nothing says when a buffered row can no "
        "longer match, so Spark keeps both sides' rows for the life of the query, watermark or not. "
        "Add a time-range condition (`right.ts BETWEEN left.ts AND left.ts + INTERVAL 1 HOUR`) or join "
        f"on an event-time window{watermarks}"
    )


def join_message(node: StageNode) -> str:
    return (
        f"streaming `{node.method}` of two streams buffers every row of both sides, and no "
        "`withWatermark` reaches it from both sides: nothing tells it a row can no longer match, so "
        "its state grows without bound. Add `withWatermark` on both streams and a time-range "
        "condition to the join"
    )


def watermark_message(node: StageNode, space: KeySpace, complete: bool) -> str:
    """SPX204's: state a watermark would let Spark drop."""
    head = f"streaming `{node.method}` keeps state across micro-batches with no `withWatermark` upstream"
    if keeps_every_row(node):
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
    if keeps_every_row(node):
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
    if node.method in DEDUPLICATIONS:
        return (
            head + why + ". Add `withWatermark(event_time, delay)` upstream and use "
            "`dropDuplicatesWithinWatermark`: a key is then forgotten once the watermark passes its event "
            "time plus the delay"
        )
    return (
        head + why + ". Add `withWatermark(event_time, delay)` upstream and an event-time timeout, or "
        "remove a key's state when it is done (`state.remove()`)"
    )


def keyless_message(node: StageNode, space: KeySpace, complete: bool) -> str:
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
