"""Where a stage's result ends when nothing the analysis can name keeps it (docs/confidence.md):
only in previews (`show(n)`, `display`, a printed or discarded `take`/`head`/`collect`, a
collected pandas frame only `.head()`-ed), nowhere (a frame bound to a name nobody reads, a lazy
frame on a line by itself), or only in row counts (`count()`, `isEmpty()`, `len(rows)`, `if
rows:`) and schemas. Any other use, or one the analysis cannot follow, keeps it.

A preview still shows which rows won, and a result nobody reads today is read once someone
uncomments the line that showed it: those findings stay, at the lowest confidence. A count reads
only how many rows there are. A choice that keeps or drops each row by its key alone (a
deduplication, a numbering, a first value per group, an unordered limit) fixes that number, and so
does every stage after it that neither adds nor drops rows nor looks at their values; a filter, a
join, a grouping or a generator on the way makes the count read the chosen values again.
"""

from __future__ import annotations

from typing import TypeVar

import libcst as cst

from sparkpar_lint.graph.positions import code_children
from sparkpar_lint.graph.previews import PREVIEW_FUNCTIONS
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode
from sparkpar_lint.graph.visiting import visit
from sparkpar_lint.model import COUNTED, PREVIEW, UNUSED, Span

_Node = TypeVar("_Node", bound=cst.CSTNode)

KEPT = "kept"  # reaches something kept, or a use the analysis cannot follow

# Actions that show rows to a person.
_SHOWS = frozenset({"show", "display"})
# Actions that read only how many rows there are.
_COUNTS = frozenset({"count", "isEmpty", "countApprox"})
# Calls that show the schema or the plan, never a row.
_SCHEMA = frozenset({"printSchema", "explain"})
# Stages after which the row count is still the one the choice fixed: they keep every row, or
# keep the first n of them whichever they are, and read no value of the rows they pass on.
_COUNT_KEPT = frozenset(
    {
        "alias",
        "cache",
        "coalesce",
        "collect",
        "drop",
        "first",
        "head",
        "limit",
        "localCheckpoint",
        "checkpoint",
        "orderBy",
        "persist",
        "repartition",
        "select",
        "sort",
        "sortWithinPartitions",
        "take",
        "toDF",
        "toPandas",
        "unpersist",
        "withColumn",
        "withColumnRenamed",
        "withColumns",
        "withColumnsRenamed",
    }
)
# Calls that only turn what they read into text for a person: between rows and a `print(...)` they
# keep them a preview.
_FORMATTING = frozenset({"str", "repr", "list", "tuple", "sorted", "join", "format", "enumerate", "zip", "pformat"})
# Stages that keep every row and every column as they are.
_SAME_COLUMNS = frozenset(
    {"alias", "cache", "checkpoint", "coalesce", "localCheckpoint", "orderBy", "persist", "repartition", "sort"}
    | {"sortWithinPartitions", "unpersist"}
)
# pandas methods that show a few rows of a collected frame.
_PANDAS_PREVIEWS = frozenset({"head", "tail", "sample", "describe", "info"})
_VALUE_KINDS = frozenset({"DataFrame", "GroupedData", "RDD", "driver", ""})


def fate(graph: StageGraph, node: StageNode, count_fixed: bool) -> str:
    """Where the result of `node` ends: KEPT, PREVIEW (some use shows rows, none keeps them),
    UNUSED (some use is none at all, the others only count) or COUNTED (every use reads only a
    count the choice at `node` cannot change, or a schema). `count_fixed`: the choice keeps or
    drops each row by its key alone, so how many rows it yields does not depend on which won."""
    found: set[str] = set()
    counting = count_fixed and not _generates(node)
    unique = counting and (node.method.startswith(("dropDuplicates", "drop_duplicates")) or node.method == "agg")
    if not _walk(graph, node, set(), found, counting, unique, True):
        return KEPT
    for outcome in (PREVIEW, UNUSED):
        if outcome in found:
            return outcome
    return COUNTED if found else UNUSED


def _walk(
    graph: StageGraph, node: StageNode, seen: set[int], found: set[str], counting: bool, unique: bool, origin: bool
) -> bool:
    """False as soon as one use keeps the result; else adds what each use does to `found`.
    `counting`: no stage since the choice changed how many rows there are by their values;
    `unique`: the rows are still one per key of a deduplication or an aggregation, with every
    column they had there, so a `distinct()` drops none of them; `origin`: `node` is the choice."""
    if node.id in seen:
        return True
    seen.add(node.id)
    spec = node.spec
    if node.call is None or node.imported is not None or node.sql is not None or node.streaming:
        return False
    consumers = graph.consumers(node)
    if node.method in _SCHEMA and not consumers:
        found.add(COUNTED)
        return True
    if spec is None:
        return False
    if node.method in _COUNTS and not consumers:
        found.add(COUNTED)
        return counting
    if node.method in _SHOWS and not consumers:
        found.add(PREVIEW)
        return True
    if spec.sink or spec.functions or node.function_slots or spec.returns not in _VALUE_KINDS:
        return False
    if not origin:
        # A `distinct()` of rows unique on a key they still hold drops none of them.
        kept = node.method in _COUNT_KEPT or (unique and _deduplicates(node))
        counting = counting and kept and not _generates(node)
        unique = unique and (node.method in _SAME_COLUMNS or _deduplicates(node))
    if not _uses_seen(graph, node, consumers, found, counting):
        return False
    return all(_walk(graph, consumer, seen, found, counting, unique, False) for consumer in consumers)


def read_only_by_stages(graph: StageGraph, node: StageNode) -> bool:
    """Every read of the stage's value is one of its consumer stages: no helper, container,
    `return` or unknown call sees it (a rule judging the consumers then judges every use)."""
    value = node.call
    if value is None:
        return False
    consumers = graph.consumers(node)
    if any(_reads(c, value) for c in consumers):
        return True
    assign = _index(graph).assign_of.get(id(value))
    if assign is None:
        return False
    return all(any(_reads(c, name) for c in consumers) for name in _reads_of(graph, assign))


def _deduplicates(node: StageNode) -> bool:
    """`distinct()` or `dropDuplicates()` over every column."""
    return node.method == "distinct" or (
        node.method in ("dropDuplicates", "drop_duplicates") and node.call is not None and not node.call.args
    )


def _generates(node: StageNode) -> bool:
    """A generator (`explode`, `inline`, ...) turns a row into as many rows as a value holds."""
    return any(call.spec is not None and call.spec.generator for call in node.columns.calls)


def _uses_seen(graph: StageGraph, node: StageNode, consumers: list[StageNode], found: set[str], counting: bool) -> bool:
    """Every place the stage's value goes is a consumer stage, a preview or a size test, or it
    goes nowhere; a value bound to a name is followed through the reads of that name up to the
    next statement binding it again."""
    value = node.call
    assert value is not None
    driver = node.spec is not None and node.spec.returns == "driver"
    if id(value) in graph.previewed_args:
        found.add(PREVIEW if driver or not _alone(graph, value) else UNUSED)
        return True
    if id(value) in graph.size_read and driver:
        found.add(COUNTED)
        return counting
    if any(_reads(c, value) for c in consumers):
        return True
    assign = _index(graph).assign_of.get(id(value))
    if assign is None:
        # Returned, passed on, stored in a container: kept, unless only printed or `.head()`-ed.
        if driver and (_printed(graph, value) or _pandas_preview(graph, value)):
            found.add(PREVIEW)
            return True
        return False
    reads = _reads_of(graph, assign)
    if not reads:
        found.add(UNUSED)
    for name in reads:
        if any(_reads(c, name) for c in consumers):
            continue
        if id(name) in graph.previewed_args:
            found.add(PREVIEW if driver or not _alone(graph, name) else UNUSED)
        elif driver and id(name) in graph.size_read:
            found.add(COUNTED)
            if not counting:
                return False
        elif driver and (_pandas_preview(graph, name) or _printed(graph, name)):
            found.add(PREVIEW)
        else:
            return False  # read somewhere the analysis cannot follow
    return True


def _printed(graph: StageGraph, value: cst.BaseExpression) -> bool:
    """`value` is read inside a `print(...)`/`display(...)` argument only through calls that format
    it (`print(", ".join(str(x) for x in rows.collect()))`)."""
    for call in _index(graph).prints:
        finder = _Formatted(value)
        for arg in call.args:
            visit(arg.value, finder)
        if finder.found is not None:
            return finder.found
    return False


class _Formatted(cst.CSTVisitor):
    """Finds `value` below a node; `found` says whether every call between only formats it."""

    def __init__(self, value: cst.BaseExpression) -> None:
        self.value = value
        self.calls: list[cst.Call] = []
        self.found: bool | None = None

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.found is not None:
            return False
        if node is self.value:
            self.found = all(_formats(call) for call in self.calls)
            return False
        if isinstance(node, cst.Call):
            self.calls.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if self.calls and original_node is self.calls[-1]:
            self.calls.pop()


def _formats(call: cst.Call) -> bool:
    func = call.func
    name = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else ""
    return name in _FORMATTING


def _alone(graph: StageGraph, value: cst.BaseExpression) -> bool:
    """`value` is a statement by itself: a lazy frame there computes nothing and shows no row."""
    return id(value) in _index(graph).alone


def _reads_of(graph: StageGraph, assign: cst.Assign) -> list[cst.Name]:
    """The names reading the binding `assign` makes: after it, inside its function if it is in
    one, up to the next statement of the same block binding the name again (whose right-hand side
    still reads this binding). Read in file order, so a loop's later bindings are not followed
    back: any read left unexplained keeps the result."""
    index = _index(graph)
    name = cst.ensure_type(assign.targets[0].target, cst.Name).value
    statement = graph.span_of(assign)
    block = index.block_of(graph, assign)
    # Only a binding in the same block surely replaces this one: after `if c: x = a else: x = b`
    # either may be read.
    later = [
        graph.span_of(other)
        for other in index.bindings.get(name, ())
        if other is not assign and block is not None and index.block_of(graph, other) is block
    ]
    until = min((span for span in later if span > statement), default=None)
    scopes = index.scopes(graph)
    scope = scopes.owner.get(id(assign))
    names = []
    for read in index.reads.get(name, ()):
        # Before placing the read: placing every spelling of a common name costs a module's code.
        if scope is not None and not scopes.holds(scope, read):
            continue  # a function's local: another function's name of that spelling is another
        where = graph.span_of(read)
        if where < statement or _within(where, statement):
            continue  # an earlier binding, or this assignment's own value
        if until is not None and where > until and not _within(where, until):
            continue  # a later binding's
        names.append(read)
    return names


def _within(inner: Span, outer: Span) -> bool:
    return (outer.line, outer.column) <= (inner.line, inner.column) <= (outer.end_line, outer.end_column)


def _pandas_preview(graph: StageGraph, value: cst.BaseExpression) -> bool:
    """`pdf.head()` or `df.toPandas().head()` (or `tail`, `describe`, ...) shown or on a line by
    itself, where `value` holds collected rows."""
    call = _index(graph).method_on.get(id(value))
    if call is None:
        return False
    return cst.ensure_type(call.func, cst.Attribute).attr.value in _PANDAS_PREVIEWS and id(call) in graph.previewed_args


def _reads(consumer: StageNode, value: cst.BaseExpression) -> bool:
    """`consumer` is called on `value` or takes it as an argument."""
    call = consumer.call
    if call is None:
        return False
    if isinstance(call.func, cst.Attribute) and call.func.value is value:
        return True
    return any(arg.value is value for arg in call.args)


class _Index:
    """What the questions above look up, gathered in one pass over the module's nodes per graph:
    asked once per finding, a scan each time made a module of 3,000 findings quadratic."""

    def __init__(self, graph: StageGraph) -> None:
        assigns = _nodes(graph, cst.Assign)
        targets = {id(t.target) for a in assigns for t in a.targets}
        # id(value) -> the assignment binding it to one name.
        self.assign_of = {
            id(a.value): a for a in assigns if len(a.targets) == 1 and isinstance(a.targets[0].target, cst.Name)
        }
        self.bindings: dict[str, list[cst.Assign]] = {}
        for a in self.assign_of.values():
            self.bindings.setdefault(cst.ensure_type(a.targets[0].target, cst.Name).value, []).append(a)
        self.reads: dict[str, list[cst.Name]] = {}
        for name in _nodes(graph, cst.Name):
            if id(name) not in targets:
                self.reads.setdefault(name.value, []).append(name)
        self.alone = {id(statement.value) for statement in _nodes(graph, cst.Expr)}
        calls = _nodes(graph, cst.Call)
        self.prints = [c for c in calls if isinstance(c.func, cst.Name) and c.func.value in PREVIEW_FUNCTIONS]
        self.method_on = {id(c.func.value): c for c in calls if isinstance(c.func, cst.Attribute)}
        self._blocks: dict[int, cst.CSTNode] | None = None
        self._scopes: _Scopes | None = None

    def block_of(self, graph: StageGraph, assign: cst.Assign) -> cst.CSTNode | None:
        """The block (a module's or a compound statement's body) whose own statements hold `assign`."""
        if self._blocks is None:
            blocks: list[cst.CSTNode] = [*_nodes(graph, cst.IndentedBlock)]
            if graph.module is not None:
                blocks.append(graph.module)
            self._blocks = {id(s): block for block in blocks for s in getattr(block, "body", ())}
        line = graph.statement_of(assign)
        return self._blocks.get(id(line)) if line is not None else None

    def scopes(self, graph: StageGraph) -> _Scopes:
        if self._scopes is None:
            self._scopes = _Scopes(graph.module)
        return self._scopes


class _Scopes:
    """Which `def` holds each assignment and name, read from the tree: placing every function
    (their spans) generated the code of nearly the whole module. A def's code runs from its
    `def` (or `async`) to the end of its body, so it holds its name, parameters, annotations and
    body, and not its decorators, which belong to the scope around it."""

    def __init__(self, module: cst.Module | None) -> None:
        # id(Assign or Name) -> index of the innermost def holding it; each def's enclosing def.
        self.owner: dict[int, int] = {}
        self._outer: list[int | None] = []
        stack: list[tuple[cst.CSTNode, int | None]] = [(module, None)] if module is not None else []
        while stack:
            node, function = stack.pop()
            kind = type(node)
            if function is not None and (kind is cst.Name or kind is cst.Assign):
                self.owner[id(node)] = function
            if isinstance(node, cst.FunctionDef):
                self._outer.append(function)
                decorators = {id(decorator) for decorator in node.decorators}
                inner = len(self._outer) - 1
                stack.extend((child, function if id(child) in decorators else inner) for child in code_children(node))
            else:
                stack.extend((child, function) for child in code_children(node))

    def holds(self, function: int, node: cst.CSTNode) -> bool:
        """`node` lies in the code of def number `function` (in it or in a def nested in it)."""
        inner = self.owner.get(id(node))
        while inner is not None and inner != function:
            inner = self._outer[inner]
        return inner == function


def _index(graph: StageGraph) -> _Index:
    return graph.derived("erasure", _Index)


def _nodes(graph: StageGraph, kind: type[_Node]) -> list[_Node]:
    return graph.nodes_of(kind)
