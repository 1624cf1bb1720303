"""Fixes for SQL in Python strings: the string expression is replaced by one with the query edited.

Plain literals, f-strings and concatenations are rewritten where every edit falls in literal text
whose source is the SQL itself (sql/literal_edit.py); interpolated parts are kept byte for byte.
Otherwise the fix functions return why not (a string), which `--show-unfixed` prints.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from sparkpar_lint.edits.model import SAFE, UNSAFE, Fix
from sparkpar_lint.model import NoFix
from sparkpar_lint.rules.fixers.ordering import FRAME_BLIND, JSON_TIMESTAMPS
from sparkpar_lint.sql.line_fit import fitted
from sparkpar_lint.sql.site import SqlSite

if TYPE_CHECKING:  # sqlglot loads only with SQL to read (rules import this module)
    from sqlglot import exp
    from sqlglot.tokens import Token

    from sparkpar_lint.sql.parse import ParsedSql

_ORDERED_PICKS = {"first": "min", "first_value": "min", "last": "max", "last_value": "max"}


def ordered_pick_fix(call_site: SqlSite | None, sort_site: SqlSite | None) -> Fix | NoFix | None:
    """`last(v) AS x` after a lost `ORDER BY k` -> `max(struct(k, v)).v AS x` (safe).

    The struct compares the order columns first and the value last, so rows tied on the order
    still give one answer; the alias, or one added to an unnamed column, keeps the column's name.
    """
    from sqlglot import exp

    if (
        call_site is None
        or call_site.literal is None
        or sort_site is None
        or not isinstance(sort_site.expression, exp.Order)
    ):
        return None
    func = call_site.expression
    span = call_site.parsed.name_range(func)
    name = call_site.parsed.text[slice(*span)].lower() if span else ""
    value = func.this if isinstance(func, exp.Func) else None
    if name not in _ORDERED_PICKS or not isinstance(value, exp.Column):
        return None
    aliased = isinstance(func.parent, exp.Alias)
    named = "" if aliased else _named_as_before(func, name, value)
    if not (aliased or named):
        return None  # inside a larger expression, whose column is named after all of it
    if any(key for key in func.args if key not in ("this",) and func.args[key] not in (None, False)):
        return None  # IGNORE NULLS and friends: keep the author's call
    ordered = sort_site.expression.expressions
    if not ordered or any(not isinstance(o.this, exp.Column) or o.args.get("desc") for o in ordered):
        return None
    keys = [o.this.sql(dialect="spark") for o in ordered]
    column = value.sql(dialect="spark")
    where = call_site.parsed.call_range(func)
    if where is None or value.name in [o.this.name for o in ordered]:
        return None
    replacement = f"{_ORDERED_PICKS[name]}(struct({', '.join(keys)}, {column})).{_quoted(value.name)}{named}"
    literal = _rewrite(call_site, [(where[0], where[1], replacement)])
    if not isinstance(literal, cst.CSTNode):
        return literal
    description = (
        f"SQL: `{name}` after a lost `ORDER BY` -> `{_ORDERED_PICKS[name]}` of a struct led by the order columns"
    )
    return Fix(SAFE, description, ((call_site.literal, literal),))


# Spark (4) names an unnamed aggregate of a column after its function, lower case, and the column
# as written, unqualified (`SELECT k, FIRST(t.V)` has a column `first(V)`); array_agg is
# collect_list by another name.
_SPARK_NAMES = {"array_agg": "collect_list"}


def _named_as_before(func: exp.Expression, name: str, column: exp.Column) -> str:
    """` AS `first(v)`` for an aggregate its SELECT lists unnamed: the rewritten call would name the
    column after itself (`min(v)`), and later code reading `first(v)` would break. Empty where the
    call has an alias, sits inside a larger expression or is not a column of a SELECT."""
    from sqlglot import exp

    if not isinstance(func.parent, exp.Select) or func.arg_key != "expressions":
        return ""
    return " AS `" + f"{_SPARK_NAMES.get(name, name)}({column.name})".replace("`", "``") + "`"


def _quoted(name: str) -> str:
    return name if name.replace("_", "a").isalnum() and not name[0].isdigit() else f"`{name.replace('`', '``')}`"


def _rewrite(site: SqlSite, edits: list[tuple[int, int, str]]) -> cst.CSTNode | NoFix | None:
    """The string expression with the edits made, or why not (None: no string to edit)."""
    from sparkpar_lint.sql.literal_edit import rewrite

    if site.literal is None:
        return None
    if not site.parsed.rewritable:
        return NoFix("the SQL holds `${...}`/`IDENTIFIER(...)` templates, and no fix is built from them")
    return rewrite(site.literal, site.parsed.text, edits)


_LISTS = {"collect_list", "array_agg"}


def any_answer_fix(call_site: SqlSite | None) -> Fix | NoFix | None:
    """With no `ORDER BY` to read: `first(v)` -> `min(v)`, `last(v)` -> `max(v)`,
    `collect_list(v)` -> `array_sort(collect_list(v))`, each one of the answers the query can
    already give, the same under every partitioning (unsafe: the author may have meant an order).
    """
    if call_site is None or call_site.literal is None:
        return None
    func = call_site.expression
    span = call_site.parsed.name_range(func)
    where = call_site.parsed.call_range(func)
    if span is None or where is None:
        return None
    name = call_site.parsed.text[slice(*span)].lower()
    call_text = call_site.parsed.text[where[0] : where[1]]
    value = func.this if hasattr(func, "this") else None
    from sqlglot import exp

    if isinstance(func.parent, (exp.IgnoreNulls, exp.RespectNulls)):
        return None  # `min(v) IGNORE NULLS` does not run: keep the author's call
    if name in _ORDERED_PICKS:
        if not isinstance(value, exp.Column):
            return None
        replacement = f"{_ORDERED_PICKS[name]}({value.sql(dialect='spark')})"
    elif name in _LISTS:
        replacement = f"array_sort({call_text})"
    else:
        return None
    if isinstance(value, exp.Column):
        replacement += _named_as_before(func, name, value)
    literal = _rewrite(call_site, [(where[0], where[1], replacement)])
    if not isinstance(literal, cst.CSTNode):
        return literal
    description = (
        f"SQL: `{name}` with no order to read -> `{replacement.split('(')[0]}`, one of the answers it could give"
    )
    return Fix(UNSAFE, description, ((call_site.literal, literal),))


def lists_in_one_order_fix(call_site: SqlSite | None, sites: list[SqlSite]) -> Fix | NoFix | None:
    """Lists of one query that line up (`collect_list(food)`, `collect_list(price)`), with no
    `ORDER BY` to read -> each `array_compact(array_sort(collect_list(struct(food, price))).food)`:
    both in the order of the sorted rows, each without its own nulls, which is what the query gives
    when the rows arrive in that order (unsafe: one order chosen for all). The calls in this
    literal are rewritten together; a sibling in another literal (`expr(...)`) gets the same
    struct from its own finding. `sites` are all the lists, this one too, in the stage's order, so
    every finding writes the same struct. A string says why not."""
    from sqlglot import exp

    if call_site is None or call_site.literal is None or call_site not in sites or any(s is None for s in sites):
        return None
    columns = []
    for site in sites:
        span = site.parsed.name_range(site.expression)
        name = site.parsed.text[slice(*span)].lower() if span else ""
        value = getattr(site.expression, "this", None)
        if name not in _LISTS or not isinstance(value, exp.Column):
            return None
        columns.append(value)
    names = [c.name for c in columns]
    if len({n.lower() for n in names}) != len({c.sql(dialect="spark").lower() for c in columns}):
        return None  # one name from two tables: the struct's fields would clash
    row = f"struct({', '.join(dict.fromkeys(c.sql(dialect='spark') for c in columns))})"
    edits = []
    for site, column in zip(sites, columns):
        if site.literal is not call_site.literal:
            continue
        where = site.parsed.call_range(site.expression)
        span = site.parsed.name_range(site.expression)
        if where is None or span is None:
            return None
        name = site.parsed.text[slice(*span)]
        named = _named_as_before(site.expression, name.lower(), column)
        edits.append((where[0], where[1], f"array_compact(array_sort({name}({row})).{_quoted(column.name)}){named}"))
    literal = _rewrite(call_site, edits)
    if not isinstance(literal, cst.CSTNode):
        return literal
    description = (
        f"SQL: lists that line up -> one list of `{row}` sorted, each read from it: no order to read, "
        "and the lists still line up, one of the answers the query could give"
    )
    return Fix(UNSAFE, description, ((call_site.literal, literal),))


def whole_row_pieces() -> list[str]:
    """The whole-row tie-breaker, `to_json(struct(*), map(<options>))`, in pieces a line may
    break between (sql/line_fit.py), each after the first led by a space."""
    options = [f" '{name}', '{value}'" for name, value in JSON_TIMESTAMPS.items()]
    return [
        " to_json(struct(*),",
        f" map({options[0].lstrip()},",
        *(f"{o}," for o in options[1:-1]),
        f"{options[-1]}))",
    ]


def window_tie_fix(call_site: SqlSite | None) -> Fix | NoFix | None:
    """`row_number() OVER (PARTITION BY k ORDER BY 1)` -> `... ORDER BY 1, to_json(struct(*), map(...)))`.

    The tie-breaker the Python fix uses: with nothing in the order that tells rows apart, the
    whole row decides, one of the orders the rows could arrive in (unsafe: the author may have
    meant a time column). The edit goes where the order is written, the `OVER (...)` or the
    `WINDOW` clause entry it names; only where `*` is the rows the window sees (no join, no
    aggregation in that SELECT) and every function over a named window is frame-blind.
    """
    if call_site is None or call_site.literal is None:
        return None
    parsed, func = call_site.parsed, call_site.expression
    window, select = window_and_select(func)
    if window is None or select is None:
        return None
    if select.args.get("group") or select.args.get("joins") or _aggregates(select):
        return None
    name = _name(parsed, func)
    if name not in FRAME_BLIND:
        return None
    at = _order_end(parsed, func, window, select)
    if at is None:
        return None
    from sqlglot.tokens import TokenType

    # A broken line starts under the spec's first item.
    tokens, depths = parsed.tokens, parsed.depths
    order = max(i for i, t in enumerate(tokens) if t.start < at and t.token_type == TokenType.ORDER_BY)
    first = next(i for i in range(order, -1, -1) if depths[i] < depths[order]) + 1
    text = fitted(call_site, at, [",", *whole_row_pieces()], tokens[first].start)
    literal = _rewrite(call_site, [(at, at, text)])
    if not isinstance(literal, cst.CSTNode):
        if literal is not None and "\n" in text:
            return NoFix("the tie-breaker would take the line past 100 characters, and the string is on one line")
        return literal
    return Fix(
        UNSAFE, "SQL: order the window's tied rows by the whole row (no order to read)", ((call_site.literal, literal),)
    )


def window_and_select(func: exp.Expression) -> tuple[exp.Window | None, exp.Select | None]:
    """The window a windowed function is computed over and the SELECT it sits in (None where a
    function in `expr`/`selectExpr` text stands alone)."""
    from sqlglot import exp

    from sparkpar_lint.sql.stages import window_of

    return window_of(func), func.find_ancestor(exp.Select)


def _name(parsed: ParsedSql, func: exp.Expression) -> str:
    where = parsed.name_range(func)
    return parsed.text[where[0] : where[1]].lower() if where else ""


def _aggregates(select: exp.Select) -> bool:
    from sqlglot import exp

    return any(
        not isinstance(agg.parent, exp.Window) and agg.find_ancestor(exp.Select) is select
        for agg in select.find_all(exp.AggFunc)
    )


def _order_end(parsed: ParsedSql, func: exp.Expression, window: exp.Window, select: exp.Select) -> int | None:
    """Offset just past the last ORDER BY item of the spec that orders `func`'s window."""
    from sqlglot import exp
    from sqlglot.tokens import TokenType

    tokens, depths = parsed.tokens, parsed.depths
    call = parsed.call_range(func)
    if call is None:
        return None
    over = next((i for i, t in enumerate(tokens) if t.start >= call[1] and t.token_type == TokenType.OVER), None)
    if over is None or over + 1 >= len(tokens):
        return None
    if tokens[over + 1].token_type == TokenType.L_PAREN:
        inside = _order_in(tokens, depths, over + 1)
        if inside is not None or window.args.get("order") is not None:
            return inside
    alias = window.args.get("alias")
    if alias is None:
        return None
    # The WINDOW clause entry `alias AS (...)`, which only frame-blind functions may share.
    users = [
        w
        for w in select.find_all(exp.Window)
        if w.args.get("alias") is not None and w.alias.lower() == alias.name.lower()
    ]
    if any(
        _name(parsed, w.this) not in FRAME_BLIND
        for w in users
        if w.this is not None and w.find_ancestor(exp.Select) is select
    ):
        return None
    for i, token in enumerate(tokens[:-2]):
        if (
            token.start > call[1]
            and token.text.lower() == alias.name.lower()
            and i > 0
            and tokens[i + 1].token_type == TokenType.ALIAS
            and tokens[i + 2].token_type == TokenType.L_PAREN
            and tokens[i - 1].token_type in (TokenType.WINDOW, TokenType.COMMA)
        ):
            return _order_in(tokens, depths, i + 2)
    return None


def _order_in(tokens: list[Token], depths: list[int], opening: int) -> int | None:
    """In the parentheses opened at token `opening`: just past the ORDER BY list, or None."""
    from sqlglot.tokens import TokenType

    inner = depths[opening] + 1
    ordering = False
    for i in range(opening + 1, len(tokens)):
        token = tokens[i]
        if depths[i] < inner or (ordering and depths[i] == inner and token.text.upper() in ("ROWS", "RANGE")):
            return tokens[i - 1].end + 1 if ordering else None
        if depths[i] == inner and token.token_type == TokenType.ORDER_BY:
            ordering = True
    return None


_RANDOM = {"rand", "random", "randn"}


def random_tie_fix(call_site: SqlSite | None) -> Fix | NoFix | None:
    """`ORDER BY price, rand(7)` -> `ORDER BY price, offer_id`: ties on the sort broken by the
    SELECT's own columns instead of a draw (unsafe: the author may have meant a random pick).

    Only as the last key of an `ORDER BY` with a key before it, in a SELECT of plain columns: the
    order is then total on the output (rows it leaves tied are equal output rows), one of the
    orders the draw could give, and the same in every run and partitioning.
    """
    from sqlglot import exp

    if call_site is None or call_site.literal is None:
        return None
    func = call_site.expression
    ordered = func.parent
    order = ordered.parent if isinstance(ordered, exp.Ordered) else None
    select = order.parent if isinstance(order, exp.Order) else None
    if (
        not isinstance(select, exp.Select)
        or not isinstance(order, exp.Order)
        or _name(call_site.parsed, func) not in _RANDOM
    ):
        return None
    keys = order.expressions
    if len(keys) < 2 or keys[-1] is not ordered or ordered.this is not func:
        return None
    if not select.expressions or not all(isinstance(e, exp.Column) for e in select.expressions):
        return None
    sorted_by = {k.this.sql(dialect="spark") for k in keys[:-1]}
    rest = list(dict.fromkeys(c.sql(dialect="spark") for c in select.expressions))
    rest = [c for c in rest if c not in sorted_by]
    where = call_site.parsed.call_range(func)
    if not rest or where is None:
        return None
    literal = _rewrite(call_site, [(where[0], where[1], ", ".join(rest))])
    if not isinstance(literal, cst.CSTNode):
        return literal
    description = f"SQL: ties on the `ORDER BY` broken by the selected columns ({', '.join(rest)}), not a random draw"
    return Fix(UNSAFE, description, ((call_site.literal, literal),))
