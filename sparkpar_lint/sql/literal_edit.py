"""Edits of the SQL a Python string expression spells, written back into its literal parts only.

A plain literal, an f-string, or a concatenation of them (implicit or with `+`) is split into
segments in the order sql_text reads them: literal text, and the `{...}` parts of f-strings,
which the SQL saw as opaque names. An edit at SQL offsets is written into the one literal
segment that holds it, whose source text is the SQL itself (no escapes, no `{{`). The
interpolated parts are kept byte for byte; an edit that would touch or copy one is refused
with the reason, which `sparkpar fix --show-unfixed` prints.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from sparkpar_lint.sql.text import decode_body, quotes

PLACEHOLDER = "__sparkpar_p"  # how sql_text names an f-string's `{...}` part


@dataclass(frozen=True)
class _Segment:
    node: cst.CSTNode | None  # the SimpleString or FormattedStringText; None for a `{...}` part
    start: int  # SQL offsets of its text
    end: int
    body: str  # its source text between the quotes (a `{...}` part: the name the SQL saw)
    editable: bool  # the source text is the SQL text: an SQL offset is a source offset
    quote: str
    raw: bool  # an r-string: backslashes are themselves
    in_fstring: bool
    last: bool  # nothing follows it before the closing quote


def rewrite(expression: cst.CSTNode, sql: str, edits: list[tuple[int, int, str]]) -> cst.CSTNode | str:
    """The expression with `sql[start:end]` replaced for each edit, or why that cannot be done."""
    segments = _segments(expression)
    if segments is None or "".join(_text(s) for s in segments) != sql:
        return "the SQL string is not one the fixer can map back to its source"
    by_segment: dict[int, list[tuple[int, int, str]]] = {}
    for start, end, replacement in edits:
        if PLACEHOLDER in replacement:
            return "the rewrite would copy an interpolated `{...}` value into the SQL text"
        index = _holder(segments, start, end)
        if index is None:
            return "the rewrite would touch an interpolated `{...}` part or cross a joint between strings"
        if not segments[index].editable:
            return "the SQL to rewrite is written with escapes (`\\n`, `{{`) in the source"
        by_segment.setdefault(index, []).append((start, end, replacement))
    new_nodes: dict[int, cst.CSTNode] = {}
    for index, own in by_segment.items():
        segment = segments[index]
        body = segment.body
        for start, end, replacement in sorted(own, reverse=True):
            if segment.in_fstring:
                replacement = replacement.replace("{", "{{").replace("}", "}}")
            body = body[: start - segment.start] + replacement + body[end - segment.start :]
        problem = _unquotable(segment, body)
        if problem:
            return problem
        new_nodes[id(segment.node)] = _with_body(segment, body)
    rewritten = expression.visit(_Replace(new_nodes))
    assert isinstance(rewritten, cst.CSTNode)  # leaves are swapped one for one, never removed
    return rewritten


def _holder(segments: list[_Segment], start: int, end: int) -> int | None:
    """The literal segment holding [start, end); an insertion at a joint goes to a literal side."""
    found = [i for i, s in enumerate(segments) if s.node is not None and s.start <= start and end <= s.end]
    editable = [i for i in found if segments[i].editable]
    chosen = editable or found
    return chosen[0] if chosen else None


def _unquotable(segment: _Segment, body: str) -> str | None:
    quote = segment.quote
    if quote in body or (segment.last and body.endswith(quote[0])) or (len(quote) == 1 and "\n" in body):
        return "the rewritten SQL would need different quotes around the string"
    if not segment.raw and "\\" in body:
        return "the rewritten SQL would hold a backslash in a string that is not raw"
    return None


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

    def on_leave(self, original_node, updated_node):
        return self.new_nodes.get(id(original_node), updated_node)


def _text(segment: _Segment) -> str:
    if segment.node is None:
        return segment.body  # the placeholder name the SQL saw
    return _decoded(segment.body, segment.raw, segment.in_fstring) or ""


def _decoded(body: str, raw: bool, braces: bool) -> str | None:
    decoded = decode_body(body, [(None, 0, 0)] * (len(body) + 1), raw, braces)
    return decoded.text if decoded is not None else None


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
            segment = _Segment(None, offset, offset + len(name), name, False, quote, False, True, last)
        found.append(segment)
        offset = segment.end
    return found


def _literal(node, body: str, offset: int, quote: str, raw: bool, in_fstring: bool, last: bool) -> _Segment:
    decoded = _decoded(body, raw, in_fstring)
    text = decoded if decoded is not None else body
    return _Segment(node, offset, offset + len(text), body, decoded == body, quote, raw, in_fstring, last)
