"""`path:line:col: SPXnnn message`, one line per finding, columns 1-based as editors expect."""

from __future__ import annotations

from collections.abc import Sequence

from sparkpar_lint.model import Finding


def render(findings: Sequence[Finding], **_context) -> str:
    return "".join(
        f"{f.path}:{f.span.line}:{f.span.column + 1}: {f.rule_id} {f.message}\n" for f in findings
    )
