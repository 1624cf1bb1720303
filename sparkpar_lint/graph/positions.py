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
import typing
from collections.abc import Iterator, Mapping, MutableMapping
from dataclasses import fields

import libcst as cst
from libcst.metadata import BaseMetadataProvider, CodePosition, CodeRange
from libcst.metadata.position_provider import (
    PositionProvider,
    PositionProvidingCodegenState,
)

_N = typing.TypeVar("_N", bound=cst.CSTNode)
# How LibCST's position codegen counts lines.
_NEWLINE = re.compile(r"\r\n?|\n")
_LAST_NEWLINE = re.compile(r"(?:\r\n?|\n)\Z")
# Statements whose code is generated on their own (_UNIT below): statement lines and compound
# statements. The small statements of `if x: a; b` belong to their compound statement, since they
# do not start a line.


class Positions(Mapping[cst.CSTNode, CodeRange]):
    """`positions[node]` is the node's `CodeRange`, computed on first use."""

    def __init__(self, module: cst.Module, source: str | None = None) -> None:
        self._module = module
        self._source = source
        self._ranges: MutableMapping[cst.CSTNode, CodeRange] = {}
        # id(node) -> index into _units (-1: outside every statement), for the nodes walked so far
        self._unit_of: dict[int, int] = {}
        self._units: list[tuple[cst.CSTNode, tuple[str, ...], int]] = []  # statement, indents, ast index
        # unit -> its nodes' ranges, lines to add
        self._unit_ranges: dict[int, tuple[MutableMapping[cst.CSTNode, CodeRange], int]] = {}
        self._failed: set[int] = set()
        self._walk = self._statements()
        self._starts: list[int] | None = None  # ast statements' first lines, in file order
        self._functions: list[tuple[str, int, int]] | None = None  # see top_level_functions
        self._line_offsets: list[int] | None = None
        self._whole = False
        self._by_type: dict[type, list[cst.CSTNode]] | None = None
        self._trivia_indexed = False

    # ----------------------------------------------------------------- Mapping

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        found = self._ranges.get(node)
        if found is None and not self._whole:
            unit = self._find_unit(node)
            if unit is None:
                raise KeyError(node)  # a node of another tree
            if unit >= 0 and self._generate(unit):
                ranges, shift = self._unit_ranges[unit]
                found = ranges.get(node)
                if found is not None and shift:
                    found = _moved(found, shift)
            else:
                self._generate_whole()  # the module, its header or footer, or a doubtful place
                found = self._ranges.get(node)
            if found is not None:
                self._ranges[node] = found
        if found is None:
            raise KeyError(node)
        return found

    def __iter__(self) -> Iterator[cst.CSTNode]:
        self._generate_whole()
        return iter(self._ranges)

    def __len__(self) -> int:
        self._generate_whole()
        return len(self._ranges)

    def nodes_of(self, kind: type[_N]) -> list[_N]:
        """Every node of exactly this type in the module, in file order (one walk, kept; it
        passes over whitespace, brackets and punctuation unless one of those is asked for)."""
        found: list[cst.CSTNode]
        trivia = issubclass(kind, _TRIVIA)
        if trivia:
            found = [node for node in walk(self._module) if type(node) is kind]
        else:
            if self._by_type is None:
                self._by_type = {}
                for node in walk(self._module, trivia=False):
                    self._by_type.setdefault(type(node), []).append(node)
            found = list(self._by_type.get(kind, ()))
        return typing.cast("list[_N]", found)  # each of exactly type `kind`

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
            else:
                if not self._trivia_indexed:
                    # Whitespace, commas and brackets are skipped by the first walk: nobody asks
                    # where they are, except the odd caller that gets this second, full walk.
                    self._trivia_indexed = True
                    for _ in self._statements(trivia=True):
                        pass
        return self._unit_of.get(key)

    def _statements(self, trivia: bool = False) -> Iterator[None]:
        """Walk the module in file order, noting each node's innermost statement; pauses at each
        statement, so a lookup walks only as far as its node. Without `trivia`, the subtrees of
        whitespace, comment, bracket and punctuation fields are passed over."""
        count = 0  # statements so far, counted as `ast` counts them
        units = 0
        stack: list[tuple[cst.CSTNode, int, tuple[str, ...]]] = [(self._module, -1, ())]
        unit_of = self._unit_of
        default_indent = self._module.default_indent
        elifs: set[int] = set()
        while stack:
            node, unit, indents = stack.pop()
            code_fields, all_fields, role = _kind(type(node))
            if role:
                # The role flags stand for the node's exact type (see _kind), hence the casts.
                if role & _IF and type(orelse := typing.cast(cst.If, node).orelse) is cst.If:
                    elifs.add(id(orelse))
                if id(node) in elifs:
                    count += 1  # an `elif` is generated only as part of its `if` (alone it says `if`)
                elif role & _UNIT:
                    unit, units = units, units + 1
                    if not trivia:
                        self._units.append((node, indents, count))
                    count += len(typing.cast(cst.SimpleStatementLine, node).body) if role & _LINE else 1
                    yield
                elif role & _SUITE:
                    count += len(typing.cast(cst.SimpleStatementSuite, node).body)
                if role & _INDENTS:
                    indent = typing.cast("cst.IndentedBlock | cst.Match", node).indent
                    indents = (*indents, default_indent if indent is None else indent)
            unit_of[id(node)] = unit
            for name in reversed(all_fields if trivia else code_fields):
                value = getattr(node, name)
                if type(value) in _SEQUENCES:
                    stack.extend((child, unit, indents) for child in reversed(value) if _is_node(child))
                elif _is_node(value):
                    stack.append((value, unit, indents))

    # -------------------------------------------------------------- generating

    def _generate(self, unit: int) -> bool:
        """Positions of every node in one statement; False if they cannot be placed for sure."""
        if unit in self._unit_ranges:
            return True
        if unit in self._failed:
            return False
        self._failed.add(unit)  # until it is placed below
        statement, indents, index = self._units[unit]
        starts = self._statement_starts()
        if starts is None or index >= len(starts):
            return False
        provider = PositionProvider()
        state = _PlacingState(
            default_indent=self._module.default_indent,
            default_newline=self._module.default_newline,
            provider=provider,
        )
        state.indent_tokens = list(indents)
        statement._codegen(state)
        ranges = _computed(provider)
        shift = starts[index] - ranges[statement].start.line
        if not self._matches_source("".join(state.tokens), 1 + shift):
            return False
        # Moved to the statement's real lines one node at a time, as they are asked for.
        self._unit_ranges[unit] = (ranges, shift)
        self._failed.discard(unit)
        return True

    def _generate_whole(self) -> None:
        if self._whole:
            return
        self._whole = True
        provider = PositionProvider()
        state = _PlacingState(
            default_indent=self._module.default_indent,
            default_newline=self._module.default_newline,
            provider=provider,
        )
        self._module._codegen(state)
        self._ranges = _computed(provider)

    def _text(self) -> str:
        if self._source is None:
            self._source = self._module.code
        return self._source

    def top_level_functions(self) -> list[tuple[str, int, int]] | None:
        """(name, first line counting decorators, last line) of each top-level def that takes
        parameters, from the `ast` parse that places statements (one parse of a large module
        costs seconds); None when `ast` cannot read the module."""
        self._statement_starts()
        return self._functions

    def _statement_starts(self) -> list[int] | None:
        if self._starts is None:
            try:
                tree = ast.parse(self._text())
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                self._starts = []  # syntax this Python does not read: every lookup falls back
            else:
                self._starts = [s.lineno for s in _ast_statements(tree.body)]
                self._functions = functions_with_parameters(tree)
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


class _PlacingState(PositionProvidingCodegenState):
    """LibCST's position codegen, to the same positions, at about half its own cost: every node
    calls these three methods, and LibCST's versions spend more on a generator-based context
    manager, a regex split of each token and position objects nobody reads than on the code."""

    __slots__ = ()
    # before_codegen below pushes (line, column), not the CodePosition LibCST declares.
    _stack: list[tuple[int, int]]  # type: ignore[assignment]

    def _update_position(self, value: str) -> None:
        if "\n" in value or "\r" in value:
            super()._update_position(value)
        else:
            self.column += len(value)

    def before_codegen(self, node: cst.CSTNode) -> None:
        self._stack.append((self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self._stack.pop()
        computed = self.provider._computed
        if node not in computed:
            computed[node] = CodeRange(CodePosition(*start), CodePosition(self.line, self.column))

    def record_syntactic_position(  # type: ignore[override]
        self, node: cst.CSTNode, *, start_node: cst.CSTNode | None = None, end_node: cst.CSTNode | None = None
    ) -> _Syntactic:
        return _Syntactic(self, node, start_node, end_node)


class _Syntactic:
    """`PositionProvidingCodegenState.record_syntactic_position`, as a plain context manager."""

    __slots__ = ("state", "node", "start_node", "end_node", "start")

    def __init__(
        self, state: _PlacingState, node: cst.CSTNode, start_node: cst.CSTNode | None, end_node: cst.CSTNode | None
    ) -> None:
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node

    def __enter__(self) -> None:
        self.start = (self.state.line, self.state.column)

    def __exit__(self, *exception: object) -> None:
        state = self.state
        computed = _computed(state.provider)
        start = computed[self.start_node].start if self.start_node is not None else CodePosition(*self.start)
        end = computed[self.end_node].end if self.end_node is not None else CodePosition(state.line, state.column)
        computed[self.node] = CodeRange(start, end)


def walk(node: cst.CSTNode, trivia: bool = True) -> Iterator[cst.CSTNode]:
    """`node` and everything under it, in file order; without `trivia`, not the subtrees of
    whitespace, comment, bracket and punctuation fields (a third of a module's nodes)."""
    stack = [node]
    which: typing.Literal[0, 1] = 1 if trivia else 0
    while stack:
        current = stack.pop()
        yield current
        for name in reversed(_kind(type(current))[which]):
            value = getattr(current, name)
            if type(value) in _SEQUENCES:
                stack.extend(child for child in reversed(value) if _is_node(child))
            elif _is_node(value):
                stack.append(value)


def code_children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`node`'s children in the fields that may hold code (as `walk` without `trivia`), in no
    particular order."""
    for name in _kind(type(node))[0]:
        value = getattr(node, name)
        if type(value) in _SEQUENCES:
            yield from (child for child in value if _is_node(child))
        elif _is_node(value):
            yield value


# What a walk needs to know of each node type, worked out once per type (isinstance against
# LibCST's abstract classes is slow enough to matter over a million nodes).
_UNIT, _LINE, _SUITE, _INDENTS, _IF = 1, 2, 4, 8, 16
_SEQUENCES = (list, tuple)
# Fields holding only these never hold an expression or a statement.
_TRIVIA = (
    cst.BaseParenthesizableWhitespace,
    cst.TrailingWhitespace,
    cst.EmptyLine,
    cst.Newline,
    cst.Comment,
    cst.LeftParen,
    cst.RightParen,
    cst.LeftSquareBracket,
    cst.RightSquareBracket,
    cst.LeftCurlyBrace,
    cst.RightCurlyBrace,
    cst.Comma,
    cst.Colon,
    cst.Semicolon,
    cst.Dot,
    cst.AssignEqual,
    cst.MaybeSentinel,
)
_KINDS: dict[type, tuple[tuple[str, ...], tuple[str, ...], int]] = {}
_NODE_TYPES: dict[type, bool] = {}


def _is_node(value: object) -> bool:
    kind = type(value)
    known = _NODE_TYPES.get(kind)
    if known is None:
        known = _NODE_TYPES[kind] = issubclass(kind, cst.CSTNode)
    return known


def _kind(kind: type) -> tuple[tuple[str, ...], tuple[str, ...], int]:
    """(fields that may hold code, all fields, role flags) of a node type."""
    found = _KINDS.get(kind)
    if found is None:
        every = tuple(f.name for f in fields(kind))
        code = tuple(f.name for f in fields(kind) if _may_hold_code(f.type))
        role = 0
        if issubclass(kind, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            role |= _UNIT | (_LINE if kind is cst.SimpleStatementLine else 0) | (_IF if kind is cst.If else 0)
        if kind is cst.SimpleStatementSuite:
            role |= _SUITE
        if kind in (cst.IndentedBlock, cst.Match):
            role |= _INDENTS
        found = _KINDS[kind] = (code, every, role)
    return found


def _may_hold_code(annotation: object) -> bool:
    if typing.get_origin(annotation) is typing.Literal:
        return False
    parts = typing.get_args(annotation)
    if parts:
        return any(_may_hold_code(part) for part in parts)
    if annotation in (str, bool, int, type(None)):
        return False
    if isinstance(annotation, type):
        return not issubclass(annotation, _TRIVIA)
    return True  # a forward reference, or anything unforeseen: walk it


def functions_with_parameters(tree: ast.Module) -> list[tuple[str, int, int]]:
    """(name, first line counting decorators, last line) of each top-level def with parameters."""
    return [
        (s.name, min([s.lineno, *(d.lineno for d in s.decorator_list)]), s.end_lineno or s.lineno)
        for s in tree.body
        if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef) and s.args.args
    ]


def _ast_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements in file order, nested ones after the statement holding them."""
    for statement in body:
        yield statement
        for name in ("body", "handlers", "orelse", "finalbody", "cases"):
            for part in getattr(statement, name, ()):
                yield from _ast_statements([part] if isinstance(part, ast.stmt) else part.body)


def _computed(provider: BaseMetadataProvider[CodeRange]) -> MutableMapping[cst.CSTNode, CodeRange]:
    # _PlacingState stores a CodeRange, never a lazy value, for every node it places.
    return typing.cast("MutableMapping[cst.CSTNode, CodeRange]", provider._computed)


def _moved(where: CodeRange, lines: int) -> CodeRange:
    return CodeRange(
        CodePosition(where.start.line + lines, where.start.column),
        CodePosition(where.end.line + lines, where.end.column),
    )
