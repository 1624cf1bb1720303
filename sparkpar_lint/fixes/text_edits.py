"""Each finding's fix as plain text edits, for consumers that speak text (SARIF, editors).

A fix is a LibCST node replacement; editors and code-scanning services want "replace these lines
with this text". The fix of one finding is applied alone to the parsed module, and the result is
compared with the original line by line, so an edit covers whole lines (which sidesteps the
question of how a consumer counts columns) and an added import is its own edit.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection
from dataclasses import dataclass

import libcst as cst

from sparkpar_lint.analysis import analyze_module
from sparkpar_lint.edits.model import Fix
from sparkpar_lint.fixes.engine import apply_fixes
from sparkpar_lint.model import Span
from sparkpar_lint.parsing import TooDeeplyNested, parse_module

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


@dataclass(frozen=True)
class LineEdit:
    """Replace lines [start_line, end_line) (1-based; equal for an insertion) with `text`."""

    start_line: int
    end_line: int
    text: str


@dataclass(frozen=True)
class FindingFix:
    safety: str
    description: str
    edits: tuple[LineEdit, ...]


def finding_fixes(
    path: str, source: str, rule_ids: Collection[str], settings=None
) -> dict[tuple[str, Span], FindingFix]:
    """(rule id, span) -> the fix of that finding, for every finding of `rule_ids` with a fix;
    `settings` as for `fix_source` (the configuration's, so an editor fixes as `sparkpar fix` does)."""
    try:
        module = parse_module(source)  # lint's own parse: the nesting check, long chains in segments
    except (cst.ParserSyntaxError, TooDeeplyNested):
        return {}
    fixes: dict[tuple[str, Span], FindingFix] = {}
    for finding in analyze_module(path, source, module, rule_ids, settings):
        if finding.rule_id not in rule_ids or not isinstance(finding.fix, Fix):
            continue
        edits = line_edits(source, apply_fixes(module, [finding.fix]))
        if edits:
            fixes[(finding.rule_id, finding.span)] = FindingFix(finding.fix.safety, finding.fix.description, edits)
    return fixes


def line_edits(before: str, after: str) -> tuple[LineEdit, ...]:
    old, new = lines(before), lines(after)
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    return tuple(
        LineEdit(i1 + 1, i2 + 1, "".join(new[j1:j2])) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"
    )


def lines(text: str) -> list[str]:
    """`text` split after each line break (\\n, \\r\\n or \\r, as editors count lines)."""
    return _LINE.findall(text)
