"""Sorts that can leave rows tied: `orderBy(F.desc("count")).limit(10)` keeps whichever of the
pages tied on the tenth count reach the limit first, and that follows the shuffle. Judged over
groups' aggregates (counts, totals, rates per key), columns named as counts, and literal rows,
where ties are seen.

A sort's columns are a total order only when the rows are unique on them: a grouping key, a
`dropDuplicates` subset, a row number or a sequence id, a declared unique column, or a name that
says it identifies the row. Literal rows are read: ties there are visible or absent.
"""

from __future__ import annotations

import re

import libcst as cst
from sqlglot import exp

from sparkpar_lint.graph.literal_rows import literal_rows, written_columns
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode
from sparkpar_lint.graph.uniqueness import output_columns, unique_sets
from sparkpar_lint.graph.visiting import children

# Names that say a column identifies a row (or a Kafka offset, unique per topic partition).
UNIQUE_NAME = re.compile(r"(^|_)(id|uuid|guid|key|seq|sequence|offset|rownum|row_number)$|[a-z]Id$", re.IGNORECASE)
# Names that say a column holds a count (`click_count`, `cnt`, `num_orders`): small integers that
# tie as often as a group's count does, even when read from a table already counted.
COUNT_NAME = re.compile(r"(^|_)(count|cnt)$|^(count|cnt|num)_", re.IGNORECASE)
# `F.desc("c")`, `F.col("c").asc()`: how to sort by a column, still that column.
_DIRECTIONS = frozenset({"asc", "desc", "asc_nulls_first", "asc_nulls_last", "desc_nulls_first", "desc_nulls_last"})
_NAMING = frozenset({"col", "column"}) | _DIRECTIONS
# Values that number or identify every row they are given to.
_NUMBERING = frozenset({"monotonically_increasing_id", "uuid", "row_number"})
# Stages between a sort and an earlier stage that keep each row or drop some, never add one.
_ROW_KEEPING = frozenset({"exactly-one", "at-most-one"})
_DEPTH = 40


def tied_sort(graph: StageGraph, node: StageNode) -> tuple[StageNode, tuple[str, ...], bool] | None:
    """The total sort whose order `node` reads, its columns, and whether tied rows are seen in
    literal data (True) or only possible (False); None when the order is unique, the sort's
    columns cannot be read, or tied rows would be identical where `node` reads them."""
    order = node.input_order
    if order.kind != "total" or order.established_by is None:
        return None
    sort = graph.node(order.established_by)
    if sort.order_effect != "establishes-total":
        return None
    columns = _sql_sort_terms(sort) if sort.sql is not None else sort_columns(sort.call) if sort.call else None
    rows = graph.input_of(sort)
    if not columns or rows is None or _identifies_rows(graph, rows, columns, folded=sort.sql is not None):
        return None
    reaching = graph.input_of(node)
    kept = output_columns(graph, reaching) if reaching is not None else None
    if kept is not None and kept <= set(columns):
        return None  # the rows that reach the pick hold only the sort's columns: tied rows are equal
    seen = _literal_ties(graph, rows, columns)
    if seen is False or (seen is None and not _aggregated(graph, rows) and not all(map(COUNT_NAME.search, columns))):
        return None
    return sort, columns, seen is True


def sort_columns(call: cst.Call) -> tuple[str, ...] | None:
    """What `orderBy(...)`/`sort(...)` sorts by: the column each argument names (`"c"`,
    `F.desc("c")`, `F.col("c").desc()`, `df.c`, `df["c"]`, a list of these) or the text of a
    computed key (`F.col("a") / F.col("b")`); None when an argument is a name or an attribute
    whose value we do not read (it may hold a tie-breaker)."""
    names: list[str] = []
    for value in (a.value for a in call.args if a.keyword is None and not a.star):
        elements = [e.value for e in value.elements] if isinstance(value, (cst.List, cst.Tuple)) else [value]
        for element in elements:
            name = _plain_column(element) or _computed(element)
            if name is None:
                return None
            names.append(name)
    return tuple(names)


def _computed(expr: cst.BaseExpression) -> str | None:
    """The text of a computed sort key that works out an amount from literal columns
    (`F.col("late") / F.col("total")`, `F.coalesce("a", F.lit(0))`); None for anything else: a
    variable, or a function that may tell rows apart (`struct`, `concat`, `hash`)."""
    for inner in _walk(expr):
        if isinstance(inner, cst.Call):
            func = inner.func
            callee = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
            if callee not in _AMOUNT_FUNCTIONS:
                return None
        elif isinstance(inner, cst.Name) and not _called_name(expr, inner):
            return None  # a variable: its value is not read here
    return cst.Module([]).code_for_node(expr)


# Functions an amount is worked out with (on columns named by literals), and how to sort by it.
_AMOUNT_FUNCTIONS = _NAMING | {"lit", "coalesce", "round", "abs", "cast", "try_divide", "nvl", "ifnull"}


def _walk(expr: cst.CSTNode) -> list[cst.CSTNode]:
    found = [expr]
    for child in children(expr):
        found.extend(_walk(child))
    return found


def _called_name(expr: cst.CSTNode, name: cst.Name) -> bool:
    """`name` names a function (`F`, `col`, `desc`) rather than a value: a callee, a part of a
    called attribute, or the attribute a call reaches a column's method by (`F.col("a").cast`)."""
    for node in _walk(expr):
        if isinstance(node, cst.Attribute) and node.attr is name:
            return True
        if isinstance(node, cst.Call):
            func = node.func
            while isinstance(func, cst.Attribute):
                func = func.value
            if func is name:
                return True
    return False


def _sql_sort_terms(sort: StageNode) -> tuple[str, ...] | None:
    """`ORDER BY views DESC`, `ORDER BY COUNT(*) DESC`: each term's column, or the text of the
    amount it computes; None when a term is anything else (it may tell rows apart)."""
    from sparkpar_lint.sql.computed_order import amount  # only with SQL read: the query was parsed

    order = getattr(sort.sql, "expression", None)
    if not isinstance(order, exp.Order):
        return None
    names: list[str] = []
    for term in order.expressions:
        term = term.this if isinstance(term, exp.Ordered) else term
        term = _projection_at(order, term) or term
        name = term.name if isinstance(term, exp.Column) else amount(term)
        if not name:
            return None
        names.append(name)
    return tuple(names)


def _projection_at(order: exp.Order, term: exp.Expression) -> exp.Expression | None:
    """`ORDER BY 2`: the second projection of the query the order belongs to, as the column it
    names (`SUM(clicks) AS total` is `total`); None when the term is not a position."""
    select = order.parent
    if not isinstance(term, exp.Literal) or term.is_string or not isinstance(select, exp.Select):
        return None
    position = int(term.name) if term.name.isdigit() else 0
    if not 0 < position <= len(select.expressions):
        return None
    projection = select.expressions[position - 1]
    return exp.column(projection.alias) if isinstance(projection, exp.Alias) else projection


def _plain_column(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    if isinstance(expr, cst.Call):
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value in _DIRECTIONS and not expr.args:
            return _plain_column(func.value)  # `F.col("c").desc()`
        callee = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
        if callee in _NAMING and len(expr.args) == 1 and expr.args[0].keyword is None:
            return _plain_column(expr.args[0].value)
        return None
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
        return expr.attr.value  # `df.views`
    if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Name) and len(expr.slice) == 1:
        index = expr.slice[0].slice
        return _plain_column(index.value) if isinstance(index, cst.Index) else None
    return None


def _identifies_rows(graph: StageGraph, rows: StageNode, columns: tuple[str, ...], *, folded: bool) -> bool:
    """The sorted rows are unique on `columns`: known here or at an earlier stage that every row
    passes through once, or a column is a row number or an id. `folded`: SQL, where case does
    not tell names apart."""
    wanted = {c.lower() for c in columns} if folded else set(columns)
    if any(UNIQUE_NAME.search(c.rsplit(".", 1)[-1]) or c.startswith("_sparkpar") for c in columns):
        return True
    current: StageNode | None = rows
    for _ in range(_DEPTH):
        if current is None:
            return False
        unique = [{c.lower() for c in s} if folded else s for s in unique_sets(graph, current)]
        if any(s <= wanted for s in unique) or _numbered(current, wanted):
            return True
        if _whole_rows_distinct(graph, current):
            return True  # distinct rows of columns we cannot list: the sort may be by all of them
        if current.spec is None or current.selectivity not in _ROW_KEEPING or current.spec.data_args:
            return False
        current = graph.input_of(current)
    return False


def _aggregated(graph: StageGraph, rows: StageNode) -> bool:
    """The sorted rows are groups' aggregates (`groupBy(...).count()`, `GROUP BY` in SQL): counts
    and totals over groups tie often (every page seen once counts 1). A column as read from a
    source says nothing about how often its values repeat, so a sort by it is left alone (unless
    its name says it is a count: `COUNT_NAME`)."""
    current: StageNode | None = rows
    for _ in range(_DEPTH):
        if current is None or current.spec is None:
            return False
        if current.receiver == "GroupedData" and current.spec.state == "partitioned":
            return True
        if current.selectivity not in _ROW_KEEPING or current.spec.data_args:
            return False
        current = graph.input_of(current)
    return False


def _whole_rows_distinct(graph: StageGraph, node: StageNode) -> bool:
    """`distinct()`, `UNION` or `dropDuplicates()` over columns the analysis cannot list."""
    whole = node.method == "distinct" or (node.method in ("dropDuplicates", "drop_duplicates") and not node.keys)
    return whole and output_columns(graph, node) is None


def _numbered(node: StageNode, wanted: set[str]) -> bool:
    """`withColumn("rn", F.row_number().over(w))` with `rn` and w's partition columns sorted by,
    or a column of `monotonically_increasing_id()`/`uuid()`: no two rows share those values."""
    if node.method not in ("withColumn", "withColumns"):
        return False
    written = written_columns(node) or []
    if len(written) != 1 or written[0] not in wanted:
        return False
    for call in node.columns.calls:
        if call.function not in _NUMBERING or call.enclosing:
            continue
        window = call.window
        if window is None or set(window.partition_by) <= wanted:
            return True
    return False


def _literal_ties(graph: StageGraph, rows: StageNode, columns: tuple[str, ...]) -> bool | None:
    """Over rows written out in the code: do two different rows share the sort values? None when
    the rows cannot be read."""
    found = literal_rows(graph, rows)
    if found is None:
        return None
    names, values = found
    if not set(columns) <= set(names):
        return None
    at = [names.index(c) for c in columns]
    first_of: dict[str, tuple] = {}
    for row in values:
        key = repr(tuple(row[i] for i in at))
        if key in first_of and first_of[key] != row:
            return True
        first_of.setdefault(key, row)
    return False
