"""A `from m import a, b` the fixes changed, laid out as its author wrote it.

LibCST's AddImportsVisitor puts the names it adds first (`from pyspark.sql import Window,
SparkSession`) and RemoveImportsVisitor drops a parenthesised list's trailing comma with the name
(`(\\n    col)`). An engineer keeps the list as it was: a new name where it sorts when the list was
sorted (isort's order: constants, classes, then the rest), else last, with the list's own commas,
line breaks and trailing comma. A list holding a comment is left as LibCST writes it.
"""

from __future__ import annotations

import libcst as cst

from sparkpar_lint.graph.imports import dotted_name

# An import statement's module: (relative dots, dotted name).
_Key = tuple[int, str | None]


def as_written(before: cst.Module, after: cst.Module) -> cst.Module:
    """`after` with each top-level from-import of `before` whose names changed laid out as `before`
    wrote it. Imports of one module pair up in order, when none was added or removed whole."""
    written: dict[_Key, list[cst.ImportFrom]] = {}
    for statement in _from_imports(before):
        written.setdefault(_key(statement), []).append(statement)
    now: dict[_Key, list[cst.ImportFrom]] = {}
    for statement in _from_imports(after):
        now.setdefault(_key(statement), []).append(statement)
    old_of = {
        id(new): old
        for key, olds in written.items()
        if len(olds) == len(now.get(key, ()))
        for old, new in zip(olds, now[key])
    }
    body = []
    for line in after.body:
        own = line.body[0] if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 else None
        old = old_of.get(id(own))
        if old is not None and isinstance(own, cst.ImportFrom) and _names(own) != _names(old):
            line = line.with_changes(body=[_laid_out(old, own)])
        body.append(line)
    return after.with_changes(body=body)


def _laid_out(old: cst.ImportFrom, new: cst.ImportFrom) -> cst.ImportFrom:
    if isinstance(old.names, cst.ImportStar) or isinstance(new.names, cst.ImportStar) or _has_comment(old):
        return new
    before, now = _names(old), {_pair(a): a for a in new.names}
    kept = [p for p in before if p in now]
    added = [p for p in now if p not in before]
    order = sorted(kept + added, key=_sort_key) if before == sorted(before, key=_sort_key) else kept + added
    # Between two names it had, the list keeps the separator before the later one (deleting `first`
    # from `col, first,\n    lit` leaves `col,\n    lit`); a new name takes the list's last one.
    place = {p: i for i, p in enumerate(before)}
    separators = [a.comma for a in old.names[:-1] if isinstance(a.comma, cst.Comma)]
    if not separators:  # one name: a parenthesised list broken after `(` breaks there again
        opening = old.lpar.whitespace_after if old.lpar is not None else None
        broken = opening if isinstance(opening, cst.ParenthesizedWhitespace) else None
        separators = [cst.Comma(whitespace_after=broken or cst.SimpleWhitespace(" "))]

    names = []
    for p, following in zip(order, [*order[1:], None]):
        if following is None:
            comma = old.names[-1].comma
        elif p in place and following in place:
            comma = old.names[place[following] - 1].comma
        else:
            comma = separators[-1]
        names.append(now[p].with_changes(comma=comma))
    return new.with_changes(names=names)


def _from_imports(module: cst.Module) -> list[cst.ImportFrom]:
    return [
        line.body[0]
        for line in module.body
        if isinstance(line, cst.SimpleStatementLine)
        and len(line.body) == 1
        and isinstance(line.body[0], cst.ImportFrom)
    ]


def _key(statement: cst.ImportFrom) -> _Key:
    return (len(statement.relative), dotted_name(statement.module) if statement.module is not None else None)


def _names(statement: cst.ImportFrom) -> list[tuple[str, str | None]]:
    return [] if isinstance(statement.names, cst.ImportStar) else [_pair(a) for a in statement.names]


def _pair(alias: cst.ImportAlias) -> tuple[str, str | None]:
    asname = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else None
    return (dotted_name(alias.name) or "", asname)


def _sort_key(pair: tuple[str, str | None]) -> tuple[int, str, str, str]:
    name = pair[0]
    kind = 0 if name.isupper() and len(name) > 1 else 1 if name[:1].isupper() else 2
    return (kind, name.lower(), name, pair[1] or "")


def _has_comment(statement: cst.ImportFrom) -> bool:
    return "#" in cst.Module([]).code_for_node(statement)
