"""The Markdown summary of a `sparkpar fix` run, written for a pull-request body."""

from __future__ import annotations

from collections import defaultdict

from sparkpar_lint.fixes.engine import FixOutcome


def render_summary(outcomes: list[FixOutcome], rules: dict) -> str:
    changed = [o for o in outcomes if o.changed]
    if not changed:
        return "# sparkpar fix\n\nNothing to fix: no finding had an automatic fix.\n"
    by_rule: dict[str, list] = defaultdict(list)
    for outcome in changed:
        for finding in outcome.applied:
            by_rule[finding.rule_id].append((outcome.path, finding))
    total = sum(len(items) for items in by_rule.values())
    lines = [
        "# sparkpar fix",
        "",
        f"{total} fix{'es' if total != 1 else ''} in {len(changed)} file{'s' if len(changed) != 1 else ''}. "
        "Each one makes a result that depended on partitioning or shuffle order deterministic.",
    ]
    for rule_id in sorted(by_rule):
        rule = rules.get(rule_id)
        title = f"{rule_id} {rule.name}" if rule else rule_id
        lines += ["", f"## {title}", ""]
        if rule:
            lines += [f"Why: {rule.summary} (`sparkpar explain {rule_id}`)", ""]
        for path, finding in by_rule[rule_id]:
            safety = "" if finding.fix.safety == "safe" else " (unsafe fix: review the chosen values)"
            lines.append(f"- `{path}:{finding.span.line}`: {finding.fix.description}{safety}")
    return "\n".join(lines) + "\n"
