"""SPX104's fix for a window with no ORDER BY in SQL text: an order written into the spec.

`first_value(page) OVER (PARTITION BY user)` -> `... OVER (PARTITION BY user ORDER BY page)`.
Where every window function of the SELECT reads this one spec and each is a value function of a
plain column (`first_value`, `last`, `nth_value`, `collect_list`...) or a `count`/`min`/`max` the
order does not touch, the values themselves are the order: rows tied on every value give every
function the same answer, and a sort by the values is one of the orders the rows could arrive
in. Otherwise the whole row decides, as the Python fix does (only where `*` is the window's
rows). Unless every use is a `first`, the spec also gets the whole partition as its frame, which
an ORDER BY would otherwise cut at the current row. Unsafe: the author may have meant a time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from sparkpar_lint.edits.model import UNSAFE, Fix
from sparkpar_lint.model import NoFix
from sparkpar_lint.rules.fixers.sql import _aggregates, _name, _rewrite, whole_row_pieces, window_and_select
from sparkpar_lint.sql.line_fit import fitted
from sparkpar_lint.sql.site import SqlSite

if TYPE_CHECKING:
    from sqlglot import exp

    from sparkpar_lint.sql.parse import ParsedSql

_VALUES = frozenset(
    {"first", "first_value", "any_value", "last", "last_value", "nth_value", "collect_list", "array_agg"}
)
# Aggregates over the whole partition whose answer no order of its rows changes (a floating
# `sum` adds in that order, and `collect_set` lists in it: those get the whole row).
_UNORDERED = frozenset({"count", "min", "max"})
_FIRST_ROW = frozenset({"first", "first_value"})
_WHOLE_PARTITION = " ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING"


def window_order_fix(call_site: SqlSite | None) -> Fix | NoFix | None:
    """The spec ordered by the values its functions read (or the whole row), or why not."""
    if call_site is None or call_site.literal is None:
        return None
    parsed, func = call_site.parsed, call_site.expression
    window, select = window_and_select(func)
    if window is None or select is None:
        return NoFix(
            "the window is written alone (`expr`, `selectExpr`): the other windows of its SELECT are not in view"
        )
    spec = _spec(parsed, func, window, select)
    if isinstance(spec, NoFix):
        return spec
    opening, users = spec
    inside = _inside(parsed, opening)
    if inside is None:
        return NoFix(
            "the window spec has a frame of its own but no order: the order it was meant to have is the author's"
        )
    names = [_function_name(parsed, w) for w in users]
    order = _value_order(parsed, select, users)
    if order is not None:
        pieces, what = [f" ORDER BY {', '.join(order)}"], f"the values its functions read ({', '.join(order)})"
    elif select.args.get("group") or select.args.get("joins") or _aggregates(select):
        return NoFix(
            "its functions read expressions or share the SELECT with other windows, and `*` is not the window's rows there"
        )
    else:
        pieces, what = [" ORDER BY", *whole_row_pieces()], "the whole row (no order to read)"
    if not all(n in _FIRST_ROW for n in names):
        pieces.append(_WHOLE_PARTITION)
    at = parsed.tokens[inside].end + 1
    if parsed.tokens[inside].text == "(":  # `OVER ()`: the order is the spec's first item
        pieces[0] = pieces[0].lstrip()
    text = fitted(call_site, at, pieces, parsed.tokens[opening + 1].start)
    literal = _rewrite(call_site, [(at, at, text)])
    if not isinstance(literal, cst.CSTNode):
        if literal is not None and "\n" in text:
            return NoFix("the ORDER BY would take the line past 100 characters, and the string is on one line")
        return literal
    frame = " over the whole partition" if _WHOLE_PARTITION in pieces else ""
    return Fix(UNSAFE, f"SQL: order the window by {what}{frame}", ((call_site.literal, literal),))


def _spec(
    parsed: ParsedSql, func: exp.Expression, window: exp.Window, select: exp.Select
) -> tuple[int, list[exp.Window]] | NoFix:
    """The `(` token opening the spec `func`'s window is written in, and every window using that
    spec (for a named one, each `OVER name` of the SELECT), or why not."""
    from sqlglot import exp
    from sqlglot.tokens import TokenType

    tokens = parsed.tokens
    call = parsed.call_range(func)
    over = next(
        (i for i, t in enumerate(tokens) if call and t.start >= call[1] and t.token_type == TokenType.OVER), None
    )
    if call is None or over is None or over + 1 >= len(tokens):
        return NoFix("the window's OVER clause is not where the fixer can read it")
    alias = window.args.get("alias")
    if alias is None:
        if tokens[over + 1].token_type != TokenType.L_PAREN:
            return NoFix("the window's OVER clause is not where the fixer can read it")
        return over + 1, [window]
    if tokens[over + 1].token_type == TokenType.L_PAREN or window.args.get("partition_by"):
        return NoFix("the window adds to a named window (`OVER (name ...)`), which other windows may share")
    name = alias.name.lower()
    users = [
        w
        for w in select.find_all(exp.Window)
        if isinstance(w.args.get("alias"), exp.Identifier)
        and w.alias.lower() == name
        and w.find_ancestor(exp.Select) is select
    ]
    for i, token in enumerate(tokens[:-2]):
        if (
            token.start > call[1]
            and token.text.lower() == name
            and i > 0
            and tokens[i + 1].token_type == TokenType.ALIAS
            and tokens[i + 2].token_type == TokenType.L_PAREN
            and tokens[i - 1].token_type in (TokenType.WINDOW, TokenType.COMMA)
        ):
            return i + 2, users
    return NoFix("the WINDOW clause entry is not where the fixer can read it")


def _inside(parsed: ParsedSql, opening: int) -> int | None:
    """The last token inside the spec opened at `opening` (the `(` itself when empty), or None
    when the spec has an order or a frame."""
    from sqlglot.tokens import TokenType

    tokens, depths = parsed.tokens, parsed.depths
    inner = depths[opening] + 1
    for i in range(opening + 1, len(tokens)):
        if depths[i] < inner:
            return i - 1
        if depths[i] == inner and (
            tokens[i].token_type == TokenType.ORDER_BY or tokens[i].text.upper() in ("ROWS", "RANGE")
        ):
            return None
    return None


def _value_order(parsed: ParsedSql, select: exp.Select, users: list[exp.Window]) -> list[str] | None:
    """The columns the spec's functions read, when the values alone decide every answer: each
    function is a value function of a plain column or an aggregate the order does not touch, and
    the SELECT's other windows are such aggregates, unordered. None otherwise."""
    from sqlglot import exp

    # The WINDOW clause's own entries (`this` is their name) are no uses.
    own = [
        w
        for w in select.find_all(exp.Window)
        if w.find_ancestor(exp.Select) is select and not isinstance(w.this, exp.Identifier)
    ]
    others = [w for w in own if not any(w is u for u in users)]
    if any(_function_name(parsed, w) not in _UNORDERED or w.args.get("order") for w in others):
        return None  # another window may pick from the same rows: one order must serve both
    order: list[str] = []
    for window in users:
        func = _function(window)
        name = _name(parsed, func)
        if name in _UNORDERED:
            continue
        value = func.this if isinstance(func, exp.Func) else None
        if name not in _VALUES or not isinstance(value, exp.Column) or isinstance(value.this, exp.Star):
            return None
        order.append(value.sql(dialect="spark"))
    return list(dict.fromkeys(order)) or None


def _function(window: exp.Window) -> exp.Expression:
    """The function a window applies (`first_value(x) IGNORE NULLS OVER w`: the first_value)."""
    from sqlglot import exp

    held: exp.Expression = window.this
    return held.this if isinstance(held, (exp.IgnoreNulls, exp.RespectNulls)) else held


def _function_name(parsed: ParsedSql, window: exp.Window) -> str:
    return _name(parsed, _function(window))
