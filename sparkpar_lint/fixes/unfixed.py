"""Why `sparkpar fix` left a finding in place: one line per finding for `--show-unfixed`."""

from __future__ import annotations

from sparkpar_lint.edits.model import Applicability, Fix
from sparkpar_lint.model import Finding
from sparkpar_lint.output.concise import location

# What each fixable rule needs and did not find, in the words of its doc's "Fix safety" section.
_NEEDS = {
    "SPX101": "needs a sort above the aggregate whose columns reach it, or a batch source with no "
    "shuffle before it, and a plain column as the aggregate's argument",
    "SPX102": "needs a batch query and a sort whose columns reach the deduplication, or a batch source "
    "with no shuffle before it",
    "SPX103": "needs the order the function reads its rows in (a sort upstream or its event time)",
    "SPX104": "needs the window spec built in this module, one order for every use, and a sort, "
    "watermark or unshuffled batch source to take it from",
    "SPX105": "needs the columns that identify a row, to hash them instead",
    "SPX106": "needs a batch query whose rows Spark can order (a sort the shuffle discarded, the keys "
    "the rows are unique on, or the whole row) or an RDD whose elements compare in Python",
    "SPX202": "needs the key the state is kept by, as a column or the pair's first element",
    "SPX204": "needs an event-time column in the state's key",
    "SPX301": "needs the `preservesPartitioning` flag written in the call",
    "SPX302": "needs both the partitioning call and the consumer as method calls in this module",
    "SPX401": "needs a key the job already partitions by around the window",
    "SPX402": "needs an order kept by the serial region (a sort before it or right after it)",
}


def why_unfixed(finding: Finding, rule, unsafe: bool, rejected: bool) -> str:
    if rejected:
        return "the fix was undone: the result lost a comment or did not compile (please report this)"
    if isinstance(finding.fix, Fix) and finding.fix.safety is Applicability.DISPLAY_ONLY:
        return f"its fix is shown for review, never applied ({finding.fix.description})"
    if isinstance(finding.fix, Fix) and not finding.fix.applies(unsafe):
        return f"an unsafe fix is available ({finding.fix.description}); rerun with --unsafe-fixes to apply it"
    if rule is None or not rule.fix_safety:
        why = f": {finding.no_fix_reason}" if finding.no_fix_reason else ""
        return f"this rule has no automatic fix{why}"
    if isinstance(finding.fix, Fix):
        return "its fix overlaps another that was applied; run `sparkpar fix` again"
    if finding.no_fix_reason:
        return f"no automatic fix here: {finding.no_fix_reason}"
    return f"no automatic fix here: {rule.id} {_NEEDS.get(rule.id, 'lacks the facts its fix needs')}"


def unfixed_lines(outcome, rules: dict, unsafe: bool) -> list[str]:
    lines = []
    for finding in outcome.remaining:
        rejected = (finding.rule_id, finding.span.line, finding.span.column) in outcome.rejected
        reason = why_unfixed(finding, rules.get(finding.rule_id), unsafe, rejected)
        lines.append(f"{location(finding)}: {finding.rule_id} not fixed: {reason}")
    return lines
