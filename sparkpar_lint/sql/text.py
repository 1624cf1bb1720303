"""The SQL a Python string expression spells, with the source position of every character.

Literal strings, f-strings (each `{...}` becomes an opaque identifier) and concatenations of them
(implicit or with `+`) are read; anything else is None, and the caller skips it silently.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import libcst as cst

from sparkpar_lint.graph.stage_graph import LazySpan
from sparkpar_lint.model import Span

Position = tuple[int, int]  # 1-based line, 0-based column, as LibCST reports them
# Where a character is, relative to the start of a string node (None: already absolute). Source
# positions cost about three parses of the file, so they are looked up only when a finding's span
# is read (as the graph's own LazySpan does).
Anchored = tuple[object, int, int]
_PREFIX = re.compile(r"^[A-Za-z]*")
_SIMPLE_ESCAPE = set("\n\\'\"abfnrtv")
_FIELDS = ("line", "column", "end_line", "end_column")


@dataclass
class SqlText:
    text: str
    positions: list[Anchored]  # one per character of `text`, then one just past the end
    # Takes an anchor: a CST node, or a value without a literal (sql/expressions.py).
    start_of: Callable[[Any], Position] | None = None

    def span(self, start: int, end: int) -> Span:
        """Source span of text[start:end], resolved when first read."""
        start = max(0, min(start, len(self.text)))
        end = max(start, min(end, len(self.text)))
        return _LazySqlSpan(self, start, end)

    def resolve(self, start: int, end: int) -> Span:
        line, column = self._absolute(self.positions[start])
        if end > start:
            end_line, end_column = self._absolute(self.positions[end - 1])
            return Span(line, column, end_line, end_column + 1)
        return Span(line, column, line, column)

    def _absolute(self, where: Anchored) -> Position:
        anchor, line, column = where
        if anchor is None:
            return line, column
        # Anchored positions come from sql_text or a caller that sets start_of with them.
        assert self.start_of is not None
        base_line, base_column = self.start_of(anchor)
        return (base_line, base_column + column) if line == 0 else (base_line + line, column)


class _LazySqlSpan(LazySpan):
    _sql: tuple[SqlText, int, int]  # set in __init__; the fields resolve from it on first read

    def __init__(self, text: SqlText, start: int, end: int) -> None:
        object.__setattr__(self, "_sql", (text, start, end))

    def __getattr__(self, name: str) -> int:
        if name not in _FIELDS:
            raise AttributeError(name)
        text, start, end = self._sql
        resolved = text.resolve(start, end)
        for field_name in _FIELDS:
            object.__setattr__(self, field_name, getattr(resolved, field_name))
        value: int = getattr(self, name)  # one of Span's int fields, just set
        return value


def sql_text(
    node: cst.CSTNode, start_of: Callable[[cst.CSTNode], Position], code_of: Callable[[cst.CSTNode], str]
) -> SqlText | None:
    """`start_of(node)` gives a node's source position (called only when a span is read),
    `code_of(node)` its source text."""
    text = _read(node, code_of)
    if text is not None:
        text.start_of = start_of
    return text


def _read(node: cst.CSTNode, code_of: Callable[[cst.CSTNode], str]) -> SqlText | None:
    if isinstance(node, cst.SimpleString):
        return _simple(node.value, node)
    if isinstance(node, cst.FormattedString):
        return _formatted(node, code_of)
    if isinstance(node, (cst.ConcatenatedString, cst.BinaryOperation)):
        if isinstance(node, cst.BinaryOperation) and not isinstance(node.operator, cst.Add):
            return None
        return _join(_read(node.left, code_of), _read(node.right, code_of))
    if isinstance(node, cst.Arg):
        return _read(node.value, code_of)
    return None


def _join(left: SqlText | None, right: SqlText | None) -> SqlText | None:
    if left is None or right is None:
        return None
    return SqlText(left.text + right.text, left.positions[:-1] + right.positions)


def _walk(raw: str, anchor: object) -> list[Anchored]:
    """Position of every character of `raw` (plus the end), relative to the start of `anchor`."""
    line, column = 0, 0
    positions: list[Anchored] = []
    for char in raw:
        positions.append((anchor, line, column))
        if char == "\n":
            line, column = line + 1, 0
        else:
            column += 1
    positions.append((anchor, line, column))
    return positions


def quotes(raw: str) -> tuple[str, int]:
    match = _PREFIX.match(raw)
    assert match is not None  # `[A-Za-z]*` matches every string, if only emptily
    prefix = match.group(0)
    rest = raw[len(prefix) :]
    return prefix.lower(), 3 if rest[:3] in ('"""', "'''") else 1


def _simple(raw: str, node: cst.CSTNode) -> SqlText | None:
    prefix, quote = quotes(raw)
    if "b" in prefix:
        return None
    offset = len(prefix) + quote
    where = _walk(raw, node)
    return decode_body(raw[offset : len(raw) - quote], where[offset:], "r" in prefix)


def decode_body(body: str, where: list[Anchored], raw_string: bool, braces: bool = False) -> SqlText | None:
    """Evaluate escapes (and `{{`/`}}` in f-strings), keeping each result character's source."""
    text: list[str] = []
    positions: list[Anchored] = []
    index = 0
    while index < len(body):
        char = body[index]
        if braces and char in "{}" and body[index : index + 2] in ("{{", "}}"):
            text.append(char)
            positions.append(where[index])
            index += 2
        elif char == "\\" and not raw_string:
            decoded, width = _escape(body, index)
            if decoded is None:
                return None
            for piece in decoded:
                text.append(piece)
                positions.append(where[index])
            index += width
        else:
            text.append(char)
            positions.append(where[index])
            index += 1
    return SqlText("".join(text), positions + [where[len(body)]])


def _escape(body: str, index: int) -> tuple[str | None, int]:
    following = body[index + 1 : index + 2]
    if following == "\n":
        return "", 2
    if following in _SIMPLE_ESCAPE:
        try:
            return body[index : index + 2].encode().decode("unicode_escape"), 2
        except UnicodeDecodeError:
            return None, 2
    widths = {"x": 4, "u": 6, "U": 10}
    if following in widths:
        piece = body[index : index + widths[following]]
        try:
            return piece.encode("ascii").decode("unicode_escape"), len(piece)
        except (UnicodeDecodeError, UnicodeEncodeError):
            return None, len(piece)
    if following.isdigit():
        digits = re.match(r"[0-7]{1,3}", body[index + 1 :])
        if digits:
            return chr(int(digits.group(0), 8)), 1 + len(digits.group(0))
    if following == "N":
        return None, 2  # named characters do not occur in SQL worth the trouble
    return body[index : index + 2], 2  # an unknown escape keeps its backslash


def _formatted(node: cst.FormattedString, code_of: Callable[[cst.CSTNode], str]) -> SqlText | None:
    prefix = node.prefix.lower()
    if "b" in prefix:
        return None
    raw = code_of(node)
    where = _walk(raw, node)
    offset = len(node.start)
    pieces: list[SqlText] = []
    for number, part in enumerate(node.parts):
        part_code = part.value if isinstance(part, cst.FormattedStringText) else code_of(part)
        part_where = where[offset : offset + len(part_code) + 1]
        if isinstance(part, cst.FormattedStringText):
            piece = decode_body(part_code, part_where, "r" in prefix, braces=True)
            if piece is None:
                return None
        else:
            # An opaque identifier: a table, column or value name the query cannot see.
            name = f"__sparkpar_p{number}"
            piece = SqlText(name, [part_where[0]] * len(name) + [part_where[-1]])
        pieces.append(piece)
        offset += len(part_code)
    text: SqlText | None = SqlText("", [where[offset]])
    for piece in pieces:
        text = _join(text, piece)
    return text
