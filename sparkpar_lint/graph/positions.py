"""LibCST positions (what `PositionProvider` gives) for the few nodes a run asks about.

`PositionProvider` generates the code of the whole module with a position recorded for every node:
about three parses' work, and most of it wasted, since a file reports a handful of spans. Here a
node's position comes from generating the code of the innermost statement holding it, started at
its real indentation; the statement's first line is taken from CPython's own parser (`ast`, C
speed), matched to LibCST's statements by their order in the file. Each statement's generated text
is compared with the source at that line, so a mismatch (a construct where the two parsers might
disagree) falls back to `PositionProvider` over the whole module instead of giving a wrong line.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from dataclasses import fields

import libcst as cst
from libcst.metadata import CodePosition, CodeRange
from libcst.metadata.position_provider import (
    PositionProvider,
    PositionProvidingCodegenState,
)

# How LibCST's position codegen counts lines.
_NEWLINE = re.compile(r"\r\n?|\n")
_LAST_NEWLINE = re.compile(r"(?:\r\n?|\n)\Z")
# Statements whose code is generated on their own. The small statements of `if x: a; b` belong
# to their compound statement, since they do not start a line.
_UNIT = (cst.SimpleStatementLine, cst.BaseCompoundStatement)


class Positions(Mapping):
    """`positions[node]` is the node's `CodeRange`, computed on first use."""

    def __init__(self, module: cst.Module, source: str | None = None) -> None:
        self._module = module
        self._source = source
        self._ranges: dict[cst.CSTNode, CodeRange] = {}
        # id(node) -> index into _units (-1: outside every statement), for the nodes walked so far
        self._unit_of: dict[int, int] = {}
        self._units: list[tuple[cst.CSTNode, tuple[str, ...], int]] = []  # statement, indents, ast index
        self._generated: set[int] = set()
        self._walk = self._statements()
        self._starts: list[int] | None = None  # ast statements' first lines, in file order
        self._line_offsets: list[int] | None = None
        self._whole = False
        self._by_type: dict[type, list] | None = None

    # ----------------------------------------------------------------- Mapping

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        found = self._ranges.get(node)
        if found is None and not self._whole:
            unit = self._find_unit(node)
            if unit is None:
                raise KeyError(node)  # a node of another tree
            if unit < 0 or not self._generate(unit):
                self._generate_whole()  # the module, its header or footer, or a doubtful place
            found = self._ranges.get(node)
        if found is None:
            raise KeyError(node)
        return found

    def __iter__(self) -> Iterator[cst.CSTNode]:
        self._generate_whole()
        return iter(self._ranges)

    def __len__(self) -> int:
        self._generate_whole()
        return len(self._ranges)

    def nodes_of(self, kind: type) -> list:
        """Every node of exactly this type in the module, in file order (one walk, kept)."""
        if self._by_type is None:
            self._by_type = {}
            for node in walk(self._module):
                self._by_type.setdefault(type(node), []).append(node)
        return list(self._by_type.get(kind, ()))

    def statement_of(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The innermost statement line or compound statement holding `node` (None: none does)."""
        unit = self._find_unit(node)
        return self._units[unit][0] if unit is not None and unit >= 0 else None

    # ------------------------------------------------------------ finding nodes

    def _find_unit(self, node: cst.CSTNode) -> int | None:
        key = id(node)
        if key not in self._unit_of:
            for _ in self._walk:
                if key in self._unit_of:
                    break
        return self._unit_of.get(key)

    def _statements(self) -> Iterator[None]:
        """Walk the module in file order, noting each node's innermost statement; pauses at each
        statement, so a lookup walks only as far as its node."""
        count = 0  # statements so far, counted as `ast` counts them
        stack: list[tuple[cst.CSTNode, int, tuple[str, ...]]] = [(self._module, -1, ())]
        unit_of = self._unit_of
        default_indent = self._module.default_indent
        elifs: set[int] = set()
        while stack:
            node, unit, indents = stack.pop()
            if isinstance(node, cst.If) and isinstance(node.orelse, cst.If):
                elifs.add(id(node.orelse))
            if id(node) in elifs:
                count += 1  # an `elif` is generated only as part of its `if` (alone it says `if`)
            elif isinstance(node, _UNIT):
                unit = len(self._units)
                self._units.append((node, indents, count))
                count += len(node.body) if isinstance(node, cst.SimpleStatementLine) else 1
                yield
            elif isinstance(node, cst.SimpleStatementSuite):
                count += len(node.body)
            unit_of[id(node)] = unit
            if isinstance(node, (cst.IndentedBlock, cst.Match)):
                indents = (*indents, default_indent if node.indent is None else node.indent)
            children = _children(node)
            stack.extend((child, unit, indents) for child in reversed(children))

    # -------------------------------------------------------------- generating

    def _generate(self, unit: int) -> bool:
        """Positions of every node in one statement; False if they cannot be placed for sure."""
        if unit in self._generated:
            return True
        self._generated.add(unit)
        statement, indents, index = self._units[unit]
        starts = self._statement_starts()
        if starts is None or index >= len(starts):
            return False
        provider = PositionProvider()
        state = PositionProvidingCodegenState(
            default_indent=self._module.default_indent,
            default_newline=self._module.default_newline,
            provider=provider,
        )
        state.indent_tokens = list(indents)
        statement._codegen(state)
        ranges = provider._computed
        shift = starts[index] - ranges[statement].start.line
        if not self._matches_source("".join(state.tokens), 1 + shift):
            return False
        if shift:
            ranges = {node: _moved(where, shift) for node, where in ranges.items()}
        for node, where in ranges.items():
            self._ranges.setdefault(node, where)
        return True

    def _generate_whole(self) -> None:
        if self._whole:
            return
        self._whole = True
        provider = PositionProvider()
        state = PositionProvidingCodegenState(
            default_indent=self._module.default_indent,
            default_newline=self._module.default_newline,
            provider=provider,
        )
        self._module._codegen(state)
        self._ranges = provider._computed

    def _text(self) -> str:
        if self._source is None:
            self._source = self._module.code
        return self._source

    def _statement_starts(self) -> list[int] | None:
        if self._starts is None:
            try:
                tree = ast.parse(self._text())
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                self._starts = []  # syntax this Python does not read: every lookup falls back
            else:
                self._starts = [s.lineno for s in _ast_statements(tree.body)]
        return self._starts or None

    def _matches_source(self, code: str, line: int) -> bool:
        text = self._text()
        if self._line_offsets is None:
            self._line_offsets = [0] + [m.end() for m in _NEWLINE.finditer(text)]
        if not 1 <= line <= len(self._line_offsets):
            return False
        start = self._line_offsets[line - 1]
        if text.startswith(code, start):
            return True
        # The file's last line may lack the newline every generated statement ends with.
        trimmed = _LAST_NEWLINE.sub("", code)
        return start + len(trimmed) == len(text) and text.endswith(trimmed)


def walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`node` and everything under it, in file order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(_children(current)))


def _children(node: cst.CSTNode) -> list[cst.CSTNode]:
    children = []
    for name in _field_names(type(node)):
        value = getattr(node, name)
        if isinstance(value, cst.CSTNode):
            children.append(value)
        elif isinstance(value, (list, tuple)):
            children.extend(v for v in value if isinstance(v, cst.CSTNode))
    return children


_FIELDS: dict[type, tuple[str, ...]] = {}


def _field_names(kind: type) -> tuple[str, ...]:
    names = _FIELDS.get(kind)
    if names is None:
        names = _FIELDS[kind] = tuple(f.name for f in fields(kind))
    return names


def _ast_statements(body: list) -> Iterator[ast.stmt]:
    """Statements in file order, nested ones after the statement holding them."""
    for statement in body:
        yield statement
        for name in ("body", "handlers", "orelse", "finalbody", "cases"):
            for part in getattr(statement, name, ()):
                yield from _ast_statements([part] if isinstance(part, ast.stmt) else part.body)


def _moved(where: CodeRange, lines: int) -> CodeRange:
    return CodeRange(
        CodePosition(where.start.line + lines, where.start.column),
        CodePosition(where.end.line + lines, where.end.column),
    )
