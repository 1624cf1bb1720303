"""SPX103's fixes: the function's rows sorted at its top (or, in a lambda, each read of its
frame sorted), released in event-time order on watermark pulses for a stream, or a grouped list
sorted; else why not."""

from __future__ import annotations

import re

import libcst as cst
import libcst.matchers as m

from sparkpar_lint.edits.code import column_name, positional_values, string
from sparkpar_lint.edits.function_body import (
    frame_sort,
    frame_sort_whole_row,
    frame_sorted,
    insert_at_top,
    rows_sort,
)
from sparkpar_lint.edits.model import SAFE, UNSAFE, Applicability, Fix
from sparkpar_lint.graph.order_sensitivity import FRAME, ROWS, Data, find_order_dependence
from sparkpar_lint.graph.passed_function import UserFunction
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode
from sparkpar_lint.model import NoFix

# The module's functions by name, which the order checks follow into.
_Helpers = dict[str, cst.FunctionDef]

# A collected group's values read on the driver: the sort could go in several places.
ON_DRIVER = NoFix("the values are read on the driver; where to sort them is the author's choice")


def sorted_list_fix(listed: cst.CSTNode) -> Fix | NoFix:
    """`mapValues(lambda values: list(values))` or `mapValues(list)` → the values sorted by
    `repr`: one order of their own (unsafe: one of the orders the shuffle could deliver; `repr`
    orders values of any type, `None` too)."""
    if isinstance(listed, cst.Name) and listed.value == "list":
        replacement = cst.parse_expression("lambda values: sorted(values, key=repr)")
    elif (
        isinstance(listed, cst.Lambda)
        and isinstance(listed.body, cst.Call)
        and isinstance(listed.body.func, cst.Name)
        and listed.body.func.value == "list"
    ):
        call = cst.ensure_type(cst.parse_expression("sorted(x, key=repr)"), cst.Call)
        values = call.args[0].with_changes(value=listed.body.args[0].value)
        replacement = listed.with_changes(body=call.with_changes(args=[values, call.args[1]]))
    else:
        return NoFix("the values are listed by code other than `list`, so no sort was added")
    return Fix(
        UNSAFE, "the grouped values are listed sorted by `repr`: one order of their own", ((listed, replacement),)
    )


PULSES_MODULE = "sparkpar_lint.runtime.pulses"
_SORTS = ("establishes-total", "sorts-within-partitions", "establishes-per-key")
# Column names that read as an event time or a sequence: a guess at the order the function means.
_TIME_LIKE = re.compile(r"(^|_)(ts|time|timestamp|date|datetime|seq|sequence|offset)($|_)|_at$", re.IGNORECASE)


def function_fix(
    graph: StageGraph, node: StageNode, function: UserFunction, kinds: dict[str, Data], helpers: _Helpers
) -> Fix | NoFix:
    """Sort the rows at the top of the function (batch), or release them in event-time order on
    watermark pulses (streaming `applyInPandasWithState`, unsafe); else why not."""
    if node.streaming:
        if not isinstance(function.node, cst.FunctionDef):
            return NoFix("a lambda over a stream's groups: no function body to release rows in event-time order in")
        return _pulse_fix(graph, node, function)
    columns, safety, source = _order_columns(graph, node, function)
    if isinstance(function.node, cst.Lambda):
        return _lambda_fix(node, function, kinds, helpers, columns, safety, source)
    if not columns and function.role in ("partition", "partition-with-index"):
        return NoFix(
            "no order column to sort a partition by (no sort upstream, no watermark, no time-like field read), "
            "and which rows share a partition changes with partitioning too, so sorting them fixes nothing"
        )
    frames = [name for name, data in kinds.items() if data.kind == FRAME]
    sorts = []
    for name, data in kinds.items():
        # Cogrouped frames come from two inputs: sort only those the function reads the column of.
        if data.kind == FRAME and node.method != "applyInArrow":
            if not columns:
                sorts.append(frame_sort_whole_row(name))
            elif len(frames) == 1 or set(columns) <= _columns_read(function.node, name):
                sorts.append(frame_sort(name, columns))
        elif data.kind == ROWS and columns and set(columns) <= _attributes_read(function.node):
            sorts.append(rows_sort(name, columns))
        elif data.kind == ROWS and not columns and not _advanced_by_hand(function.node, name):
            sorts.append(rows_sort(name, columns))
    if not sorts:
        return NoFix(
            "no sort to add at the top: the rows are advanced by hand with `next()`, come as Arrow batches, "
            "or the function reads no field of the order column"
        )
    # Offer the fix only when it silences the rule: a second pass must find nothing to sort.
    fixed = insert_at_top(function.node, sorts)
    if find_order_dependence(fixed, kinds, node.keys, helpers) is not None:
        return NoFix("rows sorted at the top would still be read in an order of their own (a helper or a later step)")
    what = f"`{function.name}` sorts its rows by ({', '.join(columns) or 'every column'}) first: {source}"
    return Fix(safety, what, ((function.node, lambda updated: insert_at_top(updated, sorts)),))


def _lambda_fix(
    node: StageNode,
    function: UserFunction,
    kinds: dict[str, Data],
    helpers: _Helpers,
    columns: tuple[str, ...],
    safety: Applicability,
    source: str,
) -> Fix | NoFix:
    """`lambda pdf: pdf.assign(n=range(len(pdf)))` → `lambda pdf: pdf.sort_values([...]).assign(...)`:
    a lambda has no statement to sort in, so each read of its frame reads a sorted copy (`len(pdf)`
    needs none). The copies keep the index, so they line up with each other by label."""
    frames = [name for name, data in kinds.items() if data.kind == FRAME]
    if function.role in ("partition", "partition-with-index"):
        return NoFix(
            "a per-partition lambda: which rows share a partition changes with partitioning too, so a sort "
            "of them fixes nothing"
        )
    if len(frames) != 1 or node.method == "applyInArrow":
        return NoFix("a lambda over rows, several frames or Arrow batches: no one frame to read sorted")
    frame, lam = frames[0], function.node
    # The group's key is one value within the group: sorting by it orders nothing.
    columns = tuple(c for c in columns if c not in node.keys) if set(columns) - set(node.keys) else columns
    rebinds = m.findall(lam.body, m.Param(name=m.Name(frame)) | m.CompFor(target=m.Name(frame)))
    if rebinds or m.findall(lam.body, m.Arg(keyword=m.Name("inplace"))):
        return NoFix("the lambda reuses its frame's name in a nested scope or changes the frame in place")

    class _Sorted(cst.CSTTransformer):
        """Every read of the frame but `len(frame)` and a sort of its own (`frame.sort_values(...)`)."""

        def visit_Call(self, call: cst.Call) -> bool:
            return not m.matches(call, m.Call(func=m.Name("len"), args=[m.Arg(value=m.Name(frame))]))

        def __init__(self) -> None:
            super().__init__()
            self.labels: set[int] = set()  # names that label, not read: `x.frame`, `f(frame=...)`

        def visit_Attribute(self, attribute: cst.Attribute) -> bool:
            self.labels.add(id(attribute.attr))
            return not m.matches(attribute, m.Attribute(value=m.Name(frame), attr=m.Name("sort_values")))

        def visit_Arg(self, arg: cst.Arg) -> bool:
            if arg.keyword is not None:
                self.labels.add(id(arg.keyword))
            return True

        def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
            read = original.value == frame and id(original) not in self.labels
            return frame_sorted(frame, columns) if read else updated

    fixed = lam.with_changes(body=lam.body.visit(_Sorted()))
    if fixed.deep_equals(lam) or find_order_dependence(fixed, kinds, node.keys, helpers) is not None:
        return NoFix("the lambda's frame read sorted would still be read in an order of its own")
    what = f"`{function.name}` reads its frame sorted by ({', '.join(columns) or 'every column'}): {source}"
    return Fix(safety, what, ((lam, lambda updated: updated.with_changes(body=updated.body.visit(_Sorted()))),))


def _order_columns(
    graph: StageGraph, node: StageNode, function: UserFunction
) -> tuple[tuple[str, ...], Applicability, str]:
    """(columns, safety, why): the job's own sort or event time (safe), else a time-like column
    the function reads (unsafe: a guess)."""
    for upstream in graph.upstream(node):
        if upstream.order_effect in _SORTS and upstream.keys and not _descending(upstream):
            return upstream.keys, SAFE, f"the order of the `{upstream.method}` the shuffle discards"
        event_time = _watermark_column(upstream)
        if event_time is not None:
            return (event_time,), SAFE, f"the event time `{event_time}` of the watermark"
    used = _time_like_columns(function.node)
    if used:
        return (used[0],), UNSAFE, f"`{used[0]}`, a time-like column it reads (a guess)"
    # No order to read: the whole row, column by column, is one order the rows could arrive in.
    return (), UNSAFE, "the whole row, column by column (no order to read; one order the rows could arrive in)"


def _watermark_column(node: StageNode) -> str | None:
    if node.method != "withWatermark" or node.call is None:
        return None
    values = positional_values(node.call)
    return column_name(values[0]) if values else None


def _descending(sort: StageNode) -> bool:
    code = cst.Module([]).code_for_node(sort.call) if sort.call is not None else ""
    return "desc" in code or "ascending" in code


def _advanced_by_hand(function: cst.FunctionDef, name: str) -> bool:
    """`next(rows)` in the body: the rows must stay an iterator, which a sorted list is not."""
    found = []

    class _Visitor(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Name) and node.func.value == "next" and node.args:
                value = node.args[0].value
                found.extend([True] if isinstance(value, cst.Name) and value.value == name else [])

    function.body.visit(_Visitor())
    return bool(found)


def _attributes_read(function: cst.FunctionDef) -> set[str]:
    """Names read as `x.name` in the body: the fields of rows the function touches."""
    found: set[str] = set()

    class _Visitor(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> None:
            found.add(node.attr.value)

    function.body.visit(_Visitor())
    return found


def _columns_read(function: cst.FunctionDef, frame: str) -> set[str]:
    """Columns the body reads from `frame` as `frame["c"]` or `frame.c`."""
    found: set[str] = set()

    class _Visitor(cst.CSTVisitor):
        def visit_Subscript(self, node: cst.Subscript) -> None:
            if (
                isinstance(node.value, cst.Name)
                and node.value.value == frame
                and isinstance(node.slice[0].slice, cst.Index)
            ):
                name = column_name(node.slice[0].slice.value)
                if name is not None:
                    found.add(name)

        def visit_Attribute(self, node: cst.Attribute) -> None:
            if isinstance(node.value, cst.Name) and node.value.value == frame:
                found.add(node.attr.value)

    function.body.visit(_Visitor())
    return found


def _time_like_columns(function: cst.FunctionDef | cst.Lambda) -> list[str]:
    """Time-like column names the body reads (`pdf["ts"]`, `r.event_time`, `set_index("ts")`),
    in the order they appear."""
    found: list[str] = []

    class _Visitor(cst.CSTVisitor):
        def visit_SimpleString(self, node: cst.SimpleString) -> None:
            self.add(node.evaluated_value)

        def visit_Attribute(self, node: cst.Attribute) -> None:
            self.add(node.attr.value)

        def add(self, name: object) -> None:
            if isinstance(name, str) and name.isidentifier() and _TIME_LIKE.search(name) and name not in found:
                found.append(name)

    function.body.visit(_Visitor())
    return found


def _pulse_fix(graph: StageGraph, node: StageNode, function: UserFunction) -> Fix | NoFix:
    """`applyInPandasWithState(f, out, state, mode, "NoTimeout")` on a watermarked stream →
    `applyInPandasWithState(release_in_event_time_order(f, "ts"), out, PULSE_STATE_SCHEMA, mode,
    PULSE_TIMEOUT)`: rows are buffered in the group state and released in event-time order once the
    watermark passes them (unsafe: output comes one watermark delay later)."""
    if node.method != "applyInPandasWithState" or node.call is None:
        return NoFix(
            f"a streaming `{node.method}`: only `applyInPandasWithState` can buffer rows until a watermark orders them"
        )
    event_time = next((c for c in map(_watermark_column, graph.upstream(node)) if c is not None), None)
    if event_time is None:
        return NoFix("a stream with no watermark upstream: no event time to release its rows in order")
    args = list(node.call.args)
    if len(args) != 5 or any(a.keyword is not None or a.star for a in args):
        return NoFix("`applyInPandasWithState` not called with its five arguments by position")
    timeout = args[4].value
    timeout_text = cst.Module([]).code_for_node(timeout)
    if not timeout_text.endswith(("NoTimeout", 'NoTimeout"', "NoTimeout'")):
        return NoFix("the state function sets its own timeouts, which would clash with the watermark pulses")
    wrapped = cst.Call(
        func=cst.Name("release_in_event_time_order"),
        args=[cst.Arg(args[0].value.deep_clone()), cst.Arg(string(event_time))],
    )
    new_args = [
        args[0].with_changes(value=wrapped),
        args[1],
        args[2].with_changes(value=cst.Name("PULSE_STATE_SCHEMA")),
        args[3],
        args[4].with_changes(value=cst.Name("PULSE_TIMEOUT")),
    ]
    what = (
        f"`{function.name}` gets each key's rows in `{event_time}` order, released from the group state "
        "once the watermark passes them (`sparkpar_lint.runtime.pulses`)"
    )
    imports = tuple(
        (PULSES_MODULE, name) for name in ("release_in_event_time_order", "PULSE_STATE_SCHEMA", "PULSE_TIMEOUT")
    )
    return Fix(UNSAFE, what, ((node.call, node.call.with_changes(args=new_args)),), imports)
