"""Stage-graph nodes for a SQL query, with spans inside the string or cell that holds it.

A query becomes the chain a DataFrame program would build: source (a table, a temp view a Python
DataFrame registered, a CTE, a subquery) -> join -> groupBy/agg -> select (windows) -> distinct ->
orderBy -> limit. The nodes use the catalogue's DataFrame operators, so order flow and the rules
treat them exactly as they treat Python chains. They carry no CST call: fixes for SQL are textual.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst
from sqlglot import exp
from sqlglot.tokens import TokenType

from sparkpar_lint.graph.stage_graph import (
    ColumnCall,
    ColumnExpr,
    SqlProjection,
    StageNode,
    WindowSpecValue,
)
from sparkpar_lint.model import Span
from sparkpar_lint.sql.parse import ParsedSql
from sparkpar_lint.sql.site import SqlSite
from sparkpar_lint.sql.text import SqlText

if TYPE_CHECKING:
    from sparkpar_lint.catalogue import Catalogue
    from sparkpar_lint.graph.stage_graph import StageGraph


@dataclass
class SqlContext:
    """What one SQL string needs from the graph builder."""

    parsed: ParsedSql
    text: SqlText
    graph: StageGraph
    catalogue: Catalogue
    derive_flow: Callable[[StageNode], None]
    # Temp views registered so far: lower-cased name -> (node id, read as a stream?).
    views: dict[str, tuple[int, bool]]
    literal: cst.BaseExpression | None = None  # the one plain string literal holding the SQL, when fixes may edit it
    ctes: dict[str, int] = field(default_factory=dict)
    batch_reads: set[int] = field(default_factory=set)  # streaming nodes a view reads as a batch

    def site(self, expression: exp.Expr) -> SqlSite:
        # SqlSite types its node as Expression, but sqlglot 30's Func (every call) is an Expr
        # only; widening SqlSite reaches its readers in rules/fixers, a change of its own.
        return SqlSite(self.parsed, expression, self.literal, self.text)  # type: ignore[arg-type]

    def span(self, offsets: tuple[int, int] | None) -> Span:
        if offsets is None:
            first = self.parsed.tokens[0] if self.parsed.tokens else None
            offsets = (first.start, first.end + 1) if first else (0, 0)
        return self.text.span(*offsets)

    def add(
        self,
        kind: str,
        method: str,
        inputs: list[int | None],
        span: Span,
        keys: tuple[str, ...] = (),
        calls: Sequence[ColumnCall] = (),
        site: exp.Expr | None = None,
        projection: SqlProjection | None = None,
        names: tuple[str, ...] = (),
        keywords: Mapping[str, str] | None = None,
    ) -> StageNode:
        node = StageNode(
            id=0,
            receiver=kind,
            method=method,
            spec=self.catalogue.operator(kind, method),
            span=span,
            inputs=[i for i in inputs if i is not None],
            # SQL over a streaming temp view is a streaming query.
            streaming=any(self.graph.node(i).streaming for i in inputs if i is not None and i not in self.batch_reads),
            keys=tuple(keys),
            # `names`: columns the stage reads besides its keys (a WHERE's, a join condition's).
            columns=ColumnExpr(tuple(calls), tuple(keys) + tuple(names)),
            positional_count=len(keys),
            sql=self.site(site) if site is not None else None,
            projection=projection,
        )
        node.keywords.update(keywords or {})
        self.graph.add(node)
        self.derive_flow(node)
        return node


def run_statements(ctx: SqlContext) -> int | None:
    """Nodes for every statement; the node id of the last query's result (None: no DataFrame)."""
    result = None
    for statement in ctx.parsed.statements:
        result = _statement(ctx, statement)
    return result


def _statement(ctx: SqlContext, statement: exp.Expr) -> int | None:
    if isinstance(statement, exp.Create) and statement.expression is not None:
        node = query(ctx, statement.expression)
        name = statement.this.name if isinstance(statement.this, exp.Table) else None
        if name and node is not None and str(statement.kind).upper() == "VIEW":
            ctx.views[name.lower()] = (node, ctx.graph.node(node).streaming)
        return None
    if isinstance(statement, (exp.Query, exp.Subquery)):
        return query(ctx, statement)
    # INSERT INTO/OVERWRITE ... <query> and MERGE INTO ... USING (<query>): the query's rows are
    # what gets written, so its order questions are the job's.
    if isinstance(statement, exp.Insert) and isinstance(statement.expression, (exp.Query, exp.Subquery)):
        _insert(ctx, statement, query(ctx, statement.expression))
    elif isinstance(statement, exp.Merge) and isinstance(statement.args.get("using"), exp.Subquery):
        query(ctx, statement.args["using"])
    return None


def _insert(ctx: SqlContext, statement: exp.Insert, rows: int | None) -> None:
    """`INSERT INTO t <query>` is `rows.write.insertInto(t)` (an append); `INSERT OVERWRITE` is
    `insertInto(t, overwrite=True)`. The write stage is what the state rules judge (SPX205)."""
    if rows is None:
        return
    writer = ctx.add("Writer", "insertInto", [rows], ctx.span(_insert_keyword(ctx, statement)))
    if statement.args.get("overwrite"):
        writer.keywords["overwrite"] = "True"


def _insert_keyword(ctx: SqlContext, statement: exp.Insert) -> tuple[int, int] | None:
    """From `INSERT` to the end of the target's name: `INSERT INTO db.log`."""
    target = statement.this.this if isinstance(statement.this, exp.Schema) else statement.this
    name = ctx.parsed.name_range(target.this) if isinstance(target, exp.Table) else None
    if name is None:
        return None
    inserts = [t for t in ctx.parsed.tokens if t.token_type == TokenType.INSERT and t.start < name[0]]
    return (inserts[-1].start, name[1]) if inserts else name


def query(ctx: SqlContext, node: exp.Expr) -> int | None:
    if isinstance(node, exp.Subquery):
        return query(ctx, node.this)
    with_ = node.args.get("with_") or node.args.get("with")
    if with_ is not None:
        for cte in with_.expressions:
            built = query(ctx, cte.this)
            if built is not None:
                ctx.ctes[cte.alias_or_name.lower()] = built
    if isinstance(node, exp.SetOperation):
        left, right = query(ctx, node.this), query(ctx, node.expression)
        method = (
            "union" if isinstance(node, exp.Union) else "intersect" if isinstance(node, exp.Intersect) else "subtract"
        )
        current: int | None = ctx.add("DataFrame", method, [left, right], ctx.span(_set_keyword(ctx, node))).id
        if isinstance(node, exp.Union) and node.args.get("distinct"):
            # Plain UNION removes duplicates: a shuffle, unlike UNION ALL.
            current = ctx.add("DataFrame", "distinct", [current], ctx.span(_set_keyword(ctx, node))).id
        return _order_and_limit(ctx, node, current)
    if not isinstance(node, exp.Select):
        return None
    current = _from(ctx, node)
    for join in node.args.get("joins") or []:
        right = _relation(ctx, join.this)
        condition = [e for e in (join.args.get("on"), *(join.args.get("using") or [])) if e is not None]
        current = ctx.add(
            "DataFrame",
            "join",
            [current, right],
            ctx.span(_name_of(ctx, join.this)),
            calls=calls_in(ctx, condition, {}),
            names=_columns_in(condition),
        ).id
    current = _where(ctx, node, current)
    current = _aggregate_and_windows(ctx, node, current)
    if node.args.get("distinct") is not None:
        current = ctx.add("DataFrame", "distinct", [current], ctx.span(ctx.parsed.clause(node, TokenType.DISTINCT))).id
    current = _partition_count_hints(ctx, node, current)
    current = _distribution(ctx, node, current)
    return _order_and_limit(ctx, node, current)


def _distribution(ctx: SqlContext, select: exp.Select, current: int | None) -> int | None:
    """`DISTRIBUTE BY k` is `repartition(k)`, `SORT BY k` is `sortWithinPartitions(k)`, and
    `CLUSTER BY k` is both; Spark applies them to the SELECT's output, before LIMIT."""
    cluster = select.args.get("cluster")
    distribute = cluster or select.args.get("distribute")
    if distribute is not None:
        keys = tuple(_column_name(_unordered(e)) for e in distribute.expressions)
        kind = TokenType.CLUSTER_BY if cluster is not None else TokenType.DISTRIBUTE_BY
        calls = calls_in(ctx, [_unordered(e) for e in distribute.expressions], {})
        span = ctx.span(ctx.parsed.clause(select, kind))
        current = ctx.add("DataFrame", "repartition", [current], span, keys=keys, calls=calls, site=distribute).id
    sort = cluster or select.args.get("sort")
    if sort is not None:
        keys = tuple(_column_name(_unordered(e)) for e in sort.expressions)
        kind = TokenType.CLUSTER_BY if cluster is not None else TokenType.SORT_BY
        span = ctx.span(ctx.parsed.clause(select, kind))
        # CLUSTER BY's calls are the repartition's already: one call, one ColumnCall.
        calls = calls_in(ctx, [_unordered(e) for e in sort.expressions], {}) if cluster is None else []
        current = ctx.add("DataFrame", "sortWithinPartitions", [current], span, keys=keys, calls=calls).id
    return current


# Partitioning hints that only set a partition count: `/*+ COALESCE(n) */`, `/*+ REPARTITION(n) */`.
_COUNT_HINTS = {"coalesce": "coalesce", "repartition": "repartition"}


def _partition_count_hints(ctx: SqlContext, select: exp.Select, current: int | None) -> int | None:
    """`SELECT /*+ COALESCE(1) */ ...` is `.coalesce(1)` on the SELECT's result, under its
    ORDER BY, DISTRIBUTE BY and LIMIT (Spark wraps the query specification in the hint). Hints
    with columns (`REPARTITION(8, k)`, `REBALANCE`, `REPARTITION_BY_RANGE`) are not modelled."""
    hint = select.args.get("hint")
    if hint is None or current is None:
        return current
    for item in hint.expressions:
        name = "coalesce" if isinstance(item, exp.Coalesce) else item.name.lower()
        arguments = [item.this] if isinstance(item, exp.Coalesce) else list(item.expressions)
        if name not in _COUNT_HINTS or len(arguments) != 1 or not isinstance(arguments[0], exp.Literal):
            continue
        if arguments[0].is_string:
            continue
        span = ctx.span(ctx.parsed.clause(select, TokenType.HINT))
        count = {"numPartitions": arguments[0].name}
        current = ctx.add("DataFrame", _COUNT_HINTS[name], [current], span, keywords=count).id
    return current


def _where(ctx: SqlContext, select: exp.Select, current: int | None) -> int | None:
    """`WHERE cond` is `filter(cond)`, applied after the joins and before any grouping."""
    where = select.args.get("where")
    if where is None:
        return current
    span = ctx.span(ctx.parsed.clause(select, TokenType.WHERE))
    calls = calls_in(ctx, [where.this], {})
    return ctx.add("DataFrame", "filter", [current], span, calls=calls, names=_columns_in([where.this])).id


def _columns_in(roots: list[exp.Expr]) -> tuple[str, ...]:
    """Column names read in `roots`, outside nested queries."""
    names = []
    for root in roots:
        stack = [root]
        while stack:
            node = stack.pop()
            if isinstance(node, (exp.Query, exp.Subquery)) and node is not root:
                continue
            if isinstance(node, (exp.Column, exp.Identifier)) and node.name and not isinstance(node.parent, exp.Column):
                names.append(node.name)
                continue
            stack.extend(node.iter_expressions())
    return tuple(dict.fromkeys(names))


def _unordered(node: exp.Expr) -> exp.Expr:
    return node.this if isinstance(node, exp.Ordered) else node


def _from(ctx: SqlContext, select: exp.Select) -> int | None:
    source = select.args.get("from_") or select.args.get("from")
    return _relation(ctx, source.this) if source is not None else None


def _relation(ctx: SqlContext, relation: exp.Expr) -> int | None:
    if isinstance(relation, exp.Subquery):
        return query(ctx, relation.this)
    if isinstance(relation, exp.Table) and isinstance(relation.this, exp.Identifier):
        name = relation.name.lower()
        if not relation.db and name in ctx.ctes:
            return ctx.ctes[name]
        if not relation.db and name in ctx.views:
            node, streaming = ctx.views[name]
            if not streaming:
                ctx.batch_reads.add(node)
            return node
        return ctx.add("SparkSession", "table", [], ctx.span(_name_of(ctx, relation))).id
    return None


def _aggregate_and_windows(ctx: SqlContext, select: exp.Select, current: int | None) -> int | None:
    plain, windowed = _calls(ctx, select)
    projection = _projection(select)
    group = select.args.get("group")
    aggregated = any(c.spec is not None and c.spec.aggregate for c in plain)
    if group is not None:
        keys = tuple(_column_name(e) for e in group.expressions)
        group_span = ctx.span(ctx.parsed.clause(select, TokenType.GROUP_BY))
        grouped = ctx.add(
            "DataFrame", "groupBy", [current], group_span, keys=keys, calls=calls_in(ctx, group.expressions, {})
        )
        current = ctx.add("GroupedData", "agg", [grouped.id], group_span, keys=keys, calls=plain).id
    elif aggregated:
        current = ctx.add("DataFrame", "agg", [current], ctx.span(_select_keyword(ctx, select)), calls=plain).id
    elif plain or windowed or _rewrites_partition_keys(ctx, current, projection):
        span = ctx.span(_select_keyword(ctx, select))
        current = ctx.add("DataFrame", "select", [current], span, calls=plain, projection=projection).id
        plain = []
    if windowed:
        current = ctx.add("DataFrame", "select", [current], ctx.span(_select_keyword(ctx, select)), calls=windowed).id
    return current


def _projection(select: exp.Select) -> SqlProjection:
    passed: set[str] = set()
    defined: set[str] = set()
    star = False
    for item in select.expressions:
        value = item.this if isinstance(item, exp.Alias) else item
        if isinstance(value, exp.Star) or (isinstance(value, exp.Column) and isinstance(value.this, exp.Star)):
            star = True
        elif isinstance(value, exp.Column) and item.alias_or_name.lower() == value.name.lower():
            passed.add(value.name.lower())
        elif item.alias_or_name:
            defined.add(item.alias_or_name.lower())
    return SqlProjection(frozenset(passed), frozenset(defined - passed), star)


def _rewrites_partition_keys(ctx: SqlContext, current: int | None, projection: SqlProjection) -> bool:
    """A SELECT with no function calls still needs a stage when it renames or drops a column its
    input is hash-partitioned by (SPX302 reads it)."""
    if current is None:
        return False
    partitioning = ctx.graph.node(current).output_partitioning
    return partitioning.kind == "hash" and any(projection.changes(k) for k in partitioning.keys)


def _order_and_limit(ctx: SqlContext, node: exp.Expr, current: int | None) -> int | None:
    order = node.args.get("order")
    if order is not None:
        keys = tuple(_column_name(o.this) for o in order.expressions)
        span = ctx.span(ctx.parsed.clause(node, TokenType.ORDER_BY))
        calls = calls_in(ctx, [o.this for o in order.expressions], {})
        current = ctx.add("DataFrame", "orderBy", [current], span, keys=keys, site=order, calls=calls).id
    if node.args.get("limit") is not None:
        current = ctx.add(
            "DataFrame", "limit", [current], ctx.span(ctx.parsed.clause(node, TokenType.LIMIT)), site=node
        ).id
    return current


def _calls(ctx: SqlContext, select: exp.Select) -> tuple[list[ColumnCall], list[ColumnCall]]:
    """Known functions in the select list and HAVING: (plain calls, calls over a window)."""
    named = {w.alias_or_name.lower(): w for w in select.args.get("windows") or [] if isinstance(w, exp.Window)}
    roots = [*select.expressions]
    if select.args.get("having") is not None:
        roots.append(select.args["having"])
    calls = calls_in(ctx, roots, named)
    return [c for c in calls if c.window is None], [c for c in calls if c.window is not None]


def calls_in(ctx: SqlContext, roots: list[exp.Expr], named: dict[str, exp.Window]) -> list[ColumnCall]:
    """ColumnCalls for every catalogued function in `roots` (windows resolved against `named`)."""
    functions = ctx.catalogue.functions
    calls = []
    for root in roots:
        for func in _own_functions(root):
            name = _function_name(ctx, func)
            spec = functions.get(name)
            if spec is None:
                continue
            window = window_of(func)
            calls.append(
                ColumnCall(
                    function=name,
                    span=ctx.span(ctx.parsed.call_range(func) or ctx.parsed.name_range(func)),
                    spec=spec,
                    enclosing=tuple(
                        n for n in (_function_name(ctx, f) for f in _enclosing(func, root)) if n in functions
                    ),
                    window=_window_spec(ctx, window, named) if window is not None else None,
                    from_sql=True,
                    sql=ctx.site(func),
                )
            )
    return calls


def window_of(func: exp.Expr) -> exp.Window | None:
    """The OVER clause `func` is the function of: `last_value(x) IGNORE NULLS OVER (...)` wraps
    the call in IgnoreNulls first."""
    held = func.parent if isinstance(func.parent, (exp.IgnoreNulls, exp.RespectNulls)) else func
    window = held.parent
    return window if isinstance(window, exp.Window) and window.this is held else None


def _own_functions(root: exp.Expr) -> Iterator[exp.Func]:
    """Function calls in `root`, not inside a nested query (that query has its own nodes)."""
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, (exp.Query, exp.Subquery)) and node is not root:
            continue
        if isinstance(node, exp.Func):
            yield node
        stack.extend(reversed(list(node.iter_expressions())))


def _enclosing(func: exp.Expr, root: exp.Expr) -> list[exp.Func]:
    found, node = [], func.parent
    while node is not None and node is not root.parent:
        if isinstance(node, exp.Func):
            found.append(node)
        node = node.parent
    return list(reversed(found))


def _function_name(ctx: SqlContext, func: exp.Func) -> str:
    where = ctx.parsed.name_range(func)
    if where is not None:
        return ctx.parsed.text[where[0] : where[1]].lower()
    if isinstance(func, exp.Anonymous):
        return func.name.lower()
    return func.sql_name().lower()


def _window_spec(ctx: SqlContext, window: exp.Window, named: dict[str, exp.Window]) -> WindowSpecValue:
    partition = list(window.args.get("partition_by") or [])
    order = window.args.get("order")
    frame = window.args.get("spec")
    base = named.get(window.alias.lower()) if isinstance(window.args.get("alias"), exp.Identifier) else None
    if base is not None:
        partition = partition or list(base.args.get("partition_by") or [])
        order = order or base.args.get("order")
        frame = frame or base.args.get("spec")
    ordered = [o.this for o in order.expressions] if order is not None else []
    spec = WindowSpecValue(
        partition_by=tuple(_column_name(p) for p in partition),
        order_by=tuple(_column_name(o) for o in ordered if isinstance(o, exp.Column)),
        has_partition=bool(partition),
        has_order=bool(ordered),
        has_frame=frame is not None,
        span=ctx.span(ctx.parsed.name_range(window.this)),
        order_constant=bool(ordered) and all(isinstance(o, exp.Literal) for o in ordered),
        order_opaque=any(not isinstance(o, (exp.Column, exp.Literal)) for o in ordered),
    )
    if not partition:
        # A window over every row: one partition computes it (SPX401 reads the graph's specs).
        ctx.graph.window_specs.append(spec)
    return spec


def _column_name(node: exp.Expr) -> str:
    return node.name if isinstance(node, exp.Column) else node.sql(dialect="spark")


def _name_of(ctx: SqlContext, relation: exp.Expr) -> tuple[int, int] | None:
    identifier = relation.this if isinstance(relation, exp.Table) else None
    return ctx.parsed.name_range(identifier) if isinstance(identifier, exp.Identifier) else None


def _select_keyword(ctx: SqlContext, select: exp.Select) -> tuple[int, int] | None:
    index = ctx.parsed.select_token(select)
    if index is None:
        return None
    token = ctx.parsed.tokens[index]
    return token.start, token.end + 1


def _set_keyword(ctx: SqlContext, node: exp.SetOperation) -> tuple[int, int] | None:
    kind = {exp.Union: TokenType.UNION, exp.Intersect: TokenType.INTERSECT}.get(type(node), TokenType.EXCEPT)
    return ctx.parsed.clause(node.this, kind)
