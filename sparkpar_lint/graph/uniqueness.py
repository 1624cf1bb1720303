"""Which column sets identify a row, and which columns are functions of which, along the graph.

The order rules ask "could two rows tie?": two rows of one `groupBy` group, of one
`dropDuplicates` subset, of one window partition. They cannot when the rows are already unique on
those columns (after a `groupBy(keys)`, a `distinct`, a `dropDuplicates(subset)`, a join on a
lookup's key), and ties are harmless when the column a rule reads is the same on every tied row
(a group key, a value derived from the keys, a column a lookup joined on the keys brought in).

`deduplicated_on` is the looser question SPX104 asks of a window's partition (a whole-row
`distinct()` counts as the author's sign that duplicates were dealt with).

Everything here is read from literal column names; an expression we cannot read answers "don't
know", which the rules treat as "could tie".
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import libcst as cst

from sparkpar_lint.graph.call_arguments import call_argument
from sparkpar_lint.graph.declared_keys import declared_sets
from sparkpar_lint.graph.minted_keys import minted_sets
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode

_DEDUPLICATING = frozenset({"dropDuplicates", "drop_duplicates", "dropDuplicatesWithinWatermark"})
_DEDUPLICATING_OR_DISTINCT = _DEDUPLICATING | {"distinct"}
# Nondeterministic functions: a column derived with them is no function of its inputs.
_NONDETERMINISTIC = ("rand", "randn", "uuid", "shuffle", "monotonically_increasing_id", "spark_partition_id")


def literal_names(expr: cst.BaseExpression | None) -> list[str] | None:
    """`"a"`, `["a", "b"]`, `("a",)`, `F.col("a")`, `col("a")`: the names; None for anything else."""
    if expr is None:
        return None
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return [value] if isinstance(value, str) else None
    if isinstance(expr, (cst.List, cst.Tuple)):
        names: list[str] = []
        for element in expr.elements:
            inner = literal_names(element.value)
            if inner is None:
                return None
            names += inner
        return names
    if isinstance(expr, cst.Call) and callee(expr) in ("col", "column") and len(expr.args) == 1:
        return literal_names(expr.args[0].value)
    return None


def callee(call: cst.Call) -> str | None:
    """The called name: `lit` for `lit(1)` and `F.lit(1)`."""
    func = call.func
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return None


def join_keys(node: StageNode) -> list[str] | None:
    """The column names a join matches on (`on="k"`, `on=["a", "b"]`), None if not literal."""
    if node.method != "join":
        return None
    return literal_names(call_argument(node.call, 1, "on"))


def _join_how(node: StageNode) -> str:
    how = call_argument(node.call, 2, "how")
    if isinstance(how, cst.SimpleString) and isinstance(how.evaluated_value, str):
        return how.evaluated_value.lower().replace("_", "")
    return "inner"


def output_columns(graph: StageGraph, node: StageNode) -> set[str] | None:
    """The column names a node's output is known to hold, or None when not known."""
    if node.imported is not None:
        return set(node.imported.columns) if node.imported.columns is not None else None
    call = node.call
    if node.method == "select" and call is not None:
        names: set[str] = set()
        for arg in call.args:
            if arg.star:
                return None
            name = _output_name(arg.value)
            if name is None or name == "*":
                return None
            names.add(name)
        return names
    if node.method == "createDataFrame" and call is not None:
        schema = literal_names(call_argument(call, 1, "schema"))
        return set(schema) if schema else None
    if node.method in ("withColumn", "withColumnRenamed") and call is not None and call.args:
        before = _input_columns(graph, node)
        added = literal_names(call.args[1 if node.method == "withColumnRenamed" else 0].value)
        if before is None or not added:
            return None
        if node.method == "withColumnRenamed":
            old = literal_names(call.args[0].value) or []
            before = before - set(old)
        return before | set(added)
    if node.method == "drop" and call is not None and call.args:
        # `drop("a", "b")` by name: what was known, less those (a Column argument is not followed).
        before = _input_columns(graph, node)
        dropped = [literal_names(arg.value) for arg in call.args if not arg.star]
        if before is None or len(dropped) != len(call.args) or not all(d and len(d) == 1 for d in dropped):
            return None
        return before - {d[0] for d in dropped if d}
    if node.method == "load" and node.spec is not None and node.spec.source:
        from sparkpar_lint.graph.query_columns import jdbc_query_columns  # query_columns reads literal_rows

        return jdbc_query_columns(graph, node)
    if node.spec is not None and node.spec.forwarding == "all" and not node.spec.data_args:
        return _input_columns(graph, node)
    if node.method in ("union", "unionAll", "unionByName") and "allowMissingColumns" not in node.keywords:
        return _input_columns(graph, node)  # a union's columns are its first input's
    return None


def _input_columns(graph: StageGraph, node: StageNode) -> set[str] | None:
    upstream = graph.input_of(node)
    return output_columns(graph, upstream) if upstream is not None else None


def _output_name(expr: cst.BaseExpression) -> str | None:
    names = literal_names(expr)
    if names is not None and len(names) == 1:
        return names[0]
    if (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value in ("alias", "name")
    ):
        names = literal_names(expr.args[0].value) if expr.args else None
        return names[0] if names else None
    return None


def unique_sets(graph: StageGraph, node: StageNode, depth: int = 0) -> list[frozenset[str]]:
    """Column sets on which the node's output rows are unique (each set identifies a row)."""
    if node.imported is not None:
        return list(node.imported.unique)
    if depth > 40 or node.spec is None:
        return []
    upstream = graph.input_of(node)
    if node.receiver == "GroupedData" and node.spec.state == "partitioned" and upstream is not None:
        if upstream.method in ("groupBy", "groupby") and upstream.keys and not upstream.columns.calls:
            return [frozenset(upstream.keys)]
        named = _grouping_names(upstream)
        return [frozenset(named)] if named else []
    if node.method in _DEDUPLICATING:
        subset = literal_names(call_argument(node.call, 0, "subset"))
        if subset:
            return [frozenset(subset)]
        columns = _input_columns(graph, node)
        return [frozenset(columns)] if columns else []
    if node.method == "distinct":
        columns = _input_columns(graph, node)
        return [frozenset(columns)] if columns else []
    if upstream is None:
        return declared_sets(graph, node) + minted_sets(graph, node)
    inherited = unique_sets(graph, upstream, depth + 1)
    if node.method == "join":
        keys = join_keys(node)
        others = [graph.node(i) for i in node.inputs[1:]]
        how = _join_how(node)
        # Each left row meets at most one right row when the right side is unique on the join keys.
        if keys and others and how in ("inner", "left", "leftouter", "leftsemi", "leftanti", "semi", "anti"):
            if how in ("leftsemi", "leftanti", "semi", "anti") or any(
                s <= set(keys) for s in unique_sets(graph, others[0], depth + 1)
            ):
                return inherited
        return []
    if node.method == "select":
        if node.selectivity == "any":
            return []  # an `explode` among the columns repeats the other columns' values
        columns = output_columns(graph, node)
        return [s for s in inherited if columns is not None and s <= columns]
    if node.spec.forwarding in ("all", "dropped", "renamed") and node.spec.selectivity in (
        "exactly-one",
        "at-most-one",
    ):
        if node.spec.data_args or node.selectivity == "any":
            return []
        if node.method == "drop" and node.call is not None:
            dropped = set(literal_names(call_argument(node.call, 0, "cols")) or [])
            dropped |= {n for a in node.call.args[1:] for n in (literal_names(a.value) or [])}
            return [s for s in inherited if not s & dropped]
        if node.method == "withColumnRenamed":
            return []
        if node.method == "withColumn":
            return _with_column_sets(node, inherited)
        if node.method in ("filter", "where"):
            return _pinned_sets(node, inherited)
        return inherited
    return []


def _pinned_sets(node: StageNode, inherited: list[frozenset[str]]) -> list[frozenset[str]]:
    """A filter pinning columns of a unique set to one value leaves the rows unique on the rest:
    `withColumn("rn", row_number().over(Window.partitionBy("k")...))` is unique on (k, rn), so
    `filter(col("rn") == 1)` leaves one row per `k` (a set pinned whole stays as it was)."""
    pinned = _equalities(node)
    return [s - pinned if s - pinned else s for s in inherited]


def _grouping_names(group: StageNode) -> list[str] | None:
    """The output names of a `groupBy` whose every key is a name or a named expression
    (`groupBy("product", F.to_date("ts").alias("day"))`): one row per value of them all."""
    if group.method not in ("groupBy", "groupby") or group.call is None or not group.call.args:
        return None
    names = []
    for arg in group.call.args:
        if arg.keyword is not None or arg.star:
            return None
        listed = literal_names(arg.value)
        name = _output_name(arg.value)
        if listed is not None:
            names += listed
        elif name is not None:
            names.append(name)
        else:
            return None
    return names


def _with_column_sets(node: StageNode, inherited: list[frozenset[str]]) -> list[frozenset[str]]:
    """`withColumn(name, value)`: sets holding `name` are gone (it is written over); a value unique
    by construction adds one: `monotonically_increasing_id()` is unique in the frame,
    `row_number()` over a window is unique within the window's partition."""
    if node.call is None:
        return []
    name = literal_names(call_argument(node.call, 0, "colName"))
    value = call_argument(node.call, 1, "col")
    if name is None or len(name) != 1 or value is None:
        return []
    written = name[0]
    kept = [s for s in inherited if written not in s]
    if isinstance(value, cst.Call) and callee(value) == "monotonically_increasing_id" and not value.args:
        return [*kept, frozenset({written})]
    numbering = [c.window for c in node.columns.calls if c.function == "row_number" and c.window is not None]
    if len(numbering) == 1 and len(node.columns.calls) == 1 and isinstance(value, cst.Call) and callee(value) == "over":
        return [*kept, frozenset({*numbering[0].partition_by, written})]
    return kept


def is_unique_on(graph: StageGraph, node: StageNode, columns: Iterable[str]) -> bool:
    """The node's output has at most one row per value of `columns`."""
    wanted = set(columns)
    return any(s <= wanted for s in unique_sets(graph, node))


def constant_within(graph: StageGraph, node: StageNode, keys: tuple[str, ...], column: str) -> str | None:
    """Why `column` has one value among the rows of `node`'s output that share `keys`, or None.

    A key itself; a column derived from the keys alone; a column a join on (a subset of) the keys
    brought in from a lookup; rows already unique on the keys.
    """
    if column in keys:
        return f"`{column}` is a grouping key"
    if is_unique_on(graph, node, keys):
        return f"the rows are already unique on ({', '.join(keys)})"
    for upstream in [node, *graph.upstream(node)]:
        call = upstream.call
        if upstream.method == "withColumn" and call is not None and len(call.args) >= 2:
            if literal_names(call.args[0].value) == [column]:
                used = set(upstream.columns.columns)
                known = _input_columns(graph, upstream)
                if known is not None:
                    used &= known  # string arguments that are not columns: `split("url", "/")`
                deterministic = not any(
                    c.function in _NONDETERMINISTIC or c.udf is not None for c in upstream.columns.calls
                )
                if used <= set(keys) and deterministic and (used or upstream.columns.calls):
                    return f"`{column}` is computed from ({', '.join(sorted(used))}) alone"
                return None  # defined here from something else
        if upstream.method == "select" and call is not None:
            made_here = [a.value for a in call.args if _output_name(a.value) == column]
            if not made_here:
                return None  # dropped by this select
            if literal_names(made_here[0]) != [column]:
                # Computed here: a constant (`lit("x").alias(c)`) is the same on every row.
                return f"`{column}` is a constant" if _constant(made_here[0]) else None
        if upstream.imported is not None:
            # Rows from another module (a helper's result, or what every caller passes).
            for looked_up_on, brought in upstream.imported.lookups:
                if column in brought and set(looked_up_on) <= set(keys):
                    return f"`{column}` comes from a lookup joined on ({', '.join(looked_up_on)})"
            return None
        if upstream.method == "join":
            if _join_how(upstream) in ("leftsemi", "leftanti", "semi", "anti"):
                continue  # adds no columns
            on = join_keys(upstream)
            others = [graph.node(i) for i in upstream.inputs[1:]]
            side = output_columns(graph, others[0]) if others else None
            if side is None:
                return None
            if column in side:
                if on and set(on) <= set(keys):
                    return f"`{column}` comes from a lookup joined on ({', '.join(on)})"
                return None
            continue  # the column comes from the main side
        if upstream.spec is None or upstream.spec.data_args or upstream.receiver == "GroupedData":
            return None
        if upstream.spec.forwarding not in ("all", "selected", "dropped"):
            return None
        if upstream.spec.forwarding == "selected" and upstream.method != "select":
            return None
    return None


def _constant(expr: cst.BaseExpression) -> bool:
    """`F.lit("x").alias("c")`, `lit(1)`: a literal, possibly renamed or cast."""
    while (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value in ("alias", "name", "cast")
    ):
        expr = expr.func.value
    if isinstance(expr, cst.Call) and callee(expr) == "lit" and len(expr.args) == 1:
        return isinstance(expr.args[0].value, (cst.SimpleString, cst.Integer, cst.Float, cst.Name))
    return False


def self_union(graph: StageGraph, node: StageNode) -> bool:
    """`df.union(df)`: every row appears twice, as two identical copies."""
    return (
        node.method in ("union", "unionAll", "unionByName")
        and len(node.inputs) == 2
        and node.inputs[0] == node.inputs[1]
    )


def deduplicated_on(graph: StageGraph, node: StageNode, key: tuple[str, ...]) -> bool:
    """Some stage upstream of `node` leaves one row per value of `key` (or of the whole row), or
    the rows hold a column of `key` the project declares unique."""
    if is_unique_on(graph, node, key):
        return True
    for upstream in graph.upstream(node):
        if upstream.imported is not None and any(s <= set(key) for s in upstream.imported.unique):
            return True
        # An aggregation of grouped rows: one output row per group, carrying only the keys and aggregates.
        grouped = (
            upstream.receiver == "GroupedData" and upstream.spec is not None and upstream.spec.forwarding == "keys"
        )
        if upstream.method in _DEDUPLICATING_OR_DISTINCT or grouped:
            if not upstream.keys or set(upstream.keys) <= set(key):
                return True
    return False


_SQL_EQUALITY = re.compile(r"`?(\w+)`?\s*==?\s*(?:'[^']*'|\"[^\"]*\"|-?\d+(?:\.\d+)?)")


def _equalities(node: StageNode) -> set[str]:
    """Columns a `filter`/`where` pins to one literal value (`"k = 'a'"`, `F.col("k") == 1`)."""
    if node.call is None or not node.call.args:
        return set()
    predicate = node.call.args[0].value
    if isinstance(predicate, cst.SimpleString) and isinstance(predicate.evaluated_value, str):
        text = predicate.evaluated_value
        if re.search(r"\bor\b", text, re.IGNORECASE):
            return set()
        return set(_SQL_EQUALITY.findall(text))
    pinned: set[str] = set()

    def visit(expr: cst.BaseExpression) -> None:
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.BitAnd):
            visit(expr.left)
            visit(expr.right)
        elif (
            isinstance(expr, cst.Comparison)
            and len(expr.comparisons) == 1
            and isinstance(expr.comparisons[0].operator, cst.Equal)
        ):
            sides = (expr.left, expr.comparisons[0].comparator)
            names = [_column_reference(s) for s in sides]
            literal = [_literal(s) for s in sides]
            if names[0] and literal[1]:
                pinned.add(names[0])
            elif names[1] and literal[0]:
                pinned.add(names[1])

    visit(predicate)
    return pinned


def _literal(expr: cst.BaseExpression) -> bool:
    """`1`, `"a"`, `1.5`, or one of them in `lit(...)`."""
    if isinstance(expr, cst.Call) and callee(expr) == "lit" and len(expr.args) == 1:
        expr = expr.args[0].value
    return isinstance(expr, (cst.SimpleString, cst.Integer, cst.Float))


def _column_reference(expr: cst.BaseExpression) -> str | None:
    names = literal_names(expr) if isinstance(expr, cst.Call) else None
    if names and len(names) == 1:
        return names[0]
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
        return expr.attr.value  # df.k
    if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
        inner = expr.slice[0].slice.value
        if isinstance(inner, cst.SimpleString) and isinstance(inner.evaluated_value, str):
            return inner.evaluated_value  # df["k"]
        return None
    return None


def at_most_one_row(graph: StageGraph, node: StageNode) -> bool:
    """The node's output has at most one row: filters pin every column of a set the rows are
    unique on to one value (`groupBy("k")...filter("k = 'a'")`)."""
    pinned: set[str] = set()
    for upstream in [node, *graph.upstream(node)]:
        if upstream.method in ("filter", "where"):
            pinned |= _equalities(upstream)
            continue
        if pinned and is_unique_on(graph, upstream, pinned):
            return True
        if upstream.spec is None or upstream.spec.data_args or upstream.selectivity == "any":
            return False
        if upstream.spec.forwarding not in ("all", "selected", "dropped"):
            return False
    return False
