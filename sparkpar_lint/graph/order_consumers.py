"""Does anything ever see the order of a collected list?

`collect_list` builds its array in arrival order, but a consumer may not care: `array_contains`,
`size`, `array_max`, `sort_array`, `explode` back into rows, or a UDF that only takes the set,
the sum or the sorted list of it. When every path from the aggregation either reads the column
through such a consumer or drops it before it reaches an output, the order is never observed.
"""

from __future__ import annotations

import libcst as cst

from sparkpar_lint.catalogue import load_catalogue
from sparkpar_lint.graph.order_sensitivity import ROWS, Data, find_order_dependence
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode
from sparkpar_lint.graph.uniqueness import literal_names
from sparkpar_lint.graph.visiting import children, visit
from sparkpar_lint.graph.zipped_lists import zip_partners

# Beyond the catalogue's order-normalizing functions: results that ignore element order.
_ORDER_FREE = frozenset(
    {
        "array_contains",
        "arrays_overlap",
        "exists",
        "forall",
        "explode",
        "explode_outer",
        "inline",
        "inline_outer",
        "array_except",
        "array_intersect",
    }
)
# Functions that read an array by position: between a list and an order-free consumer they expose its order.
_POSITIONAL = frozenset(
    {"slice", "element_at", "get", "array_position", "posexplode", "posexplode_outer", "try_element_at"}
)
# Python built-ins whose result does not depend on the order of their argument.
_ORDER_FREE_BUILTINS = frozenset({"sorted", "set", "frozenset", "sum", "len", "max", "min", "any", "all", "Counter"})
# Driver-side summaries that ignore element order: `statistics.median(r.xs)`, `np.max(r.xs)`.
_ORDER_FREE_MODULE_FUNCTIONS = {
    "statistics": frozenset({"median", "median_low", "median_high", "mode", "multimode"}),
    "np": frozenset({"median", "max", "min", "amax", "amin", "nanmedian", "percentile", "unique", "sort"}),
    "numpy": frozenset({"median", "max", "min", "amax", "amin", "nanmedian", "percentile", "unique", "sort"}),
}
_MAX_DEPTH = 30
# Calls that show the schema or the plan, never the rows.
_METADATA = frozenset({"printSchema", "explain", "schema", "columns", "dtypes"})


def order_free_udf(function: cst.FunctionDef | cst.Lambda, position: int = 0) -> bool:
    return _order_free_udf(function, position)


def order_free_functions() -> frozenset[str]:
    functions = load_catalogue().functions
    return _ORDER_FREE | {name for name, spec in functions.items() if spec.order_normalizing}


def aggregate_alias(node: StageNode, target: cst.Call) -> str | None:
    """The name the aggregation gives the column holding `target`: `collect_list(x).alias("xs")`."""
    if node.call is None:
        return None
    for arg in node.call.args:
        expr = arg.value
        if contains(expr, target) and isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            if expr.func.attr.value in ("alias", "name") and expr.args:
                names = literal_names(expr.args[0].value)
                return names[0] if names else None
    return None


def order_never_observed(graph: StageGraph, node: StageNode, column: str) -> bool:
    """Every path from `node` reads `column` only through order-free consumers, or drops it."""
    return _paths_ok(graph, node, column, 0, zip_partners(graph, node))


def _paths_ok(graph: StageGraph, node: StageNode, column: str, depth: int, partners: frozenset[str]) -> bool:
    consumers = graph.consumers(node)
    if not consumers or depth > _MAX_DEPTH:
        return False  # the column reaches whoever receives this result
    return all(_consumer_ok(graph, c, column, depth, partners) for c in consumers)


def _consumer_ok(graph: StageGraph, consumer: StageNode, column: str, depth: int, partners: frozenset[str]) -> bool:
    spec = consumer.spec
    call = consumer.call
    if consumer.method in _METADATA:
        return True
    if consumer.method == "collect" and not graph.consumers(consumer):
        return _collected_rows_order_free(graph, consumer, column)
    if spec is None or call is None or spec.data_args:
        return False
    free_args = {
        id(arg.value)
        for c in consumer.columns.calls
        if c.udf is not None and c.call is not None
        for position, arg in enumerate(c.call.args)
        if arg.keyword is None and not arg.star and _order_free_udf(c.udf.node, position)
    }
    references = _References(column, order_free_functions(), free_args, partners)
    arguments = call.args
    if consumer.method == "withColumn" and arguments:
        redefined = literal_names(arguments[0].value) == [column]
        for arg in arguments[1:]:
            visit(arg.value, references)
        if references.exposed or references.bare:
            return False
        return True if redefined else _paths_ok(graph, consumer, column, depth + 1, partners)
    if consumer.method == "drop":
        dropped = {n for a in arguments for n in (literal_names(a.value) or [])}
        return column in dropped or _paths_ok(graph, consumer, column, depth + 1, partners)
    for arg in arguments:
        visit(arg.value, references)
    if references.exposed:
        return False
    if spec.returns == "GroupedData":
        # Grouping by something else: the aggregation after it keeps only what it names.
        return not references.bare and _paths_ok(graph, consumer, column, depth + 1, partners)
    if spec.forwarding in ("selected", "keys", "none"):
        # A projection or aggregation keeps the column only where it is named bare.
        return not references.bare or _paths_ok(graph, consumer, column, depth + 1, partners)
    if references.bare:
        return False
    if spec.forwarding == "all" and spec.returns == "DataFrame":
        return _paths_ok(graph, consumer, column, depth + 1, partners)
    return False


class _References(cst.CSTVisitor):
    """Where a column name appears: inside an order-free call, bare, or exposed to order."""

    def __init__(self, column: str, free: frozenset[str], free_args: set[int], partners: frozenset[str]) -> None:
        self.column = column
        self.free = free
        self.free_args = free_args  # arguments an order-free UDF parameter receives
        self.partners = partners  # lists collected beside this one, row by row, with no nulls
        self.calls: list[tuple[str | None, bool, cst.CSTNode]] = []  # enclosing calls: (name, order-free, call)
        self.bare = False
        self.exposed = False

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        name = (
            func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
        )
        self.calls.append((name, name in self.free, node))

    def leave_Call(self, node: cst.Call) -> None:
        self.calls.pop()

    def on_visit(self, node: cst.CSTNode) -> bool:
        if id(node) in self.free_args:
            self.calls.append(("<udf argument>", True, node))
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        super().on_leave(original_node)
        if id(original_node) in self.free_args:
            self.calls.pop()

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if node.evaluated_value == self.column:
            self._seen()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == self.column:
            self._seen()

    def _seen(self) -> None:
        free_at = max((i for i, (_, free, _) in enumerate(self.calls) if free), default=None)
        if free_at is not None:
            # Order-free outside, but a call in between may read positions: `size(slice(xs, 1, 3))`
            # is 3 either way, `array_contains(slice(xs, 1, 3), v)` is not; zipped lists pair up
            # only when collected side by side with no nulls (graph/zipped_lists.py).
            for name, _, call in self.calls[free_at + 1 :]:
                if name in _POSITIONAL or (
                    name == "arrays_zip" and isinstance(call, cst.Call) and not self._aligned(call)
                ):
                    self.exposed = True
                    return
            return
        if [name for name, _, _ in self.calls] in ([], ["col"], ["column"]):
            self.bare = True  # `"xs"`, `col("xs")`, `df.xs` as an argument by itself
        else:
            self.exposed = True

    def _aligned(self, call: cst.Call) -> bool:
        names = [literal_names(a.value) for a in call.args]
        return len(names) > 1 and all(n is not None and len(n) == 1 and n[0] in self.partners for n in names)


def _collected_rows_order_free(graph: StageGraph, collect: StageNode, column: str) -> bool:
    """`rows = ....collect()` read only by loops over its rows (`for r in rows`, comprehensions)
    that take `r.column` / `r["column"]` only into order-free summaries (`statistics.median`,
    `max`, `set`, `sorted`); the loop variable is otherwise read only for other columns."""
    assign = next(
        (a for a in graph.nodes_of(cst.Assign) if isinstance(a, cst.Assign) and a.value is collect.call), None
    )
    target = assign.targets[0].target if assign is not None and len(assign.targets) == 1 else None
    if not isinstance(target, cst.Name):
        return False
    rows = target.value
    loops = {
        id(f.iter): f.target
        for f in [*graph.nodes_of(cst.For), *graph.nodes_of(cst.CompFor)]
        if isinstance(f, (cst.For, cst.CompFor))
        and isinstance(f.iter, cst.Name)
        and f.iter.value == rows
        and isinstance(f.target, cst.Name)
    }
    scopes = [*graph.nodes_of(cst.For), *graph.nodes_of(cst.ListComp), *graph.nodes_of(cst.SetComp)]
    scopes += [*graph.nodes_of(cst.DictComp), *graph.nodes_of(cst.GeneratorExp)]
    checked = 0
    for name in graph.nodes_of(cst.Name):
        if not isinstance(name, cst.Name) or name.value != rows or name is target:
            continue
        if id(name) not in loops:
            return False  # the list itself is kept, returned or read some other way
        scope = next((s for s in scopes if (loop := _loop_of(s)) is not None and loop.iter is name), None)
        if scope is None or not _row_reads_order_free(scope, loops[id(name)].value, column):
            return False
        checked += 1
    return checked > 0


def _loop_of(scope: cst.CSTNode) -> cst.For | cst.CompFor | None:
    if isinstance(scope, cst.For):
        return scope
    return getattr(scope, "for_in", None)


def _row_reads_order_free(scope: cst.CSTNode, row: str, column: str) -> bool:
    class _Check(cst.CSTVisitor):
        def __init__(self) -> None:
            self.free = 0  # depth of enclosing order-free calls
            self.ok = True
            self.reads = 0

        def visit_Call(self, node: cst.Call) -> None:
            if _driver_order_free(node.func):
                self.free += 1

        def leave_Call(self, node: cst.Call) -> None:
            if _driver_order_free(node.func):
                self.free -= 1

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            if isinstance(node.value, cst.Name) and node.value.value == row:
                self._column(node.attr.value)
                return False
            return True

        def visit_Subscript(self, node: cst.Subscript) -> bool:
            if isinstance(node.value, cst.Name) and node.value.value == row and len(node.slice) == 1:
                index = node.slice[0].slice
                if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString):
                    self._column(index.value.evaluated_value)
                    return False
            return True

        def visit_Name(self, node: cst.Name) -> None:
            if node.value == row:
                self.ok = False  # the whole row: anything may read the list

        def _column(self, name: object) -> None:
            if name == column:
                self.reads += 1
                self.ok = self.ok and self.free > 0

    check = _Check()
    loop = _loop_of(scope)
    body = scope.body if isinstance(scope, cst.For) else scope
    for part in [c for c in children(body) if c is not loop and c is not getattr(loop, "target", None)]:
        visit(part, check)
    if isinstance(loop, cst.CompFor):
        if loop.inner_for_in is not None:
            return False  # nested loops: not followed
        for condition in loop.ifs:
            visit(condition, check)
    return check.ok and check.reads > 0


def _driver_order_free(func: cst.BaseExpression) -> bool:
    if isinstance(func, cst.Name):
        return func.value in _ORDER_FREE_BUILTINS
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
        return func.attr.value in _ORDER_FREE_MODULE_FUNCTIONS.get(func.value.value, frozenset())
    return False


def _order_free_udf(function: cst.FunctionDef | cst.Lambda, position: int = 0) -> bool:
    """A UDF that reads its argument at `position` only through order-free built-ins
    (`len(set(xs))`), membership and emptiness tests (`"buy" in xs`, `not xs`), or a loop that
    folds it order-free (counts, sums); its other arguments are the row's other columns."""
    params = function.params.params
    if function.params.star_arg is not None and not isinstance(function.params.star_arg, cst.MaybeSentinel):
        return False
    if position >= len(params):
        return False
    name = params[position].name.value

    class _Check(cst.CSTVisitor):
        def __init__(self) -> None:
            self.ok = True
            self.allowed: set[int] = set()

        def visit_Comparison(self, node: cst.Comparison) -> None:
            for target in node.comparisons:
                if isinstance(target.operator, (cst.In, cst.NotIn)) and isinstance(target.comparator, cst.Name):
                    self.allowed.add(id(target.comparator))

        def visit_For(self, node: cst.For) -> None:
            self.allowed.add(id(node.iter))  # judged by the loop analysis below

        def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
            if isinstance(node.operator, cst.Not) and isinstance(node.expression, cst.Name):
                self.allowed.add(id(node.expression))  # `not xs`: empty or not

        def visit_Call(self, node: cst.Call) -> bool:
            return not (isinstance(node.func, cst.Name) and node.func.value in _ORDER_FREE_BUILTINS)

        def visit_Name(self, node: cst.Name) -> None:
            if node.value == name and id(node) not in self.allowed:
                self.ok = False

    check = _Check()
    visit(function.body, check)
    return check.ok and find_order_dependence(function, {name: Data(ROWS)}) is None


def contains(tree: cst.CSTNode | None, target: cst.CSTNode) -> bool:
    """Whether `target` (by identity) is `tree` or lies inside it."""
    if tree is None:
        return False
    found = []

    class _Visitor(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if node is target:
                found.append(node)
            return not found

    visit(tree, _Visitor())
    return bool(found)
