"""One argument of a call, given by position or by keyword, as Python binds it."""

from __future__ import annotations

import libcst as cst


def call_argument(call: cst.Call | None, position: int, keyword: str) -> cst.BaseExpression | None:
    """The argument bound to parameter `keyword` at `position` (ignoring `*args` and `**kwargs`);
    None when the call does not pass it, or there is no call."""
    if call is None:
        return None
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    return positional[position] if position < len(positional) else None
