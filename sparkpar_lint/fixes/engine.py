"""Applies the fixes that findings carry, pass after pass, until the file stops changing.

Each pass parses the current text, analyses it and applies every selected fix whose nodes do
not overlap another's; the next pass sees the result, so fixes compose and a second run of
`sparkpar fix` finds nothing left to do.
"""

from __future__ import annotations

import io
import tokenize
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import cast

import libcst as cst

from sparkpar_lint.analysis import analyze_module
from sparkpar_lint.edits.chain import drop_call
from sparkpar_lint.edits.imports import finish_imports
from sparkpar_lint.edits.layout import merge_dropped, relayout, wrap_long_lines
from sparkpar_lint.edits.model import Fix, Replacement
from sparkpar_lint.edits.quotes import ModuleQuotes
from sparkpar_lint.model import Finding
from sparkpar_lint.parsing import TooDeeplyNested, parse_module
from sparkpar_lint.rules.spx901_unparsable_file import too_deep_finding, unparsable_finding
from sparkpar_lint.suppressions import apply_suppressions

MAX_PASSES = 10


@dataclass
class FixOutcome:
    path: str
    original: str
    fixed: str
    applied: list[Finding] = field(default_factory=list)
    # Selected findings the last pass left in the file, and those whose fix was tried and undone
    # (it lost a comment or did not compile), for `--show-unfixed`.
    remaining: list[Finding] = field(default_factory=list)
    rejected: set = field(default_factory=set)
    # The SPX901 finding when the file does not parse (or nests too deeply): nothing was fixed.
    unparsable: Finding | None = None

    @property
    def changed(self) -> bool:
        return self.fixed != self.original


def fixable(finding: Finding, unsafe: bool) -> bool:
    return isinstance(finding.fix, Fix) and finding.fix.applies(unsafe)


def apply_fixes(module: cst.Module, fixes: list[Fix]) -> str:
    """The code of `module` with `fixes` (of findings on this very module) applied, one pass."""
    return _apply(module, fixes)


def fix_source(path: str, source: str, rule_ids: Collection[str], unsafe: bool = False, settings=None) -> FixOutcome:
    """`settings` (settings.AnalysisSettings): what the configuration tells the rules, as in lint."""
    outcome = FixOutcome(path, source, source)
    for _ in range(MAX_PASSES):
        try:
            module = parse_module(outcome.fixed)  # the nesting check first: deep brackets crash LibCST
        except TooDeeplyNested as error:  # only the original can fail: every fix is re-parsed
            outcome.unparsable = too_deep_finding(path, error)
            break
        except cst.ParserSyntaxError as error:
            outcome.unparsable = unparsable_finding(path, outcome.fixed, error)
            break
        findings = [f for f in analyze_module(path, outcome.fixed, module, rule_ids, settings) if f.rule_id in rule_ids]
        outcome.remaining = apply_suppressions(findings, outcome.fixed)
        chosen = _non_overlapping([f for f in outcome.remaining if fixable(f, unsafe)])
        if not chosen:
            break
        fixed, kept = _apply_checked(module, chosen)
        outcome.rejected |= {_key(f) for f in chosen if f not in kept}
        chosen = kept
        if fixed == outcome.fixed:
            break
        outcome.fixed = fixed
        outcome.applied.extend(chosen)
    return outcome


def _key(finding: Finding) -> tuple:
    return (finding.rule_id, finding.span.line, finding.span.column)


def _apply_checked(module: cst.Module, chosen: list[Finding]) -> tuple[str, list[Finding]]:
    """The pass's fixes applied together or, if that loses a comment or does not parse, one by one,
    each kept only if it parses and keeps every comment (the rest are left unfixed)."""
    before = _comments(module.code)
    fixed = _apply(module, [_fix(f) for f in chosen])
    if _sound(fixed, before):
        return fixed, chosen
    kept: list[Finding] = []
    for finding in chosen:
        if _sound(_apply(module, [_fix(f) for f in [*kept, finding]]), before):
            kept.append(finding)
    return (_apply(module, [_fix(f) for f in kept]) if kept else module.code), kept


def _fix(finding: Finding) -> Fix:
    # Only findings that passed `fixable` are chosen, so their fix is a Fix.
    return cast(Fix, finding.fix)


def _sound(code: str, comments_before: Counter) -> bool:
    try:
        compile(code, "<fixed>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return not (comments_before - _comments(code))


def _comments(code: str) -> Counter:
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError):
        return Counter()
    return Counter(t.string.strip() for t in tokens if t.type == tokenize.COMMENT)


def _non_overlapping(findings: list[Finding]) -> list[Finding]:
    """Fixes touching disjoint nodes; the rest wait for the next pass, which sees these applied."""
    chosen: list[Finding] = []
    taken: set[int] = set()
    for finding in findings:
        nodes: set[int] = set()
        for original, _ in _fix(finding).replacements:
            nodes.update(_subtree_ids(original))
        if nodes & taken:
            continue
        taken |= nodes
        chosen.append(finding)
    return chosen


def _subtree_ids(node: cst.CSTNode) -> set[int]:
    ids = {id(node)}
    for child in node.children:
        ids |= _subtree_ids(child)
    return ids


class _Replace(cst.CSTTransformer):
    def __init__(self, replacements: dict[int, Replacement], quotes: ModuleQuotes) -> None:
        self.replacements = replacements
        self.quotes = quotes

    def on_leave(self, original_node, updated_node):
        if isinstance(original_node, cst.Attribute) and self.replacements.get(id(original_node.value)) is drop_call:
            # The link before this one was dropped: its line break and comments move here.
            # A chain link drop_call removes is a method call `x.m(...)`: a call on an attribute.
            dropped_call = cast(cst.Call, original_node.value)
            dropped = cast(cst.Attribute, dropped_call.func).dot.whitespace_before
            following = merge_dropped(dropped, updated_node.dot.whitespace_before)
            updated_node = updated_node.with_changes(dot=updated_node.dot.with_changes(whitespace_before=following))
        replacement = self.replacements.get(id(original_node))
        if replacement is None:
            return updated_node
        new = replacement(updated_node) if callable(replacement) else replacement
        if isinstance(new, cst.BaseExpression):
            new = relayout(updated_node, new)
            if getattr(updated_node, "lpar", None) and not new.lpar:
                # `(df.a()\n.b())` rewritten as a new chain: its line breaks need the parentheses.
                new = new.with_changes(lpar=updated_node.lpar, rpar=updated_node.rpar)
        # Last: a visit copies every node, and relayout finds the kept old code by identity.
        return new.visit(self.quotes) if isinstance(new, cst.CSTNode) else new  # else a removal


def _apply(module: cst.Module, fixes: list[Fix]) -> str:
    replacements = {id(original): new for fix in fixes for original, new in fix.replacements}
    updated = module.visit(_Replace(replacements, ModuleQuotes(module)))
    imports = {pair for fix in fixes for pair in fix.imports}
    replaced = [original for fix in fixes for original, _ in fix.replacements]
    return wrap_long_lines(finish_imports(updated, imports, replaced).code, module.code)
