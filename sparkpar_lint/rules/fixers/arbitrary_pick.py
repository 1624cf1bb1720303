"""A deterministic order for a pick of rows that had none (SPX106's last resort).

With no sort to restore and no arrival order to number, which rows `limit(n)` keeps follows
partition arrival: any n of its input rows is an answer the job can already give. A total order
before the pick keeps the job's contract and gives one answer under every partitioning. It is
a deterministic choice, not the author's (the busiest pages, the latest events), so the fixes
built from it are unsafe and say so.

- rows unique on some columns (one row per `groupBy` key, a `dropDuplicates` subset): those
  columns, which Spark can always order (it cannot group or deduplicate by a map);
- an RDD of pairs with one element per key (`reduceByKey`, `groupByKey`, ...): `takeOrdered` by
  the key, None first (Python 3 compares no None with a value); an RDD of literal numbers or
  strings: `takeOrdered` as they are;
- SQL text: `ORDER BY` the `GROUP BY` keys before the `LIMIT`.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import libcst as cst
import libcst.matchers as m

from sparkpar_lint.edits.model import UNSAFE, Fix
from sparkpar_lint.graph.forwarding import changed_columns
from sparkpar_lint.graph.order_flow import unordering_shuffle
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode
from sparkpar_lint.graph.uniqueness import is_unique_on, literal_names
from sparkpar_lint.model import NoFix
from sparkpar_lint.sql.site import SqlSite

if TYPE_CHECKING:  # sqlglot loads only with SQL to read
    from sqlglot import exp

REVIEW = "a deterministic pick, not a chosen one: replace it with the order you mean (e.g. the count, descending)"

# Shuffles whose output has one row per key, and where that key comes from.
_ONE_ROW_PER_KEY = frozenset({"groupBy", "groupby", "dropDuplicates", "drop_duplicates", "distinct"})
# RDD aggregations that leave one (key, value) element per key.
_ONE_PAIR_PER_KEY = frozenset({"reduceByKey", "foldByKey", "aggregateByKey", "combineByKey", "groupByKey"})
# RDD stages that keep elements as they are (filter, move them between partitions) or their keys.
_KEEPS_ELEMENTS = frozenset({"filter", "distinct", "repartition", "coalesce", "cache", "persist"})
_KEEPS_KEYS = _KEEPS_ELEMENTS | {"mapValues", "partitionBy"}
_KEY_NAMES = ("pair", "kv", "element", "item")


def unique_key_order(graph: StageGraph, node: StageNode) -> tuple[str, ...] | None:
    """The columns the rows reaching `node` are unique on, in the author's key order, when a
    shuffle made them so and no stage since rewrites, renames or drops one; else None."""
    rows = graph.input_of(node)
    shuffle = unordering_shuffle(graph, node)
    if rows is None or shuffle is None or shuffle.method not in _ONE_ROW_PER_KEY or rows.streaming:
        return None
    keys = shuffle.keys
    if not keys and shuffle.method in ("dropDuplicates", "drop_duplicates") and shuffle.call is not None:
        keys = tuple(literal_names(shuffle.call.args[0].value) or ()) if shuffle.call.args else ()
    if not keys or any(not isinstance(k, str) or not k or k == "*" for k in keys):
        return None
    for stage in graph.upstream(node):
        if stage is shuffle:
            break
        if changed_columns(stage, tuple(keys)) or (stage.method == "withColumn" and _unnamed(stage)):
            return None
    return tuple(keys) if is_unique_on(graph, rows, keys) else None


def _unnamed(stage: StageNode) -> bool:
    """`withColumn(name_var, ...)`: which column it overwrites cannot be read."""
    args = stage.call.args if stage.call is not None else ()
    return not args or literal_names(args[0].value) is None


def rdd_take_ordered(graph: StageGraph, node: StageNode) -> Fix | NoFix:
    """`rdd.take(n)` -> `rdd.takeOrdered(n, key=...)`, or why not."""
    if node.method != "take" or node.call is None or not isinstance(node.call.func, cst.Attribute):
        return NoFix(f"`{node.method}` on an RDD: only `take(n)` becomes `takeOrdered(n)`")
    if len(node.call.args) != 1 or node.call.args[0].keyword is not None:
        return NoFix("`take` with arguments other than a count")
    shuffle = unordering_shuffle(graph, node)
    between = []
    for stage in graph.upstream(node):
        if stage is shuffle:
            break
        between.append(stage)
    if shuffle is not None and shuffle.method in _ONE_PAIR_PER_KEY and all(s.method in _KEEPS_KEYS for s in between):
        name = next((n for n in _KEY_NAMES if n not in _bound_names(graph)), None)
        if name is None:
            return NoFix("no free name for `takeOrdered`'s key function")
        element = cst.Name(name)
        first = cst.Subscript(element, [cst.SubscriptElement(cst.Index(cst.Integer("0")))])
        none_first = cst.Comparison(first, [cst.ComparisonTarget(cst.IsNot(), cst.Name("None"))])
        key = cst.Lambda(
            cst.Parameters([cst.Param(element)]), cst.Tuple([cst.Element(none_first), cst.Element(first.deep_clone())])
        )
        description = (
            f"`take` -> `takeOrdered` by the key (`{shuffle.method}` leaves one pair per key; keys of one "
            f"orderable type, None first): {REVIEW}"
        )
        return Fix(UNSAFE, description, ((node.call, partial(_take_ordered, key)),))
    if _literal_scalars(graph, node):
        description = f"`take` -> `takeOrdered` (literal numbers or strings, which Python orders): {REVIEW}"
        return Fix(UNSAFE, description, ((node.call, partial(_take_ordered, None)),))
    return NoFix(
        "`take` on an RDD whose elements may not compare in Python (None and a value, mixed types): "
        "`takeOrdered` needs a key, which is the author's to pick"
    )


def _take_ordered(key: cst.Lambda | None, call: cst.Call) -> cst.Call:
    """`take(n)` -> `takeOrdered(n, key=key)` on the call as other fixes left it."""
    args = list(call.args)
    if key is not None:
        last = args[-1]
        if last.comma is cst.MaybeSentinel.DEFAULT:
            args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        args.append(
            cst.Arg(
                key, keyword=cst.Name("key"), equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))
            )
        )
    func = call.func
    assert isinstance(func, cst.Attribute)  # checked on the original: fixes keep the method call
    return call.with_changes(func=func.with_changes(attr=cst.Name("takeOrdered")), args=args)


def _bound_names(graph: StageGraph) -> set[str]:
    module = graph.module
    if module is None:
        return set(_KEY_NAMES)  # cannot tell: take none
    return {n.value for n in m.findall(module, m.Name()) if isinstance(n, cst.Name)}


def _literal_scalars(graph: StageGraph, node: StageNode) -> bool:
    """The RDD holds the elements of `parallelize(range(...))` or of a literal list of numbers
    (or of strings), moved or filtered but not changed."""
    chain = list(graph.upstream(node))
    if not chain or any(s.method not in _KEEPS_ELEMENTS for s in chain[:-1]):
        return False
    source = chain[-1]
    if source.method != "parallelize" or source.call is None or not source.call.args:
        return False
    data = source.call.args[0].value
    if isinstance(data, cst.Call) and isinstance(data.func, cst.Name) and data.func.value == "range":
        return "range" not in getattr(graph.imports, "names", {}) and _builtin_range(graph)
    if isinstance(data, (cst.List, cst.Tuple)) and data.elements:
        values = [e.value for e in data.elements if not isinstance(e, cst.StarredElement)]
        if len(values) != len(data.elements):
            return False
        numbers = all(isinstance(v, (cst.Integer, cst.Float)) for v in values)
        # Not bytes beside str: Python compares neither with the other.
        return numbers or all(isinstance(v, cst.SimpleString) and isinstance(v.evaluated_value, str) for v in values)
    return False


def _builtin_range(graph: StageGraph) -> bool:
    """No assignment, parameter or definition in the module rebinds `range`."""
    module = graph.module
    if module is None:
        return False
    rebinding = (
        m.AssignTarget(target=m.Name("range"))
        | m.Param(name=m.Name("range"))
        | m.FunctionDef(name=m.Name("range"))
        | m.ClassDef(name=m.Name("range"))
    )
    return not m.findall(module, rebinding)


def sql_limit_order(graph: StageGraph, node: StageNode) -> Fix | NoFix:
    """`... GROUP BY page LIMIT 10` -> `... GROUP BY page ORDER BY page LIMIT 10` (the keys the
    LIMIT's rows are unique on), on a line of its own when the LIMIT starts its line; or why not."""
    from sqlglot import exp
    from sqlglot.tokens import TokenType

    from sparkpar_lint.sql.literal_edit import rewrite

    site = node.sql
    keys = unique_key_order(graph, node)
    why = "a LIMIT in SQL text with no ORDER BY to restore"
    if keys is None:
        return NoFix(
            f"{why}, over rows unique on no columns the query keeps: which rows to keep is the author's choice"
        )
    select = site.expression if isinstance(site, SqlSite) else None
    if not isinstance(site, SqlSite) or not isinstance(select, exp.Select) or site.literal is None:
        return NoFix(f"{why}, in a query this fix cannot edit")
    if not site.parsed.rewritable:
        return NoFix("the SQL holds `${...}`/`IDENTIFIER(...)` templates, and no fix is built from them")
    if any(not k.replace("_", "a").isalnum() or k[0].isdigit() for k in keys) or not _output_keys(select, keys):
        return NoFix(f"{why}, and a key is no plain column name of its output")
    where = site.parsed.clause(select, TokenType.LIMIT)
    if where is None:
        return NoFix(f"{why}, with no LIMIT keyword to place the order before")
    text = site.parsed.text
    line_start = text.rfind("\n", 0, where[0]) + 1
    before = text[line_start : where[0]]
    order = f"ORDER BY {', '.join(keys)}"
    insert = f"{order}\n{before}" if not before.strip() else f"{order} "
    literal = rewrite(site.literal, text, [(where[0], where[0], insert)])
    if not isinstance(literal, cst.CSTNode):
        return literal
    description = f"SQL: `{order}` before the LIMIT (one row per key): {REVIEW}"
    return Fix(UNSAFE, description, ((site.literal, literal),))


def _output_keys(select: exp.Select, keys: tuple[str, ...]) -> bool:
    """Every key is an output column of the query, the key itself: `ORDER BY` reads output names
    first, so a computed column named like a key would be read instead, and a key the output
    lacks could name a column of two joined tables."""
    from sqlglot import exp

    plain = set()
    for projection in select.expressions:
        if isinstance(projection, exp.Star) and not select.args.get("joins"):
            return True  # every column of the one table read, the keys among them
        inner = projection.this if isinstance(projection, exp.Alias) else projection
        if isinstance(inner, exp.Column) and inner.name.lower() == projection.alias_or_name.lower():
            plain.add(inner.name.lower())
        elif projection.alias_or_name.lower() in {k.lower() for k in keys}:
            return False
    return all(k.lower() in plain for k in keys)
