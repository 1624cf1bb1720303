"""What a streaming stateful stage keeps: the key space of its state, whether it keeps every row,
writes in complete mode or expires its own state."""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from sparkpar_lint.edits.code import column_name
from sparkpar_lint.graph.key_space import (
    ENTITY,
    LABEL,
    UNKNOWN,
    KeySpace,
    bounded_by_derivation,
    free_text,
    key_space,
)
from sparkpar_lint.graph.processors import expires_state, processor_class
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode

DEDUPLICATIONS = ("dropDuplicates", "drop_duplicates", "distinct", "dropDuplicatesWithinWatermark")


def state_key_space(graph: StageGraph, node: StageNode, grouping: StageNode | None) -> KeySpace:
    if grouping is None:
        return KeySpace(UNKNOWN)
    window = next(
        (
            c.call
            for c in grouping.columns.calls
            if c.spec is not None and c.spec.time_window and c.call is not None and c.call.args
        ),
        None,
    )
    window_column = column_name(window.args[0].value) if window is not None else None
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


def watermark_outside_dedup_key(graph: StageGraph, node: StageNode) -> str | None:
    """The watermarked column of a streaming `dropDuplicates(subset)` whose subset leaves it out.
    Only named columns on both sides: a key computed from the event time is not judged here."""
    if node.method not in ("dropDuplicates", "drop_duplicates") or keeps_every_row(node) or not node.keys:
        return None
    marks = [n.call for n in graph.upstream(node) if n.method == "withWatermark" and n.call is not None and n.call.args]
    columns = {column_name(call.args[0].value) for call in marks}
    if len(columns) != 1 or None in columns:
        return None
    column = columns.pop()
    return column if column not in node.keys else None


def keeps_every_row(node: StageNode) -> bool:
    """`dropDuplicates()`/`distinct()` on a stream: the key is the whole row."""
    no_subset = node.call is not None and not node.call.args
    return node.method in DEDUPLICATIONS and no_subset


def processor_expires_state(graph: StageGraph, node: StageNode) -> bool:
    """A transformWithState processor that sets a TTL or timers bounds its own state, and so does
    an `applyInPandasWithState` function that removes a key's state (`state.remove()`)."""
    classes = [processor_class(graph, f) for f in node.functions if f.role == "stateful-processor"]
    if any(c is not None and expires_state(c) for c in classes):
        return True
    return any(f.role == "stateful-group" and _removes_state(f.node) for f in node.functions)


def _removes_state(function: cst.FunctionDef | cst.Lambda) -> bool:
    names = [p.name.value for p in function.params.params]
    if not names:
        return False
    state = names[-1]
    for call in m.findall(function, m.Call(func=m.Attribute(attr=m.Name("remove")))):
        if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Attribute):
            continue
        if isinstance(call.func.value, cst.Name) and call.func.value.value == state:
            return True
    return False


def complete_mode(graph: StageGraph, node: StageNode) -> bool:
    """The query writes in complete mode: all state is kept by design, a watermark drops none."""
    for later in graph.downstream(node):
        if later.spec is None or not later.spec.sink or later.call is None:
            continue
        texts = [*later.keywords.values()]
        call: cst.BaseExpression = later.call
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
