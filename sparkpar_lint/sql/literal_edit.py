"""Edits of the SQL a Python string expression spells, written back into its literal parts only.

A plain literal, an f-string, or a concatenation of them (implicit or with `+`) is split into
segments in the order sql_text reads them: literal text, and the `{...}` parts of f-strings,
which the SQL saw as opaque names. An edit at SQL offsets is written into the one literal
segment that holds it, at the source offsets its SQL offsets decode from: escapes (`\r\n`) and
`{{` around it are kept as written, and an edit never splits one. The interpolated parts are
kept byte for byte; an edit that would touch or copy one is refused with the reason, which
`sparkpar fix --show-unfixed` prints.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import cast

import libcst as cst

from sparkpar_lint.model import NoFix
from sparkpar_lint.sql.text import Anchored, decode_body, quotes

PLACEHOLDER = "__sparkpar_p"  # how sql_text names an f-string's `{...}` part
# How many `fixes_judged_only` blocks are open (a count, not a thread-local: the analysis runs on
# a thread of its own).
_judged_only = [0]


@contextmanager
def fixes_judged_only() -> Iterator[None]:
    """Within it, `rewrite` makes every check and gives every refusal, but hands a fix it allows
    back unbuilt (the expression as it was). For `sparkpar lint`, which keeps a fix's safety and
    drops its nodes unread: a new copy of a whole generated query or `.sql` file per finding held
    N copies of it for N findings (1.9 GB for a file of 4,000 statements)."""
    _judged_only[0] += 1
    try:
        yield
    finally:
        _judged_only[0] -= 1


@dataclass(frozen=True)
class _Segment:
    node: cst.CSTNode | None  # the SimpleString or FormattedStringText; None for a `{...}` part
    start: int  # SQL offsets of its text
    end: int
    body: str  # its source text between the quotes (a `{...}` part: the name the SQL saw)
    # For each SQL offset in the segment, the source offset in `body` it decodes from; -1 inside
    # an escape that stands for several characters. Empty when the text could not be decoded.
    offsets: tuple[int, ...]
    quote: str
    raw: bool  # an r-string: backslashes are themselves
    in_fstring: bool
    last: bool  # nothing follows it before the closing quote


def rewrite(expression: cst.CSTNode, sql: str, edits: list[tuple[int, int, str]]) -> cst.CSTNode | NoFix:
    """The expression with `sql[start:end]` replaced for each edit, or why that cannot be done."""
    segments = _mapped(expression, sql)
    if segments is None:
        return NoFix("the SQL string is not one the fixer can map back to its source")
    by_segment: dict[int, list[tuple[int, int, str]]] = {}
    for start, end, replacement in edits:
        if PLACEHOLDER in replacement:
            return NoFix("the rewrite would copy an interpolated `{...}` value into the SQL text")
        index = _holder(segments, start, end)
        if index is None:
            return NoFix("the rewrite would touch an interpolated `{...}` part or cross a joint between strings")
        by_segment.setdefault(index, []).append((start, end, replacement))
    new_nodes: dict[int, cst.CSTNode] = {}
    for index, own in by_segment.items():
        segment = segments[index]
        body = segment.body
        changed: list[tuple[int, int]] = []  # where each replacement now lies in `body`
        for start, end, replacement in sorted(own, reverse=True):
            low, high = (segment.offsets[o - segment.start] for o in (start, end))
            if low < 0 or high < 0:
                return NoFix("the rewrite would split an escape sequence written in the source")
            if segment.in_fstring:
                replacement = replacement.replace("{", "{{").replace("}", "}}")
            problem = _unquotable(segment, replacement)
            if problem:
                return NoFix(problem)
            body = body[:low] + replacement + body[high:]
            shift = len(replacement) - (high - low)
            changed = [(low, low + len(replacement))] + [(a + shift, b + shift) for a, b in changed]
        if _closes_early(segment, body, changed):
            return NoFix("the rewritten SQL would need different quotes around the string")
        if not _judged_only[0]:
            new_nodes[id(segment.node)] = _with_body(segment, body)
    if _judged_only[0]:
        return expression
    rewritten = expression.visit(_Replace(new_nodes))
    assert isinstance(rewritten, cst.CSTNode)  # leaves are swapped one for one, never removed
    return rewritten


@lru_cache(maxsize=8)
def _mapped(expression: cst.CSTNode, sql: str) -> tuple[_Segment, ...] | None:
    """The expression's segments when they spell `sql`. Kept for a few expressions: every finding
    in one generated query or `.sql` file edits the same literal, and reading and comparing it
    per finding made a file of N findings cost N times its length."""
    segments = _segments(expression)
    if segments is None or "".join(_text(s) for s in segments) != sql:
        return None
    return tuple(segments)


def _holder(segments: tuple[_Segment, ...], start: int, end: int) -> int | None:
    """The literal segment holding [start, end); an insertion at a joint goes to a literal side."""
    found = [i for i, s in enumerate(segments) if s.node is not None and s.start <= start and end <= s.end]
    found = [i for i in found if segments[i].offsets]
    return found[0] if found else None


def _unquotable(segment: _Segment, replacement: str) -> str | None:
    """Why `replacement` cannot be written as it is into the segment's source."""
    if "\\" in replacement:
        return "the rewritten SQL would hold a backslash, which the string would read as an escape"
    if len(segment.quote) == 1 and ("\n" in replacement or segment.quote in replacement):
        return "the rewritten SQL would need different quotes around the string"
    return None


def _closes_early(segment: _Segment, body: str, changed: list[tuple[int, int]]) -> bool:
    """The new body holds its closing quote (unescaped), or ends where a triple quote would
    take its last character. `changed`: where in `body` the replacements lie."""
    # An escape is skipped whole (in a raw string too, a quote after a backslash does not close
    # it); a regular expression, since the body may be a whole generated query. The old body
    # closed nowhere, so a closing quote can only be near a replacement: the whole body (a
    # generated query, a .sql file) is scanned only when a quote character is.
    if any(_quote_near(segment.quote, body, start, end) for start, end in changed) and _up_to_quote(
        segment.quote
    ).match(body):
        return True
    return segment.last and body.endswith(segment.quote[0]) and not body.endswith("\\" + segment.quote[0])


def _quote_near(quote: str, body: str, start: int, end: int) -> bool:
    """A quote character in `body[start:end]`, or close enough to be read with it: one whose
    escaping the replacement may have changed (after a run of backslashes that now ends
    elsewhere), or one of a triple quote the replacement completes."""
    # Beyond the first character that is not a backslash after the replacement, every escape
    # begins where it did before.
    stop = end
    while stop < len(body) and body[stop] == "\\":
        stop += 1
    return quote[0] in body[max(0, start - len(quote)) : stop + len(quote)]


@lru_cache(maxsize=4)
def _up_to_quote(quote: str) -> re.Pattern[str]:
    quoted = re.escape(quote)
    return re.compile(rf"(?:\\[\s\S]|(?!{quoted})[^\\])*{quoted}")


def _with_body(segment: _Segment, body: str) -> cst.CSTNode:
    node = segment.node
    if isinstance(node, cst.FormattedStringText):
        return node.with_changes(value=body)
    assert isinstance(node, cst.SimpleString)
    value = node.value
    head = value[: len(value) - len(segment.body) - len(segment.quote)]
    return node.with_changes(value=f"{head}{body}{segment.quote}")


class _Replace(cst.CSTTransformer):
    def __init__(self, new_nodes: dict[int, cst.CSTNode]) -> None:
        self.new_nodes = new_nodes

    def on_leave(self, original_node: cst.CSTNodeT, updated_node: cst.CSTNodeT) -> cst.CSTNodeT:
        # A new node is the old one with a new body (_with_body): the same kind of node.
        return cast(cst.CSTNodeT, self.new_nodes.get(id(original_node), updated_node))


def _text(segment: _Segment) -> str:
    if segment.node is None:
        return segment.body  # the placeholder name the SQL saw
    decoded = _decoded(segment.body, segment.raw, segment.in_fstring)
    return decoded[0] if decoded is not None else ""


@lru_cache(maxsize=64)
def _decoded(body: str, raw: bool, braces: bool) -> tuple[str, tuple[int, ...]] | None:
    """The text `body` spells, and for each offset in it the source offset it decodes from (-1
    between two characters of one escape, such as an unknown `\\d` kept as two). Kept for a few
    bodies: each finding in one long query maps its fix back through the same literal."""
    # decode_body copies each position from `where` untouched: plain offsets in, offsets out.
    decoded = decode_body(body, cast(list[Anchored], list(range(len(body) + 1))), raw, braces)
    if decoded is None:
        return None
    where = cast(list[int], decoded.positions)
    offsets = [where[0]] + [-1 if where[i] == where[i - 1] else where[i] for i in range(1, len(where))]
    return decoded.text, tuple(offsets)


def _segments(node: cst.CSTNode, offset: int = 0) -> list[_Segment] | None:
    if isinstance(node, cst.Arg):
        return _segments(node.value, offset)
    if isinstance(node, cst.SimpleString):
        prefix, width = quotes(node.value)
        if "b" in prefix:
            return None
        quote = node.value[len(prefix) : len(prefix) + width]
        body = node.value[len(prefix) + width : len(node.value) - width]
        return [_literal(node, body, offset, quote, "r" in prefix, False, True)]
    if isinstance(node, cst.FormattedString):
        return _formatted(node, offset)
    if isinstance(node, cst.ConcatenatedString) or (
        isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add)
    ):
        left = _segments(node.left, offset)
        if left is None:
            return None
        right = _segments(node.right, left[-1].end if left else offset)
        return None if right is None else left + right
    return None


def _formatted(node: cst.FormattedString, offset: int) -> list[_Segment] | None:
    prefix = node.prefix.lower()
    if "b" in prefix:
        return None
    quote = node.start[len(node.prefix) :]
    found = []
    for number, part in enumerate(node.parts):
        last = number == len(node.parts) - 1
        if isinstance(part, cst.FormattedStringText):
            segment = _literal(part, part.value, offset, quote, "r" in prefix, True, last)
        else:
            name = f"{PLACEHOLDER}{number}"
            segment = _Segment(None, offset, offset + len(name), name, (), quote, False, True, last)
        found.append(segment)
        offset = segment.end
    return found


def _literal(
    node: cst.CSTNode, body: str, offset: int, quote: str, raw: bool, in_fstring: bool, last: bool
) -> _Segment:
    decoded = _decoded(body, raw, in_fstring)
    text, offsets = decoded if decoded is not None else (body, ())
    return _Segment(node, offset, offset + len(text), body, offsets, quote, raw, in_fstring, last)
