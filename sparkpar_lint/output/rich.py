"""Human output: each finding with its code frame, span underlined, related locations, a summary."""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Mapping, Sequence

from rich.console import Console
from rich.text import Text

from sparkpar_lint.confidence_filter import hidden_note
from sparkpar_lint.model import Confidence, Finding, Severity, Span
from sparkpar_lint.output.escape import path_text, visible

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "bold yellow", Severity.INFO: "bold cyan"}


def render(
    findings: Sequence[Finding],
    *,
    sources: Mapping[str, str] | None = None,
    files_checked: int | None = None,
    color: bool = False,
    hidden: int = 0,
    min_confidence: Confidence | None = None,
    **_context,
) -> str:
    sources = sources or {}
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        force_terminal=color,
        no_color=not color,
        color_system="standard" if color else None,
        highlight=False,
        soft_wrap=True,
        width=200,
    )
    for finding in findings:
        lines = _lines(sources, finding.path, finding.cell)
        console.print(_headline(finding))
        _frame(console, lines, finding.span, Text(finding.rule_id, style=_STYLE[finding.severity]))
        for related in finding.related:
            where = related.path or finding.path  # a helper in another module names its own file
            location = f"{path_text(where)}:{_cell(related.cell)}{related.span.line}:{related.span.column + 1}"
            console.print(Text.assemble("  ::: ", (location, "bold"), f": {visible(related.message)}"))
            label = Text(visible(related.message), style="blue")
            _frame(console, _lines(sources, where, related.cell), related.span, label)
        console.print()
    summary = _summary(findings, files_checked)
    if hidden and min_confidence is not None:
        summary.append(f"\n{hidden_note(hidden, min_confidence)}.")
    console.print(summary)
    return buffer.getvalue()


def _lines(sources: Mapping[str, str], path: str, cell: int | None) -> list[str]:
    # A Jupyter finding's span is within its cell; the runner keys each cell's text `path:cell N`.
    return sources.get(path if cell is None else f"{path}:cell {cell}", "").splitlines()


def _cell(cell: int | None) -> str:
    return "" if cell is None else f"cell {cell}:"


def _headline(f: Finding) -> Text:
    return Text.assemble(
        (f"{path_text(f.path)}:{_cell(f.cell)}{f.span.line}:{f.span.column + 1}", "bold"),
        ": ",
        (f.rule_id, _STYLE[f.severity]),
        f" [{f.severity.value}, {f.confidence.value} confidence] ",
        *_fixable(f),
        visible(f.message),
    )


def _fixable(f: Finding) -> tuple:
    """ruff's marker: [*] a safe fix exists, [*unsafe] one needs --unsafe-fixes."""
    if f.fix_safety == "safe":
        return (("[*] ", "bold green"),)
    if f.fix_safety == "unsafe":
        return (("[*unsafe] ", "yellow"),)
    return ()


def _frame(console: Console, lines: list[str], span: Span, label: Text) -> None:
    """One line of context before, the span's first line, and a caret underline."""
    if not 1 <= span.line <= len(lines):
        return
    first = max(1, span.line - 1)
    gutter = len(str(span.line))
    console.print(Text(f"{'':>{gutter}} |", style="blue"))
    for number in range(first, span.line + 1):
        # Tabs would throw the underline off; one space each keeps columns aligned.
        code = visible(lines[number - 1].replace("\t", " "))
        console.print(Text.assemble((f"{number:>{gutter}} | ", "blue"), code))
    code = lines[span.line - 1]
    end = span.end_column if span.end_line == span.line else len(code)
    width = max(1, end - span.column)
    underline = Text(" " * span.column + "^" * width + " ", style="bold red")
    console.print(Text.assemble((f"{'':>{gutter}} | ", "blue"), underline, label))


def _summary(findings: Sequence[Finding], files_checked: int | None) -> Text:
    checked = f" in {files_checked} file{'s' * (files_checked != 1)}" if files_checked is not None else ""
    if not findings and files_checked == 0:
        return Text("No file was checked.", style="bold")
    if not findings:
        return Text(f"All checks passed{checked}.", style="bold green")
    by_severity = Counter(f.severity for f in findings)
    parts = [
        f"{by_severity[s]} {s.value}{'s' * (by_severity[s] != 1 and s is not Severity.INFO)}"
        for s in Severity
        if by_severity[s]
    ]
    count = len(findings)
    by_confidence = Counter(f.confidence for f in findings)
    parts += [f"{by_confidence[c]} {c.value} confidence" for c in Confidence if by_confidence[c]]
    text = Text(f"Found {count} finding{'s' * (count != 1)} ({', '.join(parts)}){checked}.", style="bold")
    safe = sum(f.fix_safety == "safe" for f in findings)
    unsafe = sum(f.fix_safety == "unsafe" for f in findings)
    if safe:
        text.append(f"\n[*] {safe} fixable with `sparkpar fix`.")
    if unsafe:
        text.append(f"\n[*unsafe] {unsafe} more with `sparkpar fix --unsafe-fixes`.")
    return text
