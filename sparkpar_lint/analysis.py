"""One file in, findings out: parse once, build the stage graph once, run every selected rule."""

from __future__ import annotations

import ast
import bisect
from collections.abc import Collection
from pathlib import Path

import libcst as cst

from sparkpar_lint.graph.builder import build_graph
from sparkpar_lint.graph.positions import Positions, functions_with_parameters
from sparkpar_lint.graph.stage_graph import StageGraph
from sparkpar_lint.model import COUNTED, Finding, Span
from sparkpar_lint.parsing import TooDeeplyNested, parse_module, tree_kept_out_of_collection, with_deep_stack
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


def _analyze(
    path: str, source: str, rule_ids: Collection[str] | None, settings: AnalysisSettings | None
) -> list[Finding]:
    try:
        module = parse_module(source)
    except TooDeeplyNested as error:
        return [too_deep_finding(path, error)]
    except cst.ParserSyntaxError as error:
        return [unparsable_finding(path, source, error)]
    with tree_kept_out_of_collection():
        return analyze_module(path, source, module, rule_ids, settings, release=True)


def analyze_module(
    path: str,
    source: str,
    module: cst.Module,
    rule_ids: Collection[str] | None = None,
    settings: AnalysisSettings | None = None,
    *,
    release: bool = False,
) -> list[Finding]:
    """Findings on an already parsed module; their fixes replace nodes of this very module.
    `release`: for a caller that drops the fixes, the graphs are emptied once the findings are
    out (StageGraph.release)."""
    settings = settings or AnalysisSettings()
    project = (
        ProjectIndex(Path(settings.summary_dir) if settings.summary_dir else None) if settings.cross_file else None
    )
    graph, findings, awaiting = _run_rules(path, source, module, rule_ids, settings, project, frozenset(), None)
    # Most files report nothing: only a finding inside a top-level function (or a spot a rule
    # cannot judge without the callers' facts) makes the callers in other modules worth reading
    # (their summaries cost a parse each), and then it is analysed again with its parameters
    # bound to what those callers pass.
    spans = [f.span for f in findings] + awaiting
    wanted = _functions_holding(graph, source, module, spans) if project is not None else frozenset()
    built = [graph]
    if wanted:
        # The same module: the positions already resolved serve the second graph too.
        graph, findings, _ = _run_rules(path, source, module, rule_ids, settings, project, wanted, graph.positions)
        built.append(graph)
    findings = sorted(at_imported_calls(graph, findings), key=Finding.sort_key)
    if release:
        for each in built:
            each.release()
    return findings


def _run_rules(
    path, source, module, rule_ids, settings, project, callers_of, positions
) -> tuple[StageGraph, list[Finding], list[Span]]:
    graph = build_graph(module, path, project, callers_of, source)
    if positions is not None:
        graph._positions = positions
    graph.unique_columns = settings.unique_columns
    ctx = RuleContext(path=path, source=source, graph=graph, settings=settings)
    findings: dict[tuple, Finding] = {}
    awaiting: list[Span] = []
    for rule_class in all_rules():
        if rule_ids is not None and rule_class.id not in rule_ids:
            continue
        rule = rule_class()
        for finding in rule.check(ctx):
            if finding.links.erased == COUNTED:
                continue  # only counts its choice cannot change read the result: nothing can differ
            # Helpers analysed once per call site report the same span again: keep one.
            findings.setdefault((finding.rule_id, finding.span), finding)
        if project is not None and not callers_of:
            awaiting.extend(rule.awaiting_callers(ctx))
    return graph, list(findings.values()), awaiting


def _functions_holding(graph: StageGraph, source: str, module: cst.Module, spans: list[Span]) -> frozenset[str]:
    """Top-level functions with parameters whose body holds one of `spans` (findings' or spans
    awaiting the callers' facts)."""
    if not spans:
        return frozenset()
    positions = graph.positions
    functions = positions.top_level_functions() if isinstance(positions, Positions) else _ast_functions(source)
    if functions is not None:
        # Line ranges from `ast` (the C parser): placing every function with LibCST's positions
        # generated nearly the whole module again. A top-level def owns all of its lines.
        # Spans sorted by line, so each function looks only at the ones starting inside it.
        lines = sorted((span.line, span.end_line) for span in spans)
        names = set()
        for name, first, last in functions:
            i = bisect.bisect_left(lines, (first,))
            while i < len(lines) and lines[i][0] <= last:
                if lines[i][1] <= last:
                    names.add(name)
                    break
                i += 1
        return frozenset(names)
    names = set()
    for statement in module.body:
        if isinstance(statement, cst.FunctionDef) and statement.params.params:
            where = graph.span_of(statement)
            if any(
                (where.line, where.column) <= (span.line, span.column)
                and (span.end_line, span.end_column) <= (where.end_line, where.end_column)
                for span in spans
            ):
                names.add(statement.name.value)
    return frozenset(names)


def _ast_functions(source: str) -> list[tuple[str, int, int]] | None:
    """What Positions.top_level_functions gives, for a graph placed some other way."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return functions_with_parameters(tree)
