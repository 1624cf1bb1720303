"""The Markdown summary of a `sparkpar fix` run, written for a pull-request body: per file, each
diff hunk with one sentence on why it changed.

Code and file names are shown, never interpreted: control characters become visible symbols, and
each code block's fence is longer than any run of backticks in it, so code cannot close the block
and write Markdown of its own into the pull request."""

from __future__ import annotations

import difflib
import re

from sparkpar_lint.fixes.engine import FixOutcome
from sparkpar_lint.output.escape import visible

_BACKTICKS = re.compile(r"`+")
_LINE_END = re.compile(r"\r?\n")
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
        lines += ["", f"## {_code_span(outcome.path)}"]
        unexplained = list(outcome.applied)
        for start, length, hunk in _hunks(outcome):
            mine = [f for f in unexplained if start <= f.span.line <= start + max(length, 1)]
            unexplained = [f for f in unexplained if f not in mine]
            hunk = [visible(line, keep_tabs=True) for line in hunk]
            fence = _fence(hunk)
            lines += ["", _sentence(mine, rules), "", f"{fence}diff", *hunk, fence]
        if unexplained:
            # Applied in a later pass, at lines an earlier fix had moved: said once for the file.
            lines += ["", "Also: " + " ".join(_sentence([f], rules) for f in unexplained)]
    return "\n".join(lines) + "\n"


def _hunks(outcome: FixOutcome):
    # Lines end at newlines only: splitlines() would also end them at form feeds in the code, and
    # the hunks' line numbers would no longer be the findings'.
    diff = difflib.unified_diff(_LINE_END.split(outcome.original), _LINE_END.split(outcome.fixed), lineterm="", n=1)
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
        parts.append(
            f"{finding.rule_id}, line {finding.span.line}: {visible(finding.fix.description)}, because {why[0].lower()}{why[1:]}{unsafe}."
        )
    return " ".join(parts)


def _fence(lines: list[str]) -> str:
    longest = max((len(run) for line in lines for run in _BACKTICKS.findall(line)), default=0)
    return "`" * max(3, longest + 1)


def _code_span(text: str) -> str:
    """`text` as inline code, whatever backticks it holds (CommonMark: a longer backtick string)."""
    text = visible(text)
    ticks = "`" * (max((len(run) for run in _BACKTICKS.findall(text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"
