"""Why `sparkpar fix` left a finding in place: one line per finding for `--show-unfixed`."""

from __future__ import annotations

from collections.abc import Mapping

from sparkpar_lint.edits.model import Applicability, Fix
from sparkpar_lint.fixes.engine import FixOutcome
from sparkpar_lint.model import Finding
from sparkpar_lint.output.concise import location
from sparkpar_lint.rules.base import Rule


def why_unfixed(finding: Finding, rule: type[Rule] | None, unsafe: bool, rejected: bool) -> str:
    if rejected:
        return "the fix was undone: the result lost a comment or did not compile (please report this)"
    if isinstance(finding.fix, Fix) and finding.fix.safety is Applicability.DISPLAY_ONLY:
        return f"its fix is shown for review, never applied ({finding.fix.description})"
    if isinstance(finding.fix, Fix) and not finding.fix.applies(unsafe):
        return f"an unsafe fix is available ({finding.fix.description}); rerun with --unsafe-fixes to apply it"
    if rule is None or not rule.fix_safety:
        why = f": {finding.no_fix.reason}" if finding.no_fix else ""
        return f"this rule has no automatic fix{why}"
    if isinstance(finding.fix, Fix):
        return "its fix overlaps another that was applied; run `sparkpar fix` again"
    if finding.no_fix:
        return f"no automatic fix here: {finding.no_fix.reason}"
    return f"no automatic fix here: {rule.id} lacks the facts its fix needs"


def unfixed_lines(outcome: FixOutcome, rules: Mapping[str, type[Rule]], unsafe: bool) -> list[str]:
    lines = []
    for finding in outcome.remaining:
        rejected = (finding.rule_id, finding.span.line, finding.span.column) in outcome.rejected
        reason = why_unfixed(finding, rules.get(finding.rule_id), unsafe, rejected)
        lines.append(f"{location(finding)}: {finding.rule_id} not fixed: {reason}")
    return lines
