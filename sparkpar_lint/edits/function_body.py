"""Rewrites inside a user function's body: a statement added at its top.

Used by fixes that make a grouped or per-partition function sort its rows before anything reads
them in sequence (SPX103), the SORT before an ordered stage of the data-trace-types paper.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from sparkpar_lint.edits.code import string


def insert_at_top(function: cst.FunctionDef, statements: Sequence[cst.BaseStatement]) -> cst.FunctionDef:
    """`function` with `statements` first in its body, after the docstring if it has one."""
    body = function.body
    if not isinstance(body, cst.IndentedBlock):  # `def f(x): return x` on one line
        small = body.body if isinstance(body, cst.SimpleStatementSuite) else ()
        body = cst.IndentedBlock(body=[cst.SimpleStatementLine(body=list(small))])
    existing = list(body.body)
    start = 1 if existing and _is_docstring(existing[0]) else 0
    return function.with_changes(body=body.with_changes(body=[*existing[:start], *statements, *existing[start:]]))


def _is_docstring(statement: cst.BaseStatement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _names(columns: tuple[str, ...]) -> cst.List:
    return cst.List([cst.Element(string(c)) for c in columns])


def frame_sort(frame: str, columns: tuple[str, ...]) -> cst.SimpleStatementLine:
    """`frame = frame.sort_values([*columns, *frame.columns.difference([*columns])], ignore_index=True)`

    The other columns, in name order, break ties in the order columns: only rows equal in every
    column keep an arbitrary order, and those are interchangeable.
    """
    others = cst.Call(
        func=cst.Attribute(
            value=cst.Attribute(value=cst.Name(frame), attr=cst.Name("columns")), attr=cst.Name("difference")
        ),
        args=[cst.Arg(_names(columns))],
    )
    by = cst.List([*(cst.Element(string(c)) for c in columns), cst.StarredElement(others)])
    call = cst.Call(
        func=cst.Attribute(value=cst.Name(frame), attr=cst.Name("sort_values")),
        args=[cst.Arg(by), cst.Arg(cst.Name("True"), keyword=cst.Name("ignore_index"), equal=_EQUAL)],
    )
    return _assign(frame, call)


def frame_sorted(frame: str, columns: tuple[str, ...]) -> cst.Call:
    """`frame.sort_values([*columns, *frame.columns.difference([*columns])])`, the sort of
    `frame_sort` as an expression (or by every column in frame order with no columns). The index is
    kept: two sorted copies of one frame line up by label, as the unsorted ones did."""
    if columns:
        others = cst.Call(
            func=cst.Attribute(
                value=cst.Attribute(value=cst.Name(frame), attr=cst.Name("columns")), attr=cst.Name("difference")
            ),
            args=[cst.Arg(_names(columns))],
        )
        by: cst.BaseExpression = cst.List([*(cst.Element(string(c)) for c in columns), cst.StarredElement(others)])
    else:
        by = cst.Call(
            func=cst.Name("list"), args=[cst.Arg(cst.Attribute(value=cst.Name(frame), attr=cst.Name("columns")))]
        )
    return cst.Call(func=cst.Attribute(value=cst.Name(frame), attr=cst.Name("sort_values")), args=[cst.Arg(by)])


def frame_sort_whole_row(frame: str) -> cst.SimpleStatementLine:
    """`frame = frame.sort_values(list(frame.columns), ignore_index=True)`: every column, in the
    frame's own order, decides (no order column to read)."""
    columns = cst.Call(
        func=cst.Name("list"), args=[cst.Arg(cst.Attribute(value=cst.Name(frame), attr=cst.Name("columns")))]
    )
    call = cst.Call(
        func=cst.Attribute(value=cst.Name(frame), attr=cst.Name("sort_values")),
        args=[cst.Arg(columns), cst.Arg(cst.Name("True"), keyword=cst.Name("ignore_index"), equal=_EQUAL)],
    )
    return _assign(frame, call)


def rows_sort(rows: str, columns: tuple[str, ...]) -> cst.SimpleStatementLine:
    """`rows = sorted(rows, key=lambda row: (row.ts, repr(row)))`: the whole row breaks ties;
    with no columns, `rows = sorted(rows, key=repr)`."""
    if not columns:
        return _assign(
            rows,
            cst.Call(
                func=cst.Name("sorted"),
                args=[cst.Arg(cst.Name(rows)), cst.Arg(cst.Name("repr"), keyword=cst.Name("key"), equal=_EQUAL)],
            ),
        )
    item = "row" if rows != "row" else "item"
    fields = [cst.Element(cst.Attribute(value=cst.Name(item), attr=cst.Name(c))) for c in columns]
    tie = cst.Call(func=cst.Name("repr"), args=[cst.Arg(cst.Name(item))])
    key = cst.Lambda(
        params=cst.Parameters(params=[cst.Param(cst.Name(item))]),
        body=cst.Tuple([*fields, cst.Element(tie)]),
    )
    call = cst.Call(
        func=cst.Name("sorted"),
        args=[cst.Arg(cst.Name(rows)), cst.Arg(key, keyword=cst.Name("key"), equal=_EQUAL)],
    )
    return _assign(rows, call)


_EQUAL = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))


def _assign(name: str, value: cst.BaseExpression) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine(body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(name))], value=value)])
