"""A sort after a streaming aggregation, shown on the console, moved into `foreachBatch`.

Spark allows a sort of a streaming aggregate in complete mode only, and complete mode keeps every
group for ever. With a watermark and update mode the state is bounded, but the sort must then
run on each micro-batch's own rows: `foreachBatch(lambda batch, _: batch.orderBy(...).show(...))`
prints what the console sink would print in update mode (the groups that changed), in the sort's
order. The console sink's `truncate` and `numRows` options become `show`'s arguments.
"""

from __future__ import annotations

from functools import partial

import libcst as cst

from sparkpar_lint.edits.chain import drop_call
from sparkpar_lint.edits.model import Replacement
from sparkpar_lint.graph.user_functions import names_in
from sparkpar_lint.model import NoFix

SORTS = ("orderBy", "sort")
_SHOW_OPTIONS = ("numRows", "truncate")
_BATCH_NAMES = ("batch", "batch_df", "micro_batch")
LINE_LIMIT = 100  # the fixes' line limit (a file with longer lines allows them, but this is the floor)


def writer_calls(call: cst.BaseExpression | None) -> dict[str, cst.Call]:
    """Each setter call on a `writeStream` chain (`format`, `option`, …) by method name; for
    `option`, by `option:<key>`."""
    calls: dict[str, cst.Call] = {}
    while isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute):
        name = call.func.attr.value
        if name == "option" and call.args and isinstance(call.args[0].value, cst.SimpleString):
            name = "option:" + str(call.args[0].value.evaluated_value)
        calls.setdefault(name, call)
        call = call.func.value
        while isinstance(call, cst.Attribute):
            call = call.value
    return calls


def show_arguments(calls: dict[str, cst.Call]) -> list[cst.Arg] | NoFix:
    """`show`'s arguments for the console options on the chain, or why they cannot be carried."""
    arguments: list[cst.Arg] = []
    for option in _SHOW_OPTIONS:
        call = calls.get(f"option:{option}")
        if call is None:
            continue
        if len(call.args) != 2:
            return NoFix(f"the console option `{option}` is not set with two plain arguments")
        value = _literal(call.args[1].value, option)
        if value is None:
            return NoFix(f"the console option `{option}` is not a literal `show` can take")
        keyword = None if option == "numRows" else cst.Name("truncate")
        equal = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")) if keyword else None
        arguments.append(cst.Arg(value, keyword=keyword, equal=equal or cst.MaybeSentinel.DEFAULT))
    return [
        a.with_changes(
            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")) if i < len(arguments) - 1 else a.comma
        )
        for i, a in enumerate(arguments)
    ]


def _literal(value: cst.BaseExpression, option: str) -> cst.BaseExpression | None:
    """The option's value as Python code: numbers stay, "true"/"false" strings become booleans."""
    if isinstance(value, cst.Integer) or (isinstance(value, cst.Name) and value.value in ("True", "False")):
        return value
    if isinstance(value, cst.SimpleString) and isinstance(value.evaluated_value, str):
        text = value.evaluated_value.strip().lower()
        if text in ("true", "false") and option == "truncate":
            return cst.Name(text.capitalize())
        if text.isdigit():
            return cst.Integer(text)
    return None


def free_name(module: cst.Module, candidates: tuple[str, ...]) -> str | None:
    """The first candidate the module reads or binds nowhere, so the lambda shadows nothing."""
    used = names_in(module)
    return next((c for c in candidates if c not in used), None)


def sort_into_foreach_batch(
    module: cst.Module, sort: cst.Call, calls: dict[str, cst.Call]
) -> tuple[tuple[cst.CSTNode, Replacement], ...] | NoFix:
    """The replacements that drop `sort` from its chain and turn the sink's `format("console")`
    (with its show options) into a `foreachBatch` that sorts and shows each batch; else why not."""
    show = show_arguments(calls)
    if isinstance(show, NoFix):
        return show
    if not isinstance(sort.func, cst.Attribute):
        return NoFix("the sort is not a method of the stream's rows")
    batch = free_name(module, _BATCH_NAMES)
    if batch is None or free_name(module, ("_",)) is None:
        return NoFix("no free name for the `foreachBatch` function's parameters")
    sorted_batch = cst.Call(func=cst.Attribute(value=cst.Name(batch), attr=sort.func.attr), args=list(sort.args))
    body = cst.Call(func=cst.Attribute(value=sorted_batch, attr=cst.Name("show")), args=show)
    function = cst.Lambda(
        params=cst.Parameters(
            params=[
                cst.Param(cst.Name(batch), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
                cst.Param(cst.Name("_")),
            ]
        ),
        body=body,
    )
    replacements: list[tuple[cst.CSTNode, Replacement]] = [
        (sort, drop_call),
        (calls["format"], partial(_to_foreach_batch, function)),
    ]
    replacements += [(calls[f"option:{o}"], drop_call) for o in _SHOW_OPTIONS if f"option:{o}" in calls]
    return tuple(replacements)


def _to_foreach_batch(function: cst.Lambda, call: cst.Call) -> cst.Call:
    """`.format("console")` → `.foreachBatch(function)`, on one line when it fits, else with the
    function on a line of its own inside the parentheses (no backslashes needed there)."""
    if not isinstance(call.func, cst.Attribute):
        return call  # not met: `format` is a method of the stream writer
    indent = _chain_indent(call.func.dot.whitespace_before)
    call = call.with_changes(func=call.func.with_changes(attr=cst.Name("foreachBatch")), args=[cst.Arg(function)])
    if indent is None:
        return call  # mid-line: the engine wraps the line if the fix made it too long
    one_line = indent + "." + cst.Module([]).code_for_node(call.with_changes(func=cst.Name("foreachBatch")))
    if len(one_line) + len(" \\") <= LINE_LIMIT:
        return call

    def breaking(spaces: str) -> cst.ParenthesizedWhitespace:
        return cst.ParenthesizedWhitespace(indent=False, last_line=cst.SimpleWhitespace(spaces))

    argument = cst.Arg(function, whitespace_after_arg=breaking(indent))
    return call.with_changes(whitespace_before_args=breaking(indent + "    "), args=[argument])


def _chain_indent(whitespace: cst.BaseParenthesizableWhitespace) -> str | None:
    """The spaces before a chain link that starts its own line, or None if it shares a line."""
    if isinstance(whitespace, cst.ParenthesizedWhitespace):
        return whitespace.last_line.value
    text = whitespace.value if isinstance(whitespace, cst.SimpleWhitespace) else ""
    return text.rsplit("\n", 1)[1] if "\n" in text else None
