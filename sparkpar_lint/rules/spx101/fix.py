"""SPX101's fixes: the aggregate made to read an order column (the sort's, or a sequence number
added at the source), or one of the answers it could already give; else why not."""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import cast

import libcst as cst

from sparkpar_lint.edits.alias import alias_removal, assigned_name
from sparkpar_lint.edits.chain import drop_call, receiver_of
from sparkpar_lint.edits.code import column_function, column_name, string
from sparkpar_lint.edits.model import SAFE, UNSAFE, Fix, Imports, Replacement
from sparkpar_lint.graph.stage_graph import ColumnCall, StageGraph, StageNode
from sparkpar_lint.model import NoFix
from sparkpar_lint.rules.fixers.ordering import sort_reaches
from sparkpar_lint.rules.fixers.sequence import SEQUENCE_COLUMN, sequence_parts
from sparkpar_lint.rules.fixers.sql import any_answer_fix, lists_in_one_order_fix, ordered_pick_fix
from sparkpar_lint.rules.spx101.aggregates import FIRST, LAST, LISTS, discarded_sort, order_dependent, order_harmless
from sparkpar_lint.sql.site import SqlSite

_Replacements = tuple[tuple[cst.CSTNode, Replacement], ...]


def named_as_before(node: StageNode, call: ColumnCall, fix: Fix | NoFix | None) -> Fix | NoFix | None:
    """The fix with its new aggregate aliased to the name Spark gave the old one, where the old one
    is an unnamed argument of the stage (`agg(F.last("page"))` makes a column `last(page)`, which
    later code, `show()` and writes see): the fixed expression would otherwise be named after its
    own text (`max(struct(ts, page)).page`)."""
    if not isinstance(fix, Fix) or call.call is None or node.call is None or call.function not in _NAMED_BY_SPARK:
        return fix
    if not any(arg.value is call.call for arg in node.call.args) or len(call.call.args) < 1:
        return fix
    column = column_name(call.call.args[0].value)
    if column is None or not column.isidentifier():
        return fix
    name = f"{call.function}({column})"
    replacements = tuple(
        (original, partial(_aliased, new, name) if original is call.call else new) for original, new in fix.replacements
    )
    return replace(fix, replacements=replacements)


def _aliased(new: Replacement, name: str, rewritten: cst.Call) -> cst.CSTNode | cst.RemovalSentinel:
    built = new(rewritten) if callable(new) else new
    if not isinstance(built, cst.BaseExpression):
        return built  # not met: an aggregate is replaced by an expression
    return cst.Call(func=cst.Attribute(value=built, attr=cst.Name("alias")), args=[cst.Arg(string(name))])


# Aggregates whose unnamed column Spark names `function(column)` (checked on Spark 4).
_NAMED_BY_SPARK = {"first", "last", "collect_list"}


def grouped_fix(graph: StageGraph, node: StageNode, call: ColumnCall, sort: StageNode | None) -> Fix | NoFix | None:
    """Replace the aggregate with one that reads an order column instead of the arrival order.

    The order is the upstream sort's columns (safe) or, with no sort, a sequence number added at
    the source (unsafe: arrival order is a choice). The value itself ends the struct, so even
    rows tied on the order columns give one answer.
    """
    if call.sql is not None:
        site = _site(call.sql)
        if sort is not None and sort.sql is not None and sort_reaches(graph, sort, node):
            return ordered_pick_fix(site, _site(sort.sql))
        everyone = _all_siblings(graph, node, call) if sort is None else []
        if everyone:
            siblings = _sql_siblings(graph, node, call)
            if len(siblings) != len(everyone):
                return _SHARED_ORDER  # DataFrame siblings too: no one rewrite reaches them all
            in_order = [cast(SqlSite, c.sql) for c in node.columns.calls if c is call or c in siblings]
            return lists_in_one_order_fix(site, in_order) or _SHARED_ORDER
        return any_answer_fix(site) if sort is None else None
    if call.call is None:
        return None
    direction = _direction(sort) if sort is not None else "asc"
    if sort is not None and sort.keys and direction is None:
        return _extreme_past_placed_nulls(graph, node, call, sort) or _SORT_UNREADABLE
    if sort is not None and (not sort.keys or not sort_reaches(graph, sort, node)):
        return None
    dropped, gone = _dropped_sort(graph, sort, node) if sort is not None else ((), "")
    if len(call.call.args) != 1:
        if sort is not None:
            return _extreme_of_the_sort_column(call, call.call, sort, direction == "desc", dropped, gone)
        return _one_of_its_answers(graph, node, call) if not _pivoted(graph, node) else None
    if sort is not None:
        keys, safety, extra, imports = sort.keys, SAFE, dropped, cast(Imports, ())
    else:
        parts = sequence_parts(graph, node, call.call)
        if parts is None:
            return None if _pivoted(graph, node) else _one_of_its_answers(graph, node, call)
        keys, safety, (extra, imports) = (SEQUENCE_COLUMN,), UNSAFE, parts
    replacement = _ordered_aggregate(call, call.call, keys, direction == "desc")
    if replacement is None:
        return None
    new_call, more, what = replacement
    return Fix(safety, what + gone, ((call.call, new_call), *extra), imports + more)


def _site(sql: object) -> SqlSite | None:
    """A stage's or call's `sql`: a SqlSite where set (typed `object` in the graph, which does not
    import sql/)."""
    return cast(SqlSite | None, sql)


def global_fix(graph: StageGraph, node: StageNode, call: ColumnCall) -> Fix | NoFix | None:
    """A global aggregate reads the order of the sort above it, if any (safe), else takes one of
    its answers."""
    sort = discarded_sort(graph, node)
    if sort is None:
        return _one_of_its_answers(graph, node, call)
    direction = _direction(sort)
    if call.call is None or len(call.call.args) != 1 or not sort.keys or direction is None:
        return None
    if not sort_reaches(graph, sort, node):
        return None
    replacement = _ordered_aggregate(call, call.call, sort.keys, direction == "desc")
    if replacement is None:
        return None
    new_call, imports, what = replacement
    return Fix(SAFE, what, ((call.call, new_call),), imports)


def _pivoted(graph: StageGraph, node: StageNode) -> bool:
    """A pivot's cells often hold maps and structs of maps, which `min`/`max`/`array_sort`
    cannot order (Spark rejects the query), and often hold one value each."""
    source = graph.input_of(node)
    return source is not None and source.method == "pivot"


def _one_of_its_answers(graph: StageGraph, node: StageNode, call: ColumnCall) -> Fix | NoFix | None:
    """With no order anywhere to take (no sort, rows not straight from a source), the answer
    that is one of those the aggregate can already give, whatever the partitioning: `first` →
    `min`, `last` → `max` (a value of one of the group's rows, null only when all are), and
    `collect_list` → `array_sort(collect_list)` (one of its orders). Unsafe: it picks the
    smallest, which may not be the row the author meant.
    """
    if call.from_sql or call.call is None or not call.call.args or not _ignores_nulls_at_most(call.call):
        return None
    siblings = _order_dependent_siblings(graph, node, call)
    if len(siblings) != len(_all_siblings(graph, node, call)):
        return _SHARED_ORDER  # SQL-text siblings too: no one rewrite reaches them all
    if siblings:
        return _one_row_for_all(call, call.call, siblings, list(node.columns.calls))
    value = call.call.args[0].value.deep_clone()
    if call.function in FIRST | LAST:
        chooser = "min" if call.function in FIRST else "max"
        replacement, imports = column_function(call.call, chooser, [value])
        what = f"`{call.function}` → `{chooser}`: no order to read, so the {'smallest' if chooser == 'min' else 'largest'} value"
    elif call.function in LISTS:
        collected, imports = column_function(call.call, call.function, [value])
        replacement, more = column_function(call.call, "array_sort", [collected])
        imports += more
        what = f"`{call.function}` → `array_sort({call.function})`: no order to read, so sorted values"
    else:
        return None
    return Fix(UNSAFE, what + ", one of the answers the job could already give", ((call.call, replacement),), imports)


def _order_dependent_siblings(graph: StageGraph, node: StageNode, call: ColumnCall) -> list[ColumnCall]:
    """The other order-dependent aggregates of the same stage: in the original they all read the
    same arrival order (`first("a")` and `first("b")` come from one row; two `collect_list`s line
    up), which fixes that each choose on their own would break."""
    return [
        other
        for other in node.columns.calls
        if other is not call
        and other.call is not None
        and not other.from_sql
        and order_dependent(other)
        and not order_harmless(graph, node, other)
    ]


def _all_siblings(graph: StageGraph, node: StageNode, call: ColumnCall) -> list[ColumnCall]:
    """The other order-dependent aggregates of the stage, in Python or in SQL text."""
    return [
        other
        for other in node.columns.calls
        if other is not call and order_dependent(other) and not order_harmless(graph, node, other)
    ]


def _sql_siblings(graph: StageGraph, node: StageNode, call: ColumnCall) -> list[ColumnCall]:
    """The other order-dependent aggregates of the same SQL query: `min`/`array_sort` each on its
    own would split values the query takes from the same rows."""
    return [
        other
        for other in node.columns.calls
        if other is not call and other.from_sql and order_dependent(other) and not order_harmless(graph, node, other)
    ]


_SHARED_ORDER = NoFix(
    "the stage has several order-dependent aggregates that read one arrival order together "
    "(their values come from the same rows); one shared order is the author's to choose"
)


def _one_row_for_all(
    call: ColumnCall, aggregate: cst.Call, siblings: list[ColumnCall], node_calls: list[ColumnCall]
) -> Fix | NoFix:
    """`first("a")`, `first("b")` → `F.min(F.struct("a", "b")).getField("a")`, `...getField("b")`:
    every value from the one row that is smallest over all of them, so they still come from one
    row, as in the original. Lists that line up (`collect_list` of two columns) keep no such
    simple form and are left to the author."""
    # One order of the struct's fields for every aggregate of the stage, so all pick the same row.
    calls = [c for c in node_calls if c is call or c in siblings]
    if all(c.function in LISTS for c in calls):
        return _lists_in_one_order(call, aggregate, calls)
    kinds = {c.function in FIRST for c in calls}
    if any(c.function not in FIRST | LAST for c in calls) or len(kinds) != 1:
        return _SHARED_ORDER
    names, own = [], ""
    for c in calls:
        name = column_name(c.call.args[0].value) if c.call is not None and c.call.args else None
        if c.call is None or name is None or "." in name or not _ignores_nulls_at_most(c.call):
            return NoFix("the stage's first/last aggregates read expressions, not plain columns, to take from one row")
        names += [name] if name not in names else []
        own = name if c is call else own
    chooser = "min" if call.function in FIRST else "max"
    row, imports = column_function(aggregate, "struct", [string(n) for n in names])
    picked, more = column_function(aggregate, chooser, [row])
    replacement = cst.Call(func=cst.Attribute(value=picked, attr=cst.Name("getField")), args=[cst.Arg(string(own))])
    what = (
        f"`{call.function}({own})` → `{own}` of the {'smallest' if chooser == 'min' else 'largest'} row "
        f"over ({', '.join(names)}): no order to read, and the stage's values still come from one row"
    )
    return Fix(
        UNSAFE, what + ", one of the answers the job could already give", ((aggregate, replacement),), imports + more
    )


def _lists_in_one_order(call: ColumnCall, aggregate: cst.Call, calls: list[ColumnCall]) -> Fix | NoFix:
    """`collect_list("a")`, `collect_list("b")` → `array_compact(array_sort(collect_list(struct("a",
    "b"))).getField("a"))`, and the same for `b`: both lists in the one order of the sorted rows, each
    without its nulls, which is what the original gives when the rows arrive in that order."""
    names, own = [], ""
    for c in calls:
        name = column_name(c.call.args[0].value) if c.call is not None and len(c.call.args) == 1 else None
        if c.call is None or name is None or "." in name or c.call.args[0].keyword is not None or c.call.args[0].star:
            return NoFix("the stage's lists that line up collect expressions, not plain columns, to sort as one row")
        names += [name] if name not in names else []
        own = name if c is call else own
    row, imports = column_function(aggregate, "struct", [string(n) for n in names])
    collected, more = column_function(aggregate, call.function, [row])
    ordered, sort_imports = column_function(aggregate, "array_sort", [collected])
    values = cst.Call(func=cst.Attribute(value=ordered, attr=cst.Name("getField")), args=[cst.Arg(string(own))])
    # The struct is never null, so the nulls collect_list skips come back unless dropped again.
    replacement, compact_imports = column_function(aggregate, "array_compact", [values])
    what = (
        f"`{call.function}({own})` → `{own}` of the rows sorted by ({', '.join(names)}), nulls left out as "
        "before: no order to read, and the stage's lists still line up"
    )
    return Fix(
        UNSAFE,
        what + ", one of the answers the job could already give",
        ((aggregate, replacement),),
        imports + more + sort_imports + compact_imports,
    )


def _ignores_nulls_at_most(call: cst.Call) -> bool:
    """`first(x)` or `first(x, ignorenulls=True)`: `min(x)` is one of the answers of either."""
    rest = call.args[1:]
    if call.args[0].keyword is not None or call.args[0].star:
        return False
    return (
        all(
            (a.keyword is None or a.keyword.value == "ignorenulls")
            and isinstance(a.value, cst.Name)
            and a.value.value == "True"
            for a in rest
        )
        and len(rest) <= 1
    )


def _ordered_aggregate(
    call: ColumnCall, aggregate: cst.Call, keys: tuple[str, ...], descending: bool = False
) -> tuple[cst.Call, Imports, str] | None:
    """`descending`: every sort column runs from high to low (nulls last, where a struct holding
    a null sorts first: `max` picks the rows a descending sort puts first)."""
    value = aggregate.args[0].value
    name = column_name(value) or _frame_column(value)
    if name is None or (descending and call.function in LISTS):
        return None
    # A value that is a sort column already ends nothing: a second field of that name would make
    # `getField` ambiguous (Spark rejects the query), and ties on the keys are ties on the value.
    fields = [*(string(k) for k in keys), *([] if name in keys else [value.deep_clone()])]
    struct, imports = column_function(aggregate, "struct", fields)
    shown = ", ".join(keys if name in keys else (*keys, name))
    if call.function in FIRST | LAST:
        # min/max of struct(order, value), then the value: what min_by/max_by over that struct
        # would give, measured 1.3x faster on Spark 4.3 (bench/fix_overhead.py).
        chooser = "min" if (call.function in FIRST) != descending else "max"
        extreme, more = column_function(aggregate, chooser, [struct])
        replacement = cst.Call(
            func=cst.Attribute(value=extreme, attr=cst.Name("getField")), args=[cst.Arg(string(name))]
        )
        what = f"`{call.function}` → `{chooser}` of `struct({shown})`"
        return replacement, imports + more, what
    if call.function in LISTS:
        collected, more = column_function(aggregate, "collect_list", [struct])
        ordered, sort_imports = column_function(aggregate, "array_sort", [collected])
        values = cst.Call(func=cst.Attribute(value=ordered, attr=cst.Name("getField")), args=[cst.Arg(string(name))])
        # The struct is never null, so a null value would be kept where collect_list skips it.
        replacement, compact_imports = column_function(aggregate, "array_compact", [values])
        what = f"`{call.function}` → `array_sort` of `struct({shown})`, nulls left out as before"
        return replacement, imports + more + sort_imports + compact_imports, what
    return None


def _dropped_sort(graph: StageGraph, sort: StageNode, node: StageNode) -> tuple[_Replacements, str]:
    """(replacements, words for the description) that remove the sort: once the aggregate reads
    the sort columns, it is work the shuffle throws away. A variable it leaves naming another
    (`ordered = views`) goes too, where nothing else reads it (edits/alias.py)."""
    if sort.call is None or not _sort_only_feeds(graph, sort, node):
        return (), ""
    gone = f"; the `{sort.method}` above is removed (the shuffle discarded its order)"
    receiver = receiver_of(sort.call)
    alias = alias_removal(graph.module, sort.call, receiver) if receiver is not None else None
    if alias is None:
        return ((sort.call, drop_call),), gone
    target = assigned_name(alias[0][0])
    if target is None or not isinstance(receiver, cst.Name):
        return alias, gone  # not met: alias_removal takes only `name = other_name`
    name, aliased = target.value, receiver.value
    if name == aliased:
        return alias, gone + f", and so is the `{name} = {aliased}` it would leave"
    return alias, gone + f", and so is `{name}`, which only renamed `{aliased}`"


def _sort_only_feeds(graph: StageGraph, sort: StageNode, node: StageNode) -> bool:
    """Nothing but this one order-dependent aggregate reads the sorted rows."""
    if sum(order_dependent(c) for c in node.columns.calls) != 1:
        return False
    for upstream in graph.upstream(node):
        if len(graph.consumers(upstream)) != 1:
            return False
        if upstream is sort:
            return True
    return False


def _frame_column(value: cst.BaseExpression) -> str | None:
    """`df.text` or `df["text"]`: a DataFrame's column, named in the struct as `text`."""
    if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name):
        return value.attr.value
    if isinstance(value, cst.Subscript) and isinstance(value.value, cst.Name) and len(value.slice) == 1:
        index = value.slice[0].slice
        if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString):
            name = index.value.evaluated_value
            return name if isinstance(name, str) and name.isidentifier() else None
    return None


_SORT_UNREADABLE = NoFix(
    "the sort orders by an expression, in mixed directions or with its nulls placed explicitly: "
    "no struct of its columns gives that order (use `min_by`/`max_by` on that expression)"
)


def _direction(sort: StageNode) -> str | None:
    """ "asc" or "desc" when every argument of the sort is a plain column (`"ts"`, `col("ts")`)
    running that way (`col("ts").desc()`, `F.desc("ts")`) with the default null placement, and
    they are the sort's keys; None for expressions (`length("name")` orders otherwise than
    `name`), a mix, `ascending=`, or nulls placed explicitly."""
    if sort.call is None or any(a.keyword is not None or a.star for a in sort.call.args):
        return None
    directions, names = set(), []
    for arg in sort.call.args:
        value = arg.value
        elements = [e.value for e in value.elements] if isinstance(value, (cst.List, cst.Tuple)) else [value]
        for element in elements:
            direction, column = "asc", element
            if isinstance(element, cst.Call) and isinstance(element.func, cst.Attribute) and not element.args:
                if element.func.attr.value in ("desc", "asc"):  # col("ts").desc()
                    direction, column = element.func.attr.value, element.func.value
            elif isinstance(element, cst.Call) and len(element.args) == 1:
                func = element.func
                named = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
                if named in ("desc", "asc"):  # F.desc("ts")
                    direction, column = named, element.args[0].value
            names.append(column_name(column) or _frame_column(column))
            directions.add(direction)
    if None in names or tuple(names) != tuple(sort.keys) or len(directions) != 1:
        return None
    return directions.pop()


def _extreme_of_the_sort_column(
    call: ColumnCall, aggregate: cst.Call, sort: StageNode, descending: bool, dropped: _Replacements, gone: str
) -> Fix | None:
    """`first(x, True)` / `last(x, True)` over rows sorted by x first: the first non-null x in
    that order is its smallest (ascending) or largest (descending): `min(x)` / `max(x)`."""
    value = aggregate.args[0].value
    if call.function not in FIRST | LAST or not _ignores_nulls_at_most(aggregate) or column_name(value) != sort.keys[0]:
        return None
    chooser = "min" if (call.function in FIRST) != descending else "max"
    replacement, imports = column_function(aggregate, chooser, [value.deep_clone()])
    what = f"`{call.function}` ignoring nulls after a sort by `{sort.keys[0]}` → `{chooser}({sort.keys[0]})`"
    return Fix(SAFE, what + gone, ((aggregate, replacement), *dropped), imports)


_PLACED_NULLS = {
    "asc_nulls_first": (False, True),
    "asc_nulls_last": (False, False),
    "desc_nulls_first": (True, True),
    "desc_nulls_last": (True, False),
}


def _extreme_past_placed_nulls(graph: StageGraph, node: StageNode, call: ColumnCall, sort: StageNode) -> Fix | None:
    """`first(x)` after a sort by x alone with its nulls placed (`col("x").asc_nulls_last()`):
    the first row holds the smallest x, or null only when every x is, which is `min(x)`; the
    same for `last` with the nulls first, and for either ignoring nulls. Not where the picked end
    holds the nulls (the answer is null as soon as one x is)."""
    placed = _nulls_placed(sort)
    if placed is None or call.call is None or not call.call.args or not sort_reaches(graph, sort, node):
        return None
    descending, nulls_first = placed
    value = call.call.args[0].value
    if call.function not in FIRST | LAST or not _ignores_nulls_at_most(call.call) or column_name(value) != sort.keys[0]:
        return None
    front = call.function in FIRST
    if len(call.call.args) == 1 and front == nulls_first:
        return None
    dropped, gone = _dropped_sort(graph, sort, node)
    chooser = "min" if front != descending else "max"
    replacement, imports = column_function(call.call, chooser, [value.deep_clone()])
    what = f"`{call.function}` after a sort by `{sort.keys[0]}` with its nulls placed → `{chooser}({sort.keys[0]})`"
    return Fix(SAFE, what + gone, ((call.call, replacement), *dropped), imports)


def _nulls_placed(sort: StageNode) -> tuple[bool, bool] | None:
    """(descending, nulls first) for a sort by one plain column with its nulls placed
    (`col("x").asc_nulls_last()`, `F.desc_nulls_first("x")`), else None."""
    if sort.call is None or len(sort.call.args) != 1 or len(sort.keys) != 1:
        return None
    arg = sort.call.args[0]
    element = arg.value
    if arg.keyword is not None or arg.star or not isinstance(element, cst.Call):
        return None
    func = element.func
    name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
    if name not in _PLACED_NULLS:
        return None
    if isinstance(func, cst.Attribute) and not element.args:
        column = func.value  # col("x").asc_nulls_last()
    elif len(element.args) == 1 and element.args[0].keyword is None:
        column = element.args[0].value  # F.asc_nulls_last("x")
    else:
        return None
    if (column_name(column) or _frame_column(column)) != sort.keys[0]:
        return None
    return _PLACED_NULLS[name]
