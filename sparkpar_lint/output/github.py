"""GitHub Actions workflow commands: each finding becomes an annotation on the pull request."""

from __future__ import annotations

from collections.abc import Sequence

from sparkpar_lint.model import Finding, Severity
from sparkpar_lint.output.concise import hedge
from sparkpar_lint.output.escape import visible

_COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def render(findings: Sequence[Finding], **_context) -> str:
    lines = []
    for f in findings:
        properties = ",".join(
            f"{name}={_escape_property(str(value))}"
            for name, value in (
                ("file", f.path),
                ("line", f.span.line),
                ("col", f.span.column + 1),
                ("endLine", f.span.end_line),
                ("endColumn", f.span.end_column + 1),
                # Lines of a Jupyter finding count within its cell; the title says which cell.
                ("title", f"{f.rule_id}{hedge(f)}" if f.cell is None else f"{f.rule_id}{hedge(f)} (cell {f.cell})"),
            )
        )
        lines.append(f"::{_COMMAND[f.severity]} {properties}::{_escape_data(f.message)}\n")
    return "".join(lines)


# The runner's own escaping rules (actions/toolkit, command.ts): data and properties differ.
def _escape_data(text: str) -> str:
    # Newlines are kept (as %0A, which the runner decodes); other control characters, such as
    # ESC, are shown as control pictures.
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return visible(text, keep_tabs=True)


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")
