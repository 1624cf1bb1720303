"""Findings at calls of another module's functions: they name the helper, and carry no fix.

A stage standing for an imported helper has its span at the call in this file, so the finding is
reported where the caller can act; the helper's `def` is added as a related location in its own
file. Fixes are dropped there: what they would rewrite is in the helper, in another file.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable

from sparkpar_lint.graph.stage_graph import StageGraph
from sparkpar_lint.model import Finding, NoFix, RelatedLocation, Span
from sparkpar_lint.project.summary import definition_line


def at_imported_calls(graph: StageGraph, findings: Iterable[Finding]) -> list[Finding]:
    findings = list(findings)
    imported = [n for n in graph.nodes if n.imported is not None and n.imported.path]
    if not imported or not findings:
        return findings
    out = []
    for finding in findings:
        # The stage itself, or (a helper applying the caller's combiner) the function passed in it.
        node = next(
            (n for n in imported if finding.span == n.span or (n.spec is not None and _within(finding.span, n.span))),
            None,
        )
        helper = node.imported if node is not None else None
        if helper is None:
            out.append(finding)
            continue
        related = finding.related
        where = definition_line(helper.path, helper.function)
        if where is not None:
            line, column = where
            span = Span(line, column, line, column + len(helper.function))
            shown = _shown_path(graph.path, helper.path)
            related = (*related, RelatedLocation(span, f"`{helper.function}` is defined here", path=shown))
        no_fix = NoFix(f"the stage is in `{helper.function}`, defined in another module; fix it there")
        out.append(dataclasses.replace(finding, related=related, fix=None, fix_safety=None, no_fix=no_fix))
    return out


def _shown_path(importer: str, helper: str) -> str:
    """The helper's path written the way the importer's is (relative stays relative)."""
    if os.path.isabs(importer):
        return helper
    here = os.path.dirname(importer)
    relative = os.path.relpath(helper, os.path.dirname(os.path.abspath(importer)))
    return os.path.normpath(os.path.join(here, relative))


def _within(inner: Span, outer: Span) -> bool:
    return (outer.line, outer.column) <= (inner.line, inner.column) and (inner.end_line, inner.end_column) <= (
        outer.end_line,
        outer.end_column,
    )
