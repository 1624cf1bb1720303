"""Applies the fixes that findings carry, pass after pass, until the file stops changing.

Each pass parses the current text, analyses it and applies every selected fix whose nodes do
not overlap another's; the next pass sees the result, so fixes compose and a second run of
`sparkpar fix` finds nothing left to do.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor

from sparkpar_lint.analysis import analyze_module
from sparkpar_lint.fixes.model import SAFE, Fix
from sparkpar_lint.model import Finding
from sparkpar_lint.suppressions import apply_suppressions

MAX_PASSES = 10


@dataclass
class FixOutcome:
    path: str
    original: str
    fixed: str
    applied: list[Finding] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.fixed != self.original


def fixable(finding: Finding, unsafe: bool) -> bool:
    return isinstance(finding.fix, Fix) and (finding.fix.safety == SAFE or unsafe)


def fix_source(path: str, source: str, rule_ids: Collection[str], unsafe: bool = False) -> FixOutcome:
    outcome = FixOutcome(path, source, source)
    for _ in range(MAX_PASSES):
        try:
            module = cst.parse_module(outcome.fixed)
        except cst.ParserSyntaxError:
            break
        findings = [f for f in analyze_module(path, outcome.fixed, module, rule_ids) if f.rule_id in rule_ids]
        chosen = _non_overlapping([f for f in apply_suppressions(findings, outcome.fixed) if fixable(f, unsafe)])
        if not chosen:
            break
        fixed = _apply(module, [f.fix for f in chosen])
        if fixed == outcome.fixed:
            break
        outcome.fixed = fixed
        outcome.applied.extend(chosen)
    return outcome


def _non_overlapping(findings: list[Finding]) -> list[Finding]:
    """Fixes touching disjoint nodes; the rest wait for the next pass, which sees these applied."""
    chosen, taken = [], set()
    for finding in findings:
        nodes = set()
        for original, _ in finding.fix.replacements:
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
    def __init__(self, replacements: dict[int, cst.CSTNode]) -> None:
        self.replacements = replacements

    def on_leave(self, original_node, updated_node):
        replacement = self.replacements.get(id(original_node), updated_node)
        return replacement(updated_node) if callable(replacement) else replacement


def _apply(module: cst.Module, fixes: list[Fix]) -> str:
    replacements = {id(original): new for fix in fixes for original, new in fix.replacements}
    updated = module.visit(_Replace(replacements))
    imports = {pair for fix in fixes for pair in fix.imports}
    if imports:
        context = CodemodContext()
        for module_name, name in sorted(imports, key=lambda p: (p[0], p[1] or "")):
            AddImportsVisitor.add_needed_import(context, module_name, name)
        updated = AddImportsVisitor(context).transform_module(updated)
    return updated.code
