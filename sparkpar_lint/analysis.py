"""One file in, findings out: parse once, build the stage graph once, run every selected rule."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import libcst as cst

from sparkpar_lint.graph.builder import build_graph
from sparkpar_lint.model import Finding
from sparkpar_lint.parsing import TooDeeplyNested, parse_module, with_deep_stack
from sparkpar_lint.project.findings import at_imported_calls
from sparkpar_lint.project.summary import ProjectIndex
from sparkpar_lint.rules import all_rules
from sparkpar_lint.rules.base import RuleContext
from sparkpar_lint.rules.spx901_unparsable_file import (
    too_deep_finding,
    unparsable_finding,
)
from sparkpar_lint.settings import AnalysisSettings


def analyze(
    path: str, source: str, rule_ids: Collection[str] | None = None, settings: AnalysisSettings | None = None
) -> list[Finding]:
    """All findings of the selected rules (all when `rule_ids` is None), before suppressions."""
    return with_deep_stack(_analyze, path, source, rule_ids, settings)


def _analyze(path: str, source: str, rule_ids: Collection[str] | None, settings: AnalysisSettings | None) -> list[Finding]:
    try:
        module = parse_module(source)
    except TooDeeplyNested as error:
        return [too_deep_finding(path, error)]
    except cst.ParserSyntaxError as error:
        return [unparsable_finding(path, source, error)]
    return analyze_module(path, source, module, rule_ids, settings)


def analyze_module(
    path: str,
    source: str,
    module: cst.Module,
    rule_ids: Collection[str] | None = None,
    settings: AnalysisSettings | None = None,
) -> list[Finding]:
    """Findings on an already parsed module; their fixes replace nodes of this very module."""
    settings = settings or AnalysisSettings()
    project = ProjectIndex(Path(settings.summary_dir) if settings.summary_dir else None) if settings.cross_file else None
    graph = build_graph(module, path, project)
    graph.unique_columns = settings.unique_columns
    ctx = RuleContext(path=path, source=source, graph=graph, settings=settings)
    findings: dict[tuple, Finding] = {}
    for rule_class in all_rules():
        if rule_ids is not None and rule_class.id not in rule_ids:
            continue
        for finding in rule_class().check(ctx):
            # Helpers analysed once per call site report the same span again: keep one.
            findings.setdefault((finding.rule_id, finding.span), finding)
    return sorted(at_imported_calls(ctx.graph, findings.values()), key=Finding.sort_key)
