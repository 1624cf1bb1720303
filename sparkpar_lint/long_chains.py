"""Long method chains parsed a segment at a time, so their parse grows linearly with their length.

LibCST's native parser takes time that grows faster than quadratically with the number of
trailers (`.name`, `(...)`, `[...]`) of one expression: a chain of 300 `.withColumn(...)` calls
parses in 0.4 s, 1,000 in 10-14 s, 3,000 in minutes. Short chains cost it about the same per call
as separate statements. So a chain of LONG_CHAIN or more calls and subscripts is parsed in
segments of SEGMENT calls: the first segment as written, each later one as a placeholder name
followed by its own trailers, with the tree built so far put in the placeholder's place. The
file itself is parsed with the chain's prefix replaced by a placeholder, and the built prefix put
there too.

The tree is the one LibCST's own parse gives, node for node (`tests/test_long_chains.py` compares
them with `deep_equals` over many shapes of chain):
- the whitespace before a trailer belongs to the trailer's own node (`Dot.whitespace_before`,
  `Call.whitespace_after_func`, `Subscript.whitespace_after_value`), so cutting before a trailer
  moves no whitespace from one node to another;
- a segment is parsed in the context that decides how LibCST reads its whitespace: inside
  brackets or not, and the enclosing block's indentation (which a continuation line's
  `ParenthesizedWhitespace` is measured against); the newline kind is the file's;
- the first segment starts at the chain's first token and the last ends at its last, so the
  whitespace around the chain stays where it was.
Anything unexpected (a tokenizer error, a segment that does not come back as the expression it was,
mixed newline kinds) means no segmenting: the plain parse decides, as before.
"""

from __future__ import annotations

import io
import keyword
import re
import token
import tokenize
from dataclasses import dataclass, field

import libcst as cst

# Chains with this many calls and subscripts or more are parsed in segments ...
LONG_CHAIN = 64
# ... of this many: LibCST parses 16 chained calls at about 185 us a call, 64 at 330 us, 256 at 1.1 ms.
SEGMENT = 16

# For the cheap test below: strings and comments (the tokenize module's own string patterns; a
# string's prefix letters stay behind, harmlessly), and the innermost bracket pairs.
_STRING_OR_COMMENT = re.compile(
    "|".join(
        (
            r"#[^\r\n]*",
            "'''" + tokenize.Single3,
            '"""' + tokenize.Double3,
            r"'[^\n'\\]*(?:\\.[^\n'\\]*)*'",
            r'"[^\n"\\]*(?:\\.[^\n"\\]*)*"',
        )
    ),
    re.DOTALL,
)
_INNERMOST_BRACKETS = re.compile(r"[(\[{][^()\[\]{}]*[)\]}]")
# A call or subscript (its brackets collapsed to \x01), after any number of `.name`s.
_TRAILER = r"\s*(?:\.\s*[^\W\d]\w*\s*)*\x01"
# Anchored on a collapsed call so the search skips ahead at C speed (a leading `\s*` would make
# every position a start): the first call of the run, then LONG_CHAIN - 1 more trailers.
_LONG_RUN = re.compile(f"\x01(?:{_TRAILER}){{{LONG_CHAIN - 1}}}")
_SOFT_KEYWORDS = frozenset(keyword.softkwlist) - {"_"}
_ATOM_KEYWORDS = frozenset(("True", "False", "None"))
_FSTRING_START = getattr(token, "FSTRING_START", None)  # Python 3.12+
_FSTRING_END = getattr(token, "FSTRING_END", None)


class _NotTheSame(Exception):
    """A segment did not parse as the expression it was cut from."""


def may_hold_a_long_chain(source: str) -> bool:
    """False only when no expression can have LONG_CHAIN calls and subscripts in a row: a pass at C
    speed (about 2% of LibCST's parse) that spares every ordinary file the tokenizer's walk.
    Brackets are collapsed innermost first, round by round, so a chain shows as a run of collapsed
    calls once its arguments have gone."""
    if source.count(")") + source.count("]") < LONG_CHAIN:
        return False
    text = _STRING_OR_COMMENT.sub(" ", source).replace("\\\r\n", " ").replace("\\\n", " ")
    while True:
        collapsed = _INNERMOST_BRACKETS.sub("\x01", text)
        if _LONG_RUN.search(collapsed):
            return True
        if len(collapsed) == len(text):
            return False
        text = collapsed


@dataclass
class _Chain:
    start: int  # offset of the chain's first character
    depth: int  # brackets around it (0: a statement's own level, where newlines need a backslash)
    indent: str  # the enclosing block's indentation
    safe: bool  # False where a placeholder could not stand in for the prefix
    calls: int = 0
    # Where segments begin: just after every SEGMENT-th call or subscript, so that the
    # whitespace before the next trailer, which its node owns, goes with it.
    cuts: list[int] = field(default_factory=list)
    closed_at: int = 0  # offset just past the last closing bracket of a trailer
    string_atom: bool = False
    pending_cut: bool = False

    def trailer(self, call: bool) -> None:
        if self.pending_cut:
            self.cuts.append(self.closed_at)
            self.pending_cut = False
        if call:
            self.calls += 1
            self.pending_cut = self.calls % SEGMENT == 0


@dataclass
class _Level:
    """The state of one bracket level of the token walk."""

    chain: _Chain | None = None
    after_primary: bool = False  # the last token ended an atom or a trailer
    expect_attribute: bool = False  # the last token was a trailer's dot


class _Walk:
    """Finds chains of LONG_CHAIN or more calls and subscripts with Python's tokenizer."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.line_offsets = [0]
        for line in io.StringIO(source):
            self.line_offsets.append(self.line_offsets[-1] + len(line))
        self.levels = [_Level()]
        self.indents = [""]
        self.found: list[_Chain] = []
        self.in_import = False
        self.statement_start = True

    def offset(self, position: tuple[int, int]) -> int:
        return self.line_offsets[position[0] - 1] + position[1]

    def close(self, level: _Level) -> None:
        chain = level.chain
        if chain is not None and chain.calls >= LONG_CHAIN and chain.safe and chain.cuts and not self.in_import:
            self.found.append(chain)
        level.chain = None

    def start(self, level: _Level, offset: int, string: bool = False, safe: bool = True) -> None:
        self.close(level)
        before = self.source[offset - 1] if offset else " "
        # A placeholder right after a name or number would merge with it (`not(x).a()`).
        safe = safe and not (before.isalnum() or before == "_" or not before.isascii())
        level.chain = _Chain(offset, len(self.levels) - 1, self.indents[-1], safe, string_atom=string)

    def run(self) -> list[_Chain]:
        fstrings = 0
        for tok in tokenize.generate_tokens(io.StringIO(self.source).readline):
            kind, text = tok.type, tok.string
            if fstrings:
                if kind == _FSTRING_START:
                    fstrings += 1
                elif kind == _FSTRING_END:
                    fstrings -= 1
                    if not fstrings:
                        self.levels[-1].after_primary = True
                continue
            if kind in (tokenize.NL, tokenize.COMMENT):
                continue
            if kind == tokenize.INDENT:
                self.indents.append(text)
                continue
            if kind == tokenize.DEDENT:
                self.indents.pop()
                continue
            level = self.levels[-1]
            if kind in (tokenize.NEWLINE, tokenize.ENDMARKER) or (text == ";" and len(self.levels) == 1):
                self.close(level)
                level.after_primary = level.expect_attribute = False
                self.in_import, self.statement_start = False, True
                continue
            if kind == tokenize.ERRORTOKEN:
                raise _NotTheSame("tokenizer error")
            first_of_statement, self.statement_start = self.statement_start, False
            if level.expect_attribute:
                level.expect_attribute = False
                if kind == tokenize.NAME:
                    level.after_primary = True
                    continue
            if kind == tokenize.OP and text in "([{":
                if level.after_primary and text != "{" and level.chain is not None:
                    level.chain.trailer(call=True)
                else:
                    self.start(level, self.offset(tok.start))
                self.levels.append(_Level())
                continue
            if kind == tokenize.OP and text in ")]}":
                if len(self.levels) == 1:
                    raise _NotTheSame("unbalanced brackets")
                self.close(self.levels.pop())
                outer = self.levels[-1]
                outer.after_primary = True
                if outer.chain is not None:
                    outer.chain.closed_at = self.offset(tok.end)
                continue
            if kind == tokenize.OP and text == "." and level.after_primary and level.chain is not None:
                level.chain.trailer(call=False)
                level.after_primary, level.expect_attribute = False, True
                continue
            if kind == tokenize.NAME and keyword.iskeyword(text) and text not in _ATOM_KEYWORDS:
                self.close(level)
                level.after_primary = False
                if first_of_statement and text in ("import", "from"):
                    self.in_import = True
                continue
            if kind in (tokenize.NAME, tokenize.NUMBER) or (kind == tokenize.OP and text == "..."):
                self.start(level, self.offset(tok.start), safe=text not in _SOFT_KEYWORDS)
                level.after_primary = True
                continue
            if kind == tokenize.STRING or kind == _FSTRING_START:
                chain = level.chain
                # Adjacent strings are one atom: `"a" "b".join(...)`.
                if not (chain is not None and chain.string_atom and not chain.calls and level.after_primary):
                    self.start(level, self.offset(tok.start), string=True)
                if kind == tokenize.STRING:
                    level.after_primary = True
                else:
                    fstrings = 1
                continue
            # Any other operator ends the primary before it.
            self.close(level)
            level.after_primary = False
        return self.found


def parse_module(source: str) -> cst.Module:
    """What `libcst.parse_module(source)` gives, with long chains parsed in segments.
    Raises LibCST's ParserSyntaxError for code that does not parse."""
    newline = _single_newline_kind(source)
    if newline is not None:
        try:
            return _parse(source, newline)
        except (_NotTheSame, cst.ParserSyntaxError, RecursionError):
            # A syntax error's place and LibCST's message would be a segment's: the plain parse
            # names them as before (slowly, within the file's time budget). RecursionError: the
            # placing walk off the deep-stack thread; the plain parse needs no Python recursion.
            pass
    return cst.parse_module(source)


def _single_newline_kind(source: str) -> str | None:
    """The file's newline, or None when it mixes kinds (LibCST records a newline that differs
    from the file's first one on its node, so a segment must see the same kind)."""
    if "\r" not in source:
        return "\n"
    if source.count("\r") == source.count("\r\n") == source.count("\n"):
        return "\r\n"
    return None


def _parse(source: str, newline: str) -> cst.Module:
    if not may_hold_a_long_chain(source):
        return cst.parse_module(source)
    try:
        chains = _Walk(source).run()
    except (tokenize.TokenError, SyntaxError) as error:  # IndentationError too
        raise _NotTheSame(str(error)) from error
    if not chains:
        return cst.parse_module(source)
    # Chains inside another chain's replaced prefix are handled when its segments are parsed.
    chains.sort(key=lambda chain: chain.start)
    outermost: list[_Chain] = []
    for chain in chains:
        if not outermost or chain.start >= outermost[-1].cuts[-1]:
            outermost.append(chain)
    names: dict[str, cst.BaseExpression] = {}
    pieces, done = [], 0
    for chain in outermost:
        name = _unused_name(source, len(names))
        names[name] = _prefix_tree(source, chain, newline)
        pieces += [source[done : chain.start], name]
        done = chain.cuts[-1]
    pieces.append(source[done:])
    module = cst.parse_module("".join(pieces))
    grafted = _put_in_place(module, names)
    if names:
        raise _NotTheSame("a placeholder was not found in the tree")
    assert isinstance(grafted, cst.Module)
    return grafted


def _unused_name(source: str, number: int) -> str:
    name = f"_sparkpar_chain_{number}"
    while name in source:
        name += "_"
    return name


def _prefix_tree(source: str, chain: _Chain, newline: str) -> cst.BaseExpression:
    """The tree of the chain up to its last cut, built a segment at a time."""
    placeholder = _unused_name(source, 0)
    bounds = [chain.start, *chain.cuts]
    tree = _expression(source[bounds[0] : bounds[1]], chain, newline)
    for begin, end in zip(bounds[1:], bounds[2:]):
        segment = _expression(placeholder + source[begin:end], chain, newline)
        tree = _graft_at_the_root(segment, placeholder, tree)
    return tree


def _expression(text: str, chain: _Chain, newline: str) -> cst.BaseExpression:
    """`text` parsed as an expression where the chain stands: inside brackets or not, and in a
    block of the chain's indentation (a continuation line's whitespace is read against it)."""
    body = f"({text})" if chain.depth else text
    if chain.indent:
        if chain.indent.strip(" \t"):
            raise _NotTheSame("unusual indentation")
        wrapper = f"if 1:{newline}{chain.indent}{body}{newline}"
    else:
        wrapper = body + newline
    module = _parse(wrapper, newline)  # the segment may hold long chains of its own
    statement: cst.BaseStatement = module.body[0]
    if chain.indent:
        if not isinstance(statement, cst.If) or not isinstance(statement.body, cst.IndentedBlock):
            raise _NotTheSame("not the block it was put in")
        statement = statement.body.body[0]
    if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1):
        raise _NotTheSame("not one expression")
    expression = statement.body[0]
    if not isinstance(expression, cst.Expr):
        raise _NotTheSame("not one expression")
    value = expression.value
    if chain.depth:
        # The brackets added above are the outermost pair: take them off again.
        if not (value.lpar and value.rpar and _bare(value.lpar[0]) and _bare(value.rpar[-1])):
            raise _NotTheSame("the added brackets are not where they were put")
        value = value.with_changes(lpar=value.lpar[1:], rpar=value.rpar[:-1])
    return value


def _bare(paren: cst.LeftParen | cst.RightParen) -> bool:
    spacing = paren.whitespace_after if isinstance(paren, cst.LeftParen) else paren.whitespace_before
    return isinstance(spacing, cst.SimpleWhitespace) and spacing.value == ""


def _graft_at_the_root(segment: cst.BaseExpression, placeholder: str, tree: cst.BaseExpression) -> cst.BaseExpression:
    """`segment` with the placeholder at the bottom of its chain replaced by `tree`."""
    path: list[tuple[cst.CSTNode, str]] = []
    node: cst.CSTNode = segment
    while not (isinstance(node, cst.Name) and node.value == placeholder):
        if isinstance(node, cst.Call):
            path.append((node, "func"))
            node = node.func
        elif isinstance(node, (cst.Attribute, cst.Subscript)):
            path.append((node, "value"))
            node = node.value
        else:
            raise _NotTheSame("the placeholder is not at the root of the segment")
    if node.lpar or node.rpar:
        raise _NotTheSame("the placeholder is in brackets")
    result: cst.CSTNode = tree
    for parent, attribute in reversed(path):
        result = parent.with_changes(**{attribute: result})
    assert isinstance(result, cst.BaseExpression)
    return result


def _put_in_place(node: cst.CSTNode, names: dict[str, cst.BaseExpression]) -> cst.CSTNode:
    """`node` with each placeholder Name replaced by its tree (removed from `names` when placed);
    only the nodes on the way to a placeholder are rebuilt."""
    changes: dict[str, object] = {}
    for attribute in _child_fields(type(node)):
        value = getattr(node, attribute)
        if isinstance(value, cst.CSTNode):
            new = _replacement(value, names)
            if new is not value:
                changes[attribute] = new
        elif isinstance(value, (tuple, list)) and value and isinstance(value[0], cst.CSTNode):
            items = [_replacement(item, names) for item in value]
            if any(new is not old for new, old in zip(items, value)):
                changes[attribute] = type(value)(items)
        if not names:
            break
    return node.with_changes(**changes) if changes else node


def _replacement(node: cst.CSTNode, names: dict[str, cst.BaseExpression]) -> cst.CSTNode:
    if not names:
        return node
    if isinstance(node, cst.Name) and node.value in names:
        if node.lpar or node.rpar:
            raise _NotTheSame("the placeholder is in brackets")
        return names.pop(node.value)
    return _put_in_place(node, names)


_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(kind: type) -> tuple[str, ...]:
    names = _FIELDS.get(kind)
    if names is None:
        names = _FIELDS[kind] = tuple(f.name for f in kind.__dataclass_fields__.values())  # type: ignore[attr-defined]
    return names
