"""Streaming state nothing lets Spark drop: what SPX204 (a watermark would) and SPX206 (no
watermark could) report, found in one pass."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from sparkpar_lint.edits.model import Fix
from sparkpar_lint.graph.key_space import (
    EVENT_TIME,
    LABEL,
)
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode
from sparkpar_lint.model import NoFix, Severity, Span
from sparkpar_lint.rules.base import RuleContext
from sparkpar_lint.rules.spx204.fix import (
    EQUALITY_JOIN,
    KEYLESS,
    complete_console_fix,
    join_fix,
    watermark_fix,
    watermarked_complete_fix,
)
from sparkpar_lint.rules.spx204.join_range import join_time_range
from sparkpar_lint.rules.spx204.messages import (
    COMPLETE_WITH_WATERMARK,
    DEDUP_KEY_WITHOUT_WATERMARK,
    join_message,
    keyless_message,
    unbounded_join_message,
    watermark_message,
)
from sparkpar_lint.rules.spx204.state import (
    DEDUPLICATIONS,
    complete_mode,
    keeps_every_row,
    processor_expires_state,
    state_key_space,
    watermark_outside_dedup_key,
)


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


def streaming_inputs(graph: StageGraph, node: StageNode) -> list[StageNode]:
    return [graph.node(i) for i in node.inputs if graph.node(i).streaming]


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
            bounded = join_time_range(graph, node)
            watermarked = all(i.has_watermark_upstream for i in inputs)
            if bounded is False:
                yield StateProblem(node.span, unbounded_join_message(node, watermarked), None, EQUALITY_JOIN, True)
            elif not watermarked:
                yield StateProblem(node.span, join_message(node), None, join_fix(graph, node, bounded, delay), False)
            continue
        grouping = graph.input_of(node) if node.receiver == "GroupedData" else node
        if processor_expires_state(graph, node):
            continue
        space = state_key_space(graph, node, grouping)
        # A deduplication or a state function can be bounded by a watermark whatever its key
        # (`dropDuplicatesWithinWatermark`, an event-time timeout); an aggregation only through one.
        by_watermark = (
            space.window
            or space.kind == EVENT_TIME
            or node.method in DEDUPLICATIONS
            or node.spec.function_role in ("stateful-group", "stateful-processor")
        )
        if space.kind == LABEL:
            continue  # one state row per label value: bounded, and no watermark could help
        complete = complete_mode(graph, node)
        if node.has_watermark_upstream and by_watermark:
            if complete:
                message = COMPLETE_WITH_WATERMARK.format(method=node.method)
                yield StateProblem(node.span, message, None, watermarked_complete_fix(graph, node), False)
            elif (event_time := watermark_outside_dedup_key(graph, node)) is not None:
                message = DEDUP_KEY_WITHOUT_WATERMARK.format(method=node.method, column=event_time)
                yield StateProblem(node.span, message, None, None, False)
            continue
        if complete and not space.grows and not keeps_every_row(node):
            continue  # complete mode says the result table is small; nothing says otherwise
        severity = Severity.WARNING if space.grows or keeps_every_row(node) else Severity.INFO
        if not by_watermark:
            # A watermark upstream changes nothing here: none of the key is event time.
            yield StateProblem(node.span, keyless_message(node, space, complete), severity, KEYLESS, True)
            continue
        fix = complete_console_fix(graph, node, delay) if complete else watermark_fix(graph, node, delay)
        yield StateProblem(node.span, watermark_message(node, space, complete), severity, fix, False)
