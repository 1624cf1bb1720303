"""String literals a fix writes, in the quotes the module's own literals mostly use.

Fixes build their literals (`"_sparkpar_seq"`, `.alias("first(page)")`) as `InsertedString`s;
the engine writes each one in the module's quote when it applies the fix, so a file written with
single quotes gets `.alias('first(page)')`, as its author would have written it.
"""

from __future__ import annotations

from collections import Counter
from typing import cast

import libcst as cst


class InsertedString(cst.SimpleString):
    """A literal a fix writes. Matchers and `visit_SimpleString` do not see it as a SimpleString,
    and a transformer's copy of it is a plain one: the engine (`ModuleQuotes`) writes it in the
    module's quote as it puts the replacement in, before anything else visits it."""


def literal(text: str, quote: str) -> str:
    """`text` as a literal in `quote`; as repr writes it where the text itself holds a quote."""
    written = repr(text)
    if quote == '"' and "'" not in text and '"' not in text:
        return f'"{written[1:-1]}"'
    return written


class ModuleQuotes(cst.CSTTransformer):
    """Writes the InsertedStrings of a replacement in `module`'s quote: `'` where more of its
    one-line literals use `'` than `"`, else `"` (ties and no literals too). Triple-quoted ones
    (docstrings) say nothing about the style."""

    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self.quote: str | None = None  # read from the module at the first InsertedString

    def on_leave(self, original_node: cst.CSTNodeT, updated_node: cst.CSTNodeT) -> cst.CSTNodeT:
        # The updated node is already a plain SimpleString: LibCST rebuilds a node by its base class.
        if not isinstance(original_node, InsertedString):
            return updated_node
        if self.quote is None:
            self.quote = _most_used_quote(self.module)
        text = cast(str, original_node.evaluated_value)  # edits.string writes text, never bytes
        return updated_node.with_changes(value=literal(text, self.quote))


def _most_used_quote(module: cst.Module) -> str:
    counts: Counter[str] = Counter()

    class _Count(cst.CSTVisitor):
        def visit_SimpleString(self, node: cst.SimpleString) -> None:
            counts[node.quote] += 1

    module.visit(_Count())
    return "'" if counts["'"] > counts['"'] else '"'
