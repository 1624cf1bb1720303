"""The SQL a Python string expression spells, with the source position of every character.

Literal strings, f-strings (each `{...}` becomes an opaque identifier) and concatenations of them
(implicit or with `+`) are read; anything else is None, and the caller skips it silently.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst

from sparkpar_lint.model import Span

Position = tuple[int, int]  # 1-based line, 0-based column, as LibCST reports them
_PREFIX = re.compile(r"^[A-Za-z]*")
_SIMPLE_ESCAPE = set("\n\\'\"abfnrtv")


@dataclass
class SqlText:
    text: str
    positions: list[Position]  # one per character of `text`, then one just past the end

    def span(self, start: int, end: int) -> Span:
        """Source span of text[start:end]."""
        start = max(0, min(start, len(self.text)))
        end = max(start, min(end, len(self.text)))
        line, column = self.positions[start]
        if end > start:
            end_line, end_column = self.positions[end - 1]
            return Span(line, column, end_line, end_column + 1)
        return Span(line, column, line, column)


def sql_text(node: cst.CSTNode, start_of: Callable[[cst.CSTNode], Position], code_of: Callable) -> SqlText | None:
    """`start_of(node)` gives a node's source position, `code_of(node)` its source text."""
    if isinstance(node, cst.SimpleString):
        return _simple(node.value, start_of(node))
    if isinstance(node, cst.FormattedString):
        return _formatted(node, start_of(node), code_of)
    if isinstance(node, cst.ConcatenatedString):
        return _join(sql_text(node.left, start_of, code_of), sql_text(node.right, start_of, code_of))
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        return _join(sql_text(node.left, start_of, code_of), sql_text(node.right, start_of, code_of))
    if isinstance(node, cst.Arg):
        return sql_text(node.value, start_of, code_of)
    return None


def _join(left: SqlText | None, right: SqlText | None) -> SqlText | None:
    if left is None or right is None:
        return None
    return SqlText(left.text + right.text, left.positions[:-1] + right.positions)


def _walk(raw: str, start: Position) -> list[Position]:
    """Position of every character of `raw` (plus the end), which starts at `start`."""
    line, column = start
    positions = []
    for char in raw:
        positions.append((line, column))
        if char == "\n":
            line, column = line + 1, 0
        else:
            column += 1
    positions.append((line, column))
    return positions


def _quotes(raw: str) -> tuple[str, int]:
    prefix = _PREFIX.match(raw).group(0)
    rest = raw[len(prefix) :]
    return prefix.lower(), 3 if rest[:3] in ('"""', "'''") else 1


def _simple(raw: str, start: Position) -> SqlText | None:
    prefix, quote = _quotes(raw)
    if "b" in prefix:
        return None
    offset = len(prefix) + quote
    where = _walk(raw, start)
    return _decode(raw[offset : len(raw) - quote], where[offset:], "r" in prefix)


def _decode(body: str, where: list[Position], raw_string: bool, braces: bool = False) -> SqlText | None:
    """Evaluate escapes (and `{{`/`}}` in f-strings), keeping each result character's source."""
    text, positions = [], []
    index = 0
    while index < len(body):
        char = body[index]
        if braces and char in "{}" and body[index : index + 2] in ("{{", "}}"):
            text.append(char), positions.append(where[index])
            index += 2
        elif char == "\\" and not raw_string:
            decoded, width = _escape(body, index)
            if decoded is None:
                return None
            for piece in decoded:
                text.append(piece), positions.append(where[index])
            index += width
        else:
            text.append(char), positions.append(where[index])
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


def _formatted(node: cst.FormattedString, start: Position, code_of: Callable) -> SqlText | None:
    prefix = node.prefix.lower()
    if "b" in prefix:
        return None
    raw = code_of(node)
    where = _walk(raw, start)
    offset = len(node.start)
    pieces: list[SqlText] = []
    for number, part in enumerate(node.parts):
        part_code = part.value if isinstance(part, cst.FormattedStringText) else code_of(part)
        part_where = where[offset : offset + len(part_code) + 1]
        if isinstance(part, cst.FormattedStringText):
            piece = _decode(part_code, part_where, "r" in prefix, braces=True)
            if piece is None:
                return None
        else:
            # An opaque identifier: a table, column or value name the query cannot see.
            name = f"__sparkpar_p{number}"
            piece = SqlText(name, [part_where[0]] * len(name) + [part_where[-1]])
        pieces.append(piece)
        offset += len(part_code)
    text = SqlText("", [where[offset]])
    for piece in pieces:
        text = _join(text, piece)
    return text
