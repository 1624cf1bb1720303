"""Failure reports: plain-text sections that read the same in a terminal and in a CI log."""

from __future__ import annotations

import inspect
from typing import Any

from pytest_sparkpar.orders import OrderType, canonical

MAX_LINES = 40


class SparkparFailure(AssertionError):
    """A check failed; `report` is the whole readable text (pytest shows it without traceback)."""

    def __init__(self, report: str):
        super().__init__(report)
        self.report = report


def section(title: str, body: str) -> str:
    rule = "─" * max(4, 78 - len(title) - 4)
    return f"── {title} {rule}\n{body.rstrip()}\n"


def render_table(table) -> str:
    from io import StringIO

    from rich.console import Console

    buffer = StringIO()
    Console(file=buffer, width=130, color_system=None, force_terminal=False, soft_wrap=False).print(table)
    return buffer.getvalue()


def side_by_side(mismatch, output: OrderType, tolerance) -> str:
    from rich import box
    from rich.table import Table

    a = canonical(mismatch.sequential.rows, mismatch.sequential.columns, output)
    b = canonical(mismatch.permuted.rows, mismatch.permuted.columns, output)
    columns = ", ".join(mismatch.sequential.columns)
    table = Table(box=box.ASCII2, show_lines=False, title=f"rows ({columns}) compared as {output.describe()}")
    table.add_column("", width=1)
    table.add_column("sequential", overflow="fold")
    table.add_column(mismatch.variant.label + " interleaving", overflow="fold")
    lines = 0
    for key in mismatch.differing:
        left, right = a.groups.get(key, []), b.groups.get(key, [])
        if key is not None:
            table.add_section()
            table.add_row("", f"key {key!r}", f"key {key!r}")
        for i in range(max(len(left), len(right))):
            left_row = left[i] if i < len(left) else None
            r = right[i] if i < len(right) else None
            from pytest_sparkpar.orders import values_equal

            mark = " " if (left_row is not None and r is not None and values_equal(left_row, r, tolerance)) else "≠"
            table.add_row(mark, "" if left_row is None else repr(left_row), "" if r is None else repr(r))
            lines += 1
            if lines >= MAX_LINES:
                table.add_row("…", "…", "…")
                return (
                    render_table(table)
                    + f"(showing the first {MAX_LINES} lines of {len(mismatch.differing)} differing group(s))\n"
                )
    summary = f"sequential: {len(mismatch.sequential.rows)} rows; interleaving: {len(mismatch.permuted.rows)} rows"
    return render_table(table) + summary + "\n"


def describe_interleaving(mismatch, master: str) -> str:
    variant = mismatch.variant
    lines = [f"input {name!r}: {p.describe()}" for name, p in variant.placements.items()]
    lines.append(", ".join(f"{k}={v}" for k, v in variant.confs().items()))
    if mismatch.permuted.batches is not None and mismatch.error is None:  # a failed run emitted none
        lines.append(f"micro-batch outputs (batch id: rows): {mismatch.permuted.batches}")
    if getattr(mismatch, "fault", None):
        lines.append(f"fault: {mismatch.fault}")
    lines.append(f"master: {master}")
    return "\n".join(lines)


def describe_inputs(mismatch, original_sizes: dict[str, int], limit: int = 20) -> str:
    lines = []
    for name, data in mismatch.inputs.items():
        shrunk = (
            f" (shrunk from {original_sizes[name]})"
            if original_sizes.get(name, len(data.rows)) != len(data.rows)
            else ""
        )
        lines.append(f"input {name!r}: {len(data.rows)} rows{shrunk}, columns {data.columns}")
        lines += [f"  {row!r}" for row in data.rows[:limit]]
        if len(data.rows) > limit:
            lines.append(f"  … {len(data.rows) - limit} more")
    return "\n".join(lines)


def likely_cause(job: Any) -> str | None:
    """The linter's findings on the job's source file, or None when they are unavailable."""
    try:
        path = inspect.getsourcefile(job)
    except Exception:  # noqa: BLE001 - builtins, C functions, SQL strings: no file to lint
        return None
    return lint_findings([path]) if path else None


# Seconds the linter may spend on one file (ini `sparkpar_file_timeout`, set at configure time).
LINT_FILE_TIMEOUT: float | None = 120.0


def lint_findings(paths: list[str]) -> str | None:
    """The linter's findings on these files, one per line, or None when the analyzer is unavailable.
    Each file is analysed as `sparkpar lint` does, in a worker process within its time and memory
    budget: a module that stalls or crashes the analyser costs one line, never the test run."""
    lines = []
    try:
        from sparkpar_lint.output.escape import visible
        from sparkpar_lint.runner import check_files

        for result in check_files(paths, LINT_FILE_TIMEOUT):
            lines += [
                visible(f"{f.path}:{f.span.line}:{f.span.column + 1}: {f.rule_id} {f.message}") for f in result.findings
            ]
            if result.error:
                lines.append(visible(result.error))
    except Exception:  # noqa: BLE001 - the analyzer is optional evidence, never a new failure
        return None
    return "\n".join(lines) if lines else f"sparkpar lint found nothing in {', '.join(paths)}."


def failure_report(job, mismatch, output: OrderType, tolerance, settings, original_sizes, shrunk: bool) -> str:
    name = getattr(job, "__qualname__", repr(job))
    if mismatch.error is not None:
        headline = (
            f"sparkpar: `{name}` does not survive a lost executor: it failed when an executor was "
            f"killed mid-stage (--sparkpar-faults).\n"
        )
        compared = section("the job's error under the fault", mismatch.error)
    else:
        cause = (
            "an executor killed mid-stage (--sparkpar-faults) changed its output: Spark's retry recomputed "
            "rows differently; the same interleaving without the fault gives the sequential output"
            if mismatch.fault
            else "a permuted interleaving changed its output"
        )
        headline = f"sparkpar: `{name}` is not deterministic: {cause} (outputs compared as {output.describe()}).\n"
        compared = section("sequential output vs permuted output", side_by_side(mismatch, output, tolerance))
    parts = [
        headline,
        compared,
        section("interleaving", describe_interleaving(mismatch, settings.master)),
        section(
            "input" + (" (minimal, shrunk by hypothesis)" if shrunk else ""), describe_inputs(mismatch, original_sizes)
        ),
        section("reproduce", f"seed: {settings.seed}\n{settings.replay}"),
    ]
    findings = likely_cause(job)
    if findings:
        parts.append(section("likely cause (sparkpar lint)", findings))
    return "\n".join(parts)
