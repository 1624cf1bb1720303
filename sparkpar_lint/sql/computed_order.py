"""A SQL window ordered by a computed amount: `ROW_NUMBER() OVER (PARTITION BY category ORDER BY
COALESCE(SUM(s.amount), 0) DESC)`. Totals, counts and their arithmetic tie as easily as a
column of amounts does (every unsold item totals 0), so the order alone does not say which of
the tied rows gets number 1.
"""

from __future__ import annotations

from sqlglot import exp

from sparkpar_lint.sql.stages import window_of

# What an amount is computed with: aggregates, null defaults, arithmetic, casts and rounding.
_AMOUNT_PARTS = (
    exp.AggFunc,
    exp.Coalesce,
    exp.Add,
    exp.Sub,
    exp.Mul,
    exp.Div,
    exp.Neg,
    exp.Paren,
    exp.Cast,
    exp.Round,
    exp.Abs,
    exp.Column,
    exp.Identifier,
    exp.Literal,
    exp.Star,
    exp.DataType,
)


def computed_order(func: exp.Expression) -> str | None:
    """The text of the one ORDER BY term of the window `func` is computed over, when that term
    computes an amount from columns (`SUM(amount)`, `COUNT(*)`, `COALESCE(SUM(a), 0)`, `a * b`);
    None for a plain column, a constant, several terms, or anything else (a function that may
    tell rows apart, such as `concat` or `rand`)."""
    window = window_of(func)
    order = window.args.get("order") if window is not None else None
    if order is None or len(order.expressions) != 1:
        return None
    term = order.expressions[0]
    return amount(term.this if isinstance(term, exp.Ordered) else term)


# What makes it an amount rather than a column under another name: an aggregate or arithmetic.
# `COALESCE(sign_off_date, sign_on_date)` is still a date of the row, not a total.
_COMPUTING = (exp.AggFunc, exp.Add, exp.Sub, exp.Mul, exp.Div)


def amount(term: exp.Expression) -> str | None:
    """The text of `term` when it computes an amount from columns (an aggregate or arithmetic);
    None for a plain column, a constant, a fallback between columns, or anything else."""
    if isinstance(term, (exp.Column, exp.Literal)):
        return None
    parts = list(term.walk())
    if not all(isinstance(part, _AMOUNT_PARTS) for part in parts):
        return None
    if not any(isinstance(part, _COMPUTING) for part in parts):
        return None
    return term.sql(dialect="spark")
