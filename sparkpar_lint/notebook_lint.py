"""Lint a notebook through its virtual Python text (sources/virtual.py), in its own coordinates."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection

from sparkpar_lint.analysis import analyze
from sparkpar_lint.model import Finding, RelatedLocation, Span
from sparkpar_lint.rules.spx901_unparsable_file import UnparsableFile
from sparkpar_lint.settings import AnalysisSettings
from sparkpar_lint.sources.cells import Cell
from sparkpar_lint.sources.notebook import Notebook
from sparkpar_lint.sources.virtual import VirtualSource
from sparkpar_lint.suppressions import apply_suppressions


def lint_notebook(
    notebook: Notebook, rule_ids: Collection[str], settings: AnalysisSettings | None = None
) -> list[Finding]:
    """Findings in notebook coordinates; a `# noqa` never hides a cell that does not parse."""
    virtual = notebook.virtual
    findings = [f for f in analyze(notebook.path, virtual.text, rule_ids, settings) if f.rule_id in rule_ids]
    findings = [_locate(f, virtual) for f in apply_suppressions(findings, virtual.text)]
    findings += [_unparsable(notebook, cell, error) for cell, error in virtual.broken]
    return sorted(findings, key=Finding.sort_key)


def _locate(finding: Finding, virtual: VirtualSource) -> Finding:
    cell, span = virtual.locate(finding.span)
    related = tuple(_related(r, virtual) for r in finding.related)
    return dataclasses.replace(finding, cell=cell, span=span, related=related, fix=None)


def _related(related: RelatedLocation, virtual: VirtualSource) -> RelatedLocation:
    if related.path is not None:
        return related  # in another file (an imported helper): not a cell of this notebook
    cell, span = virtual.locate(related.span)
    return RelatedLocation(span, related.message, cell)


def _unparsable(notebook: Notebook, cell: Cell, error: SyntaxError) -> Finding:
    line, column = error.lineno or 1, max((error.offset or 1) - 1, 0)
    if not notebook.jupyter:
        line += cell.first_line - 1
    return Finding(
        rule_id=UnparsableFile.id,
        message=f"cannot parse cell {cell.index}: {error.msg}",
        severity=UnparsableFile.severity,
        path=notebook.path,
        span=Span(line, column, line, column),
        cell=cell.index if notebook.jupyter else None,
    )
