"""The Markdown summary of a `sparkpar fix` run, written for a pull-request body: per file, each
diff hunk with one sentence on why it changed."""

from __future__ import annotations

import difflib
import re

from sparkpar_lint.fixes.engine import FixOutcome

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")


def render_summary(outcomes: list[FixOutcome], rules: dict) -> str:
    changed = [o for o in outcomes if o.changed]
    if not changed:
        return "# sparkpar fix\n\nNothing to fix: no finding had an automatic fix.\n"
    total = sum(len(o.applied) for o in changed)
    lines = [
        "# sparkpar fix",
        "",
        f"{total} fix{'es' if total != 1 else ''} in {len(changed)} file{'s' if len(changed) != 1 else ''}. "
        "Each one makes a result that depended on partitioning or shuffle order deterministic.",
    ]
    for outcome in changed:
        lines += ["", f"## `{outcome.path}`"]
        unexplained = list(outcome.applied)
        for start, length, hunk in _hunks(outcome):
            mine = [f for f in unexplained if start <= f.span.line <= start + max(length, 1)]
            unexplained = [f for f in unexplained if f not in mine]
            lines += ["", _sentence(mine, rules), "", "```diff", *hunk, "```"]
        if unexplained:
            # Applied in a later pass, at lines an earlier fix had moved: said once for the file.
            lines += ["", "Also: " + " ".join(_sentence([f], rules) for f in unexplained)]
    return "\n".join(lines) + "\n"


def _hunks(outcome: FixOutcome):
    diff = difflib.unified_diff(
        outcome.original.splitlines(), outcome.fixed.splitlines(), lineterm="", n=1
    )
    current = None
    for line in list(diff)[2:]:
        match = _HUNK.match(line)
        if match:
            if current:
                yield current
            current = (int(match.group(1)), int(match.group(2) or 1), [line])
        elif current:
            current[2].append(line)
    if current:
        yield current


def _sentence(findings, rules: dict) -> str:
    if not findings:
        return "Imports the fixes below need, and imports they left unused removed."
    parts = []
    for finding in findings:
        rule = rules.get(finding.rule_id)
        why = rule.summary.rstrip(".") if rule else finding.rule_id
        unsafe = "" if finding.fix.safety == "safe" else " (unsafe fix: review the choice it makes)"
        parts.append(f"{finding.rule_id}, line {finding.span.line}: {finding.fix.description}, because {why[0].lower()}{why[1:]}{unsafe}.")
    return " ".join(parts)
