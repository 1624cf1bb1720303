"""`path:line:col: SPXnnn message`, one line per finding, columns 1-based as editors expect."""

from __future__ import annotations

from collections.abc import Sequence

from sparkpar_lint.model import Confidence, Finding
from sparkpar_lint.output.escape import path_text, visible


def render(findings: Sequence[Finding], **_context) -> str:
    return "".join(f"{location(f)}: {f.rule_id}{hedge(f)} {visible(f.message)}\n" for f in findings)


def hedge(f: Finding) -> str:
    """` [medium]` or ` [low]`: a finding that assumed a link says so; a high one needs no mark."""
    return "" if f.confidence is Confidence.HIGH else f" [{f.confidence.value}]"


def location(f: Finding) -> str:
    """`path:line:col`, or `path:cell N:line:col` in a Jupyter notebook (line within the cell)."""
    cell = f"cell {f.cell}:" if f.cell is not None else ""
    return f"{path_text(f.path)}:{cell}{f.span.line}:{f.span.column + 1}"
