"""Keeps a rewritten method chain in its author's layout.

Rewrites build new links (`.withColumn(...)`, `.drop(...)`) with no whitespace around the dot.
In a chain written one call per line, parenthesised or backslash-continued, the new links get
that layout too, and comments on the lines of links that changed or went away stay in place:
a trailing comment stays at the end of the line it ended, a comment line stays above the first
link that now stands where it stood.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import libcst as cst

Whitespace = cst.BaseParenthesizableWhitespace
_Item = TypeVar("_Item", bound=cst.CSTNode)


def spine(expr: cst.BaseExpression) -> list[cst.Attribute]:
    """The `.method` links of a call chain, innermost first: `a.b().c()` → [`.b`, `.c`]."""
    links = []
    while isinstance(expr, (cst.Call, cst.Attribute, cst.Subscript)):
        if isinstance(expr, cst.Call):
            expr = expr.func
            continue
        if isinstance(expr, cst.Subscript):
            expr = expr.value
            continue
        links.append(expr)
        expr = expr.value
    return links[::-1]


def multiline(ws: Whitespace) -> bool:
    return isinstance(ws, cst.ParenthesizedWhitespace) or "\n" in getattr(ws, "value", "")


def clean(ws: Whitespace) -> Whitespace:
    """The line break and indentation of `ws`, without its comments."""
    if isinstance(ws, cst.ParenthesizedWhitespace):
        return ws.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=())
    return ws


def relayout(old: cst.BaseExpression, new: cst.BaseExpression) -> cst.BaseExpression:
    """`new` (a rewrite of `old`) with its new links in the layout of `old`'s chain.

    Links are told apart by their `Dot` node: a kept link keeps its dot even when the rewrite
    rebuilds the link around it; a new link has a new one.
    """
    old_links = spine(old)
    style = next((a.dot.whitespace_before for a in reversed(old_links) if multiline(a.dot.whitespace_before)), None)
    if style is None:
        return new
    old_dots = {id(a.dot) for a in old_links}
    # LibCST's default `Dot()` is one shared object: new links built without a dot of their own
    # would all look like one link, and each would get the comment meant for the first.
    new = _own_dots(new, old_dots)
    new_links = spine(new)
    new_dots = {id(a.dot) for a in new_links}
    removed = [a for a in old_links if id(a.dot) not in new_dots]
    fresh = [i for i, a in enumerate(new_links) if id(a.dot) not in old_dots]
    if not fresh:
        return new
    plain = clean(style)
    dots: dict[int, Whitespace] = {id(new_links[i].dot): plain for i in fresh}
    lowest = new_links[fresh[0]]
    above = new_links[fresh[0] + 1] if fresh[0] + 1 < len(new_links) else None
    if removed:
        # The first new link takes the place of the first removed one, comments and all.
        dots[id(lowest.dot)] = _merged([a.dot.whitespace_before for a in removed], plain)
    elif above is not None and id(above.dot) in old_dots and isinstance(plain, cst.ParenthesizedWhitespace):
        # Inserted below a kept link: the trailing comment stays on the line it ended.
        ws = above.dot.whitespace_before
        if isinstance(ws, cst.ParenthesizedWhitespace) and ws.first_line.comment is not None:
            dots[id(lowest.dot)] = plain.with_changes(first_line=ws.first_line)
            dots[id(above.dot)] = ws.with_changes(first_line=cst.TrailingWhitespace())
    return _with_dots(new, dots)


def merge_dropped(dropped: Whitespace, following: Whitespace) -> Whitespace:
    """The whitespace before the link after a dropped one: both links' line breaks and comments."""
    if not multiline(dropped):
        return following
    if not multiline(following):
        return dropped
    return _merged([dropped, following], following)


def _merged(spaces: list[Whitespace], layout: Whitespace) -> Whitespace:
    """One line break in `layout`'s indentation carrying every comment of `spaces`, in order."""
    if not isinstance(layout, cst.ParenthesizedWhitespace):
        # A backslash continuation cannot carry comments; those cases keep the removed link.
        return layout
    first: cst.TrailingWhitespace | None = None
    lines: list[cst.EmptyLine] = []
    for ws in spaces:
        if not isinstance(ws, cst.ParenthesizedWhitespace):
            continue
        if first is None:
            first = ws.first_line
        elif ws.first_line.comment is not None:
            lines.append(
                cst.EmptyLine(indent=layout.indent, whitespace=layout.last_line, comment=ws.first_line.comment)
            )
        lines.extend(ws.empty_lines)
    return layout.with_changes(first_line=first or cst.TrailingWhitespace(), empty_lines=tuple(lines))


def _own_dots(expr: cst.BaseExpression, old_dots: set[int]) -> cst.BaseExpression:
    """`expr` with a dot object of its own on every link that is not one of `old_dots`."""
    if isinstance(expr, cst.Call):
        return expr.with_changes(func=_own_dots(expr.func, old_dots))
    if isinstance(expr, cst.Subscript):
        return expr.with_changes(value=_own_dots(expr.value, old_dots))
    if isinstance(expr, cst.Attribute):
        value = _own_dots(expr.value, old_dots)
        if id(expr.dot) in old_dots:
            return expr.with_changes(value=value)
        dot = cst.Dot(whitespace_before=expr.dot.whitespace_before, whitespace_after=expr.dot.whitespace_after)
        return expr.with_changes(value=value, dot=dot)
    return expr


def _with_dots(expr: cst.BaseExpression, dots: dict[int, Whitespace]) -> cst.BaseExpression:
    if isinstance(expr, cst.Call):
        return expr.with_changes(func=_with_dots(expr.func, dots))
    if isinstance(expr, cst.Subscript):
        return expr.with_changes(value=_with_dots(expr.value, dots))
    if isinstance(expr, cst.Attribute):
        value = _with_dots(expr.value, dots)
        if id(expr.dot) in dots:
            return expr.with_changes(value=value, dot=expr.dot.with_changes(whitespace_before=dots[id(expr.dot)]))
        return expr.with_changes(value=value)
    return expr


def wrap_long_lines(code: str, original: str) -> str:
    """Break the arguments of calls on lines a fix made longer than the file's longest line (or
    100 characters, if that is more), one argument per line, the call holding most of the line
    first."""
    before = original.splitlines()
    limit = max([100, *(len(line) for line in before)])
    known = set(before)
    # Lines nothing here can break; wrapping a later line leaves their numbers as they are.
    kept: set[int] = set()
    for _ in range(40):
        lines = code.splitlines()
        long = [n for n, line in enumerate(lines, 1) if len(line) > limit and line not in known and n not in kept]
        if not long:
            return code
        try:
            wrapped = _wrap_line(code, long[0], _indent(lines[long[0] - 1]))
        except cst.CSTValidationError:  # a node this breaking cannot build: the line stays as it is
            wrapped = None
        if wrapped is None or wrapped == code:  # e.g. a string outside brackets: no break parses there
            kept.add(long[0])
        else:
            code = wrapped
    return code


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _wrap_line(code: str, line: int, indent: str) -> str | None:
    """One step: the longest call chain on `line` one call per line (parenthesised), or else the
    outermost call's arguments one per line, or else a dict's entries one per line, or else an
    import's names one per line, or else a string that starts the line split after its `\\n`s."""
    from libcst.metadata import MetadataWrapper, PositionProvider

    try:
        wrapper = MetadataWrapper(cst.parse_module(code))
    except cst.ParserSyntaxError:
        return None
    positions = wrapper.resolve(PositionProvider)
    chains, calls, dicts, imports, strings = [], [], [], [], []
    # A chain passed as an argument is broken by its call's arguments, not by new parentheses.
    arguments = {id(link) for node in positions if isinstance(node, cst.Arg) for link in _links(node.value)}
    for node, where in positions.items():
        if isinstance(node, cst.Dict) and node.elements and where.start.line == where.end.line == line:
            dicts.append((where.start.column, node))
        if isinstance(node, cst.ImportFrom) and where.start.line == line and not isinstance(node.names, cst.ImportStar):
            imports.append(node)
        if (
            isinstance(node, cst.SimpleString)
            and where.start.line == where.end.line == line
            and where.start.column == len(indent)
        ):
            strings.append(node)
        if not isinstance(node, cst.Call):
            continue
        if where.start.line == where.end.line == line and _breaks(node) and id(node) not in arguments:
            chains.append((where.start.column, -where.end.column, node))
        # A call of one string (`spark.sql("...")`) is no shorter broken; a notebook's %sql line
        # must also stay one line to restore.
        if node.args and where.end.line == line and not _one_string(node):
            first, last = positions[node.args[0]].start, positions[node.args[-1]].end
            if first.line == line and not multiline(node.whitespace_before_args):
                # The call holding the most of the line: the outermost of nested calls, and in a
                # chain (`partitionBy(k).orderBy(...)`) the link with the long arguments.
                calls.append((-(last.column - first.column) if last.line == line else -(10**6), first.column, node))
    if chains:
        # A line continued with a backslash breaks its chain the same way: parentheses around the
        # first links would leave `) \` before the chain's next line.
        backslash = code.splitlines()[line - 1].rstrip().endswith("\\")
        return wrapper.module.visit(_Chain(min(chains, key=lambda c: c[:2])[2], indent, backslash)).code
    if calls:
        return wrapper.module.visit(_Explode(min(calls, key=lambda c: c[:2])[2], indent)).code
    if dicts:
        return wrapper.module.visit(_ExplodeDict(min(dicts, key=lambda c: c[0])[1], indent)).code
    if imports and not imports[0].lpar:
        return wrapper.module.visit(_ExplodeImport(imports[0], indent)).code
    pieces = _string_lines(strings[0]) if strings else []
    if len(pieces) > 1:
        return wrapper.module.visit(_SplitString(strings[0], pieces, indent)).code
    return None


def _links(expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    """`a.f().g()` and the chains inside it (`a.f()`, `a.f`...), down to its first name."""
    found: list[cst.BaseExpression] = []
    while isinstance(expr, (cst.Call, cst.Attribute)):
        found.append(expr)
        expr = expr.func if isinstance(expr, cst.Call) else expr.value
    return found


def _one_string(call: cst.Call) -> bool:
    return len(call.args) == 1 and isinstance(
        call.args[0].value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)
    )


def _breaks(chain: cst.Call) -> list[cst.Attribute]:
    """The links of `chain` a line break goes before: calls on the result of a call (`.filter`
    in `df.select(...).filter(...)`), not `spark.read` or the first call on a name."""
    found = []
    for link in spine(chain):
        if isinstance(link.value, (cst.Call, cst.Subscript)) and not multiline(link.dot.whitespace_before):
            found.append(link)
    return found


class _Chain(cst.CSTTransformer):
    """`a.b(x).c(y)` → `(\n    a.b(x)\n    .c(y)\n)`, the layout of hand-written PySpark; in a
    backslash-continued chain, `a.b(x) \\\n    .c(y)`."""

    def __init__(self, target: cst.Call, indent: str, backslash: bool = False) -> None:
        self.target, self.indent, self.backslash = target, indent, backslash
        self.links = {id(link) for link in _breaks(target)}

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.Attribute:
        if id(original_node) in self.links:
            inner = self.indent + "    "
            before = cst.SimpleWhitespace(" \\\n" + inner) if self.backslash else _break(inner)
            return updated_node.with_changes(dot=updated_node.dot.with_changes(whitespace_before=before))
        return updated_node

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        if original_node is not self.target or self.backslash:
            return updated_node
        if updated_node.lpar:
            return updated_node.with_changes(
                lpar=[
                    updated_node.lpar[0].with_changes(whitespace_after=_break(self.indent + "    ")),
                    *updated_node.lpar[1:],
                ],
                rpar=[
                    *updated_node.rpar[:-1],
                    updated_node.rpar[-1].with_changes(whitespace_before=_break(self.indent)),
                ],
            )
        return updated_node.with_changes(
            lpar=[cst.LeftParen(whitespace_after=_break(self.indent + "    "))],
            rpar=[cst.RightParen(whitespace_before=_break(self.indent))],
        )


def _break(indent: str) -> cst.ParenthesizedWhitespace:
    return cst.ParenthesizedWhitespace(
        first_line=cst.TrailingWhitespace(), indent=False, last_line=cst.SimpleWhitespace(indent)
    )


def _one_a_line(items: Sequence[_Item], indent: str) -> list[_Item]:
    """Arguments, entries or names one a line, one step in from `indent`, each with a comma; the
    last one's line break closes the brackets back at `indent`."""
    last = len(items) - 1
    return [
        item.with_changes(comma=cst.Comma(whitespace_after=_break(indent + "    " if i < last else indent)))
        for i, item in enumerate(items)
    ]


class _Explode(cst.CSTTransformer):
    def __init__(self, target: cst.Call, indent: str) -> None:
        self.target, self.indent = target, indent

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        if original_node is not self.target:
            return updated_node
        args = _one_a_line(updated_node.args, self.indent)
        return updated_node.with_changes(whitespace_before_args=_break(self.indent + "    "), args=args)


class _ExplodeDict(cst.CSTTransformer):
    def __init__(self, target: cst.Dict, indent: str) -> None:
        self.target, self.indent = target, indent

    def leave_Dict(self, original_node: cst.Dict, updated_node: cst.Dict) -> cst.Dict:
        if original_node is not self.target:
            return updated_node
        return updated_node.with_changes(
            lbrace=cst.LeftCurlyBrace(whitespace_after=_break(self.indent + "    ")),
            elements=_one_a_line(updated_node.elements, self.indent),
            rbrace=cst.RightCurlyBrace(whitespace_before=cst.SimpleWhitespace("")),
        )


class _ExplodeImport(cst.CSTTransformer):
    """`from m import a, b` → `from m import (\n    a,\n    b,\n)`."""

    def __init__(self, target: cst.ImportFrom, indent: str) -> None:
        self.target, self.indent = target, indent

    def leave_ImportFrom(self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom) -> cst.ImportFrom:
        if original_node is not self.target or isinstance(updated_node.names, cst.ImportStar):
            return updated_node
        return updated_node.with_changes(
            names=_one_a_line(updated_node.names, self.indent),
            lpar=cst.LeftParen(whitespace_after=_break(self.indent + "    ")),
            rpar=cst.RightParen(),
        )


def _string_lines(string: cst.SimpleString) -> list[str]:
    """A one-line string literal cut after each `\\n` escape it holds, each piece a literal of
    its own (prefix and quotes repeated): adjacent literals concatenate to the same value. Empty
    for a triple-quoted or byte string; `_SplitString` leaves one in no brackets as it is."""
    prefix, body = string.prefix, string.raw_value
    quote = string.quote
    if len(quote) == 3 or "b" in prefix.lower():
        return []
    pieces, start, i = [], 0, 0
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body):
            if body[i + 1] == "n" and i + 2 < len(body):
                pieces.append(body[start : i + 2])
                start = i + 2
            i += 2
            continue
        i += 1
    pieces.append(body[start:])
    return [f"{prefix}{quote}{piece}{quote}" for piece in pieces if piece]


class _SplitString(cst.CSTTransformer):
    def __init__(self, target: cst.SimpleString, pieces: list[str], indent: str) -> None:
        self.target, self.pieces, self.indent = target, pieces, indent
        self.depth = 0  # brackets around the string: a break needs at least one
        self.lefts: set[int] = set()  # literals on the left of `"a" "b"`, which must stay single

    def visit_Call(self, node: cst.Call) -> None:
        self.depth += 1

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        self.depth -= 1
        return updated_node

    def visit_ConcatenatedString(self, node: cst.ConcatenatedString) -> None:
        self.lefts.add(id(node.left))

    def _joined(
        self, right: cst.SimpleString | cst.FormattedString | cst.ConcatenatedString | None, between: Whitespace
    ) -> cst.SimpleString | cst.ConcatenatedString:
        """The pieces, a line each, then `right` (what followed the string) after `between`."""
        parts = [cst.SimpleString(piece) for piece in self.pieces]
        joined = parts[-1] if right is None else cst.ConcatenatedString(parts[-1], right, whitespace_between=between)
        for part in reversed(parts[:-1]):
            joined = cst.ConcatenatedString(left=part, right=joined, whitespace_between=_break(self.indent))
        return joined

    def leave_ConcatenatedString(
        self, original_node: cst.ConcatenatedString, updated_node: cst.ConcatenatedString
    ) -> cst.BaseExpression:
        if original_node.left is not self.target or self.depth == 0:
            return updated_node
        return self._joined(updated_node.right, updated_node.whitespace_between)

    def leave_SimpleString(self, original_node: cst.SimpleString, updated_node: cst.SimpleString) -> cst.BaseExpression:
        if original_node is not self.target or self.depth == 0 or id(original_node) in self.lefts:
            return updated_node
        return self._joined(None, cst.SimpleWhitespace(""))
