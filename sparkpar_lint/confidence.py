"""The links a finding stands on, read from the stage graph at the finding's stage (docs/confidence.md).

A finding is true when (a) an operation's result depends on order, partitioning, micro-batch split or
retry, (b) the rows or runs that compete can differ, and (c) the difference reaches something
observable. Rules find (a); what they know of (b) they say (`Rule.finding(outcomes=...)`); the rest
is decided here, the same way for every rule, so a finding's confidence follows from what the
analysis saw and not from which rule made it.
"""

from __future__ import annotations

import libcst as cst

from sparkpar_lint.graph.erasure import KEPT, fate
from sparkpar_lint.graph.result_reach import sql_writes
from sparkpar_lint.graph.span_index import SpanIndex
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode
from sparkpar_lint.model import PREVIEW, UNUSED, Confidence, Links, Span

# What each rule's choice point depends on. Order and arrival choices pick among rows, which differ
# only if the data lets them; the others differ by construction (another partitioning numbers rows
# differently, a clock reads another time, a retry writes again, a plan costs what it costs).
ORDER = "order"
BY_CONSTRUCTION = "by-construction"
_CHOICE = {
    "SPX101": ORDER,
    "SPX102": ORDER,
    "SPX103": ORDER,
    "SPX104": ORDER,
    "SPX106": ORDER,
    "SPX107": ORDER,
    "SPX108": ORDER,
}
# Driver actions that read only how many rows there are, or show rows to a person: which rows won
# decides nothing there.
_NOT_KEPT = frozenset({"count", "isEmpty", "countApprox", "show", "display", "printSchema", "explain"})
_HANDED_ON = frozenset({"foreach", "foreachPartition", "foreachBatch"})
OBSERVED_ASSUMED = "this result reaches a write, a collected or returned value, or a key downstream"
# Choices whose difference only rows can carry: where the result stops at a preview, a count or
# nothing, graph/erasure.py says so (a clock read or a retry is seen some other way).
_ERASABLE = frozenset({*_CHOICE, "SPX105"})
# Choices that keep or drop each row by its key alone: how many rows come out is fixed, so a count
# cannot tell one outcome from another (not a function run on a group's rows, which may emit any
# number of rows; not a sample or a random column).
_COUNT_FIXED = frozenset({"SPX101", "SPX102", "SPX104", "SPX106", "SPX107", "SPX108"})
# Rules about speed only (a window or region run in one task): the result is the same however the
# rows are split, so they find no choice point and establish no link.
COST = frozenset({"SPX401", "SPX402"})
COST_NOTE = "performance only: the result is the same, it is computed in one task"
ERASED = {
    PREVIEW: "only shown in a preview: another run may show other rows, nothing computed from them changes",
    UNUSED: "its result is not used: it matters once something reads it",
}


def rule_confidence(rule_id: str) -> Confidence:
    """The confidence a rule's findings usually earn, for code scanning's per-rule `precision`: a
    choice among rows needs data that differs, which the code rarely shows; a cost never changes a
    result."""
    if rule_id in COST:
        return Confidence.LOW
    return Confidence.MEDIUM if _CHOICE.get(rule_id) == ORDER else Confidence.HIGH


def links(graph: StageGraph, rule_id: str, span: Span, outcomes: bool | str | None = None) -> Links:
    """The finding's links. `outcomes`: True when the rule saw that the competing rows differ, a
    condition ("`event_id` is not unique") when it assumed they can, None to decide here."""
    if rule_id in COST:
        return Links(choice=False, outcomes=False, observed=False, cost=True)
    node = node_at(graph, span)
    assumed: list[str] = []
    if outcomes is None:
        outcomes = True if _CHOICE.get(rule_id, BY_CONSTRUCTION) == BY_CONSTRUCTION else rows_differ(node)
    if isinstance(outcomes, str):
        assumed.append(outcomes)
    observed = node is not None and _observed(graph, node)
    if not observed and node is not None and rule_id in _ERASABLE:
        ending = fate(graph, node, rule_id in _COUNT_FIXED)
        if ending != KEPT:
            return Links(outcomes=outcomes is True, observed=False, assumed=tuple(assumed), erased=ending)
    if not observed:
        assumed.append(OBSERVED_ASSUMED)
    return Links(choice=True, outcomes=outcomes is True, observed=observed, assumed=tuple(assumed))


def with_assumptions(message: str, found: Links) -> str:
    """The message with what it assumed, so a reader can check it in seconds, and where its
    result ends when nothing keeps it."""
    if found.assumed:
        message = f"{message} (holds if {', and if '.join(found.assumed)})"
    if found.erased in ERASED:
        message = f"{message} ({ERASED[found.erased]})"
    if found.cost:
        message = f"{message} ({COST_NOTE})"
    return message


def node_at(graph: StageGraph, span: Span) -> StageNode | None:
    """The stage the finding is about: the innermost one whose call holds the span's start, else
    the first inside the span (a flagged chain), else the stage running the flagged function or
    using the flagged window spec, else the last stage starting earlier on the same line (SQL)."""
    start, end = (span.line, span.column), (span.end_line, span.end_column)
    index = graph.derived("spans", SpanIndex)
    holding: list[tuple[tuple[int, int], StageNode]] = []
    inside: list[StageNode] = []
    for node in index.near(span):
        where = node.span
        first, last = (where.line, where.column), (where.end_line, where.end_column)
        if first <= start <= last:
            holding.append(((where.end_line - where.line, where.end_column - where.column), node))
        elif start <= first <= end:
            inside.append(node)
    if holding:
        return min(holding, key=lambda pair: (pair[0], -pair[1].id))[1]
    if inside:
        return inside[0]
    return _running(graph, start) or index.last_starting_before(*start) or _in_sql(graph, start)


def _running(graph: StageGraph, start: tuple[int, int]) -> StageNode | None:
    """The first stage that runs a user function, or uses a window spec, holding `start`."""
    for node, spans, window_lines in graph.derived("running", _functions_and_windows):
        if any((where.line, where.column) <= start <= (where.end_line, where.end_column) for where in spans):
            return node
        if start[0] in window_lines:
            return node
    return None


def _functions_and_windows(graph: StageGraph) -> list[tuple[StageNode, list[Span], set[int]]]:
    """Each stage that runs user functions or uses window specs: their spans, and its specs' lines."""
    found = []
    for node in graph.nodes:
        functions = [*node.functions, *node.function_slots.values()]
        functions += [c.udf for c in node.columns.calls if c.udf is not None]
        spans = [where for where in (graph.span_of(f.node) for f in functions) if where is not None]
        lines = {c.window.span.line for c in node.columns.calls if c.window is not None and c.window.span is not None}
        if spans or lines:
            found.append((node, spans, lines))
    return found


def _in_sql(graph: StageGraph, start: tuple[int, int]) -> StageNode | None:
    """The last stage built from the SQL string holding `start`."""
    found = None
    for where, node in graph.derived("sql_literals", _last_of_each_literal):
        if (where.line, where.column) <= start <= (where.end_line, where.end_column):
            found = node if found is None or node.id > found.id else found
    return found


def _last_of_each_literal(graph: StageGraph) -> list[tuple[Span, StageNode]]:
    """The span of each SQL string the stages were built from, with the last stage built from it."""
    last: dict[int, tuple[Span, StageNode]] = {}
    for node in graph.nodes:
        literal = getattr(node.sql, "literal", None)
        if literal is not None:
            last[id(literal)] = (graph.span_of(literal), node)
    return list(last.values())


def rows_differ(node: StageNode | None) -> str:
    """The condition an order-dependent choice needs, as the reader would check it."""
    if node is None:
        return _ANY_ROWS
    windows = [c.window for c in node.columns.calls if c.window is not None]
    if windows:
        window = windows[0]
        where = f" within a {_names(window.partition_by)} partition" if window.partition_by else ""
        if window.order_by:
            return f"rows tied on {_names(window.order_by)}{where} can differ"
        return f"rows{where} can differ" if where else _ANY_ROWS
    if not node.keys:
        return _ANY_ROWS
    if node.method.startswith(("dropDuplicates", "drop_duplicates")):
        return f"rows sharing {_names(node.keys)} can differ in their other columns"
    if node.method in ("sort", "orderBy", "sortWithinPartitions"):
        return f"rows tied on {_names(node.keys)} can differ"
    return f"a {_names(node.keys)} group can hold rows that differ"


_ANY_ROWS = "the rows competing here can differ (no unique key or tie-breaker is known)"


def _names(columns: tuple[str, ...]) -> str:
    return ", ".join(f"`{c}`" for c in columns)


def _observed(graph: StageGraph, node: StageNode) -> bool:
    """The stage's result, or one computed from it, is written, handed to code that acts on each
    row, collected and kept, or returned. Previews and row counts see nothing of the choice."""
    return node.id in graph.derived("observed", _observed_ids)


def _observed_ids(graph: StageGraph) -> set[int]:
    """ids of the stages `_observed` holds for, found once per graph: asked per finding, a walk
    downstream of each was quadratic in a query of thousands of UNION ALL branches."""
    returned = graph.derived("returned", _returned)
    unseen = graph.previewed_args | graph.size_read

    def observes(stage: StageNode) -> bool:
        spec, call = stage.spec, stage.call
        if sql_writes(stage):
            return True
        if spec is None:
            return False
        if spec.sink or stage.method in _HANDED_ON or (spec.returns == "driver" and stage.method.startswith("save")):
            return True
        if stage.id in returned:
            return True
        # Rows collected into a name that is only shown (`pdf = ....toPandas()`, `pdf.head()`)
        # are a preview too.
        return (
            spec.returns == "driver"
            and stage.method not in _NOT_KEPT
            and call is not None
            and id(call) not in unseen
            and fate(graph, stage, count_fixed=False) == KEPT
        )

    return graph.reaching(observes)


def _returned(graph: StageGraph) -> set[int]:
    """ids of the stages whose value a `return` hands back, directly or through a name bound to it."""
    names: set[str] = set()
    values: set[int] = set()
    for ret in graph.nodes_of(cst.Return):
        assert isinstance(ret, cst.Return)
        if isinstance(ret.value, cst.Name):
            names.add(ret.value.value)
        elif ret.value is not None:
            values.update(_branches(ret.value))
    if names:
        for assign in graph.nodes_of(cst.Assign):
            assert isinstance(assign, cst.Assign)
            targets = assign.targets
            if len(targets) == 1 and isinstance(targets[0].target, cst.Name) and targets[0].target.value in names:
                values.update(_branches(assign.value))
    # A query's result stands for the `spark.sql(...)` call that runs it.
    found = {graph.sql_results[i] for i in values if i in graph.sql_results}
    found.update(node.id for node in graph.nodes if node.call is not None and id(node.call) in values)
    return found


def _branches(value: cst.BaseExpression) -> list[int]:
    """ids of the expressions `value` may be: both arms of `a if c else b`."""
    if isinstance(value, cst.IfExp):
        return [*_branches(value.body), *_branches(value.orelse)]
    return [id(value)]
