"""Rendering a plan report: a rich table for people, plain lines (concise) or JSON for programs."""

from __future__ import annotations

import io
import json

from sparkpar_lint.output.escape import path_text, visible
from sparkpar_lint.plan.advice import PlanReport

FORMATS = ("rich", "concise", "json")


def render(report: PlanReport, fmt: str, *, color: bool = False) -> str:
    if fmt == "json":
        return json.dumps(report.to_dict(), indent=2) + "\n"
    if fmt == "concise":
        return _concise(report)
    return _rich(report, color)


def _summary(report: PlanReport) -> str:
    return (
        f"predicted throughput {report.throughput:.4g} {report.unit} "
        f"({report.speedup:.2f}x sequential) on {report.cores} cores, {report.threads} "
        f"threads, utilization {report.utilization:.2f} [{report.method}]"
    )


def _concise(report: PlanReport) -> str:
    lines = [f"{path_text(report.source)}: {_summary(report)}"]
    for i, row in enumerate(report.regions, 1):
        mark = " (bottleneck)" if row.bottleneck else ""
        key = f" key={','.join(row.key)}" if row.key else ""
        lines.append(
            f"region {i}: {' | '.join(' '.join(p) for p in row.pipelines)} "
            f"state={row.state}{key} ordering={row.strategy} replicas={row.replicas} "
            f"capacity={row.capacity:.4g}{mark}"
        )
    lines += [f"advice: {a}" for a in report.advice]
    lines += [f"note: {n}" for n in report.notes]
    # Paths, column names and advice quote the checked code: controls are shown, not sent.
    return "\n".join(visible(line) for line in lines) + "\n"


def _rich(report: PlanReport, color: bool) -> str:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    def shown(text: str) -> str:  # from the checked tree: neither markup nor control characters
        return escape(visible(text))

    table = Table(title=f"sparkpar plan — {shown(report.source)}", caption=_summary(report))
    for column in ("#", "operators (| = pipeline cut)", "state", "key", "ordering", "replicas", "capacity"):
        table.add_column(column, justify="right" if column in ("#", "replicas", "capacity") else "left")
    for i, row in enumerate(report.regions, 1):
        style = "bold red" if row.bottleneck else None
        table.add_row(
            str(i),
            shown(" | ".join(", ".join(p) for p in row.pipelines)),
            shown(row.state),
            shown(", ".join(row.key)) or "—",
            row.strategy,
            str(row.replicas),
            f"{row.capacity:.4g}" + (" ◀ bottleneck" if row.bottleneck else ""),
            style=style,
        )
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=color, no_color=not color, width=120)
    console.print(table)
    console.print("[bold]Advice[/bold]" if color else "Advice")
    for item in report.advice:
        console.print(f"  • {visible(item)}", markup=False, highlight=False)
    for note in report.notes:
        console.print(f"  note: {visible(note)}", markup=False, highlight=False)
    return buffer.getvalue()
