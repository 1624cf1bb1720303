"""Directed audit (--sparkpar-confirm): the linter's findings, confirmed or cleared by the team's
own tests.

At collection the test modules and the project modules they import are linted. While each test
runs as written, a line tracer notes which findings it executes: any line of the statement that
holds the finding or one of its related locations (the call that hands a pandas function to
Spark runs on the driver; the function's body runs in Python workers, out of the tracer's sight). Only tests that reach a finding are re-run under perturbations
(pytest_sparkpar.existing); the others run once. Each finding then gets a verdict, written to
the verdicts file that `sparkpar lint --verdicts` reads:

- confirmed: a test that reached it failed under a perturbation with the job's rows changed (not
  merely reordered: that is the test's own order dependence), and every finding the test reached
  is of one chain (a finding's related locations hold another's: SPX107's discarded sort is
  SPX101's lost order);
- implicated: such a test failed, but it reached findings of separate chains;
- not-reproduced: tests reached it and every targeted run gave the answer as written;
- unreached: no test executes it.
"""

from __future__ import annotations

import ast
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from sparkpar_lint import verdicts

# What a targeted re-run varies (pytest_sparkpar.existing.perturbations), as a verdict lists it.
PLAIN_PERTURBATIONS = ("shuffle and input partition counts", "adaptive execution", "file splits", "micro-batch splits")
FAULT_PERTURBATION = "an executor lost mid-stage"
_RANK = {verdicts.NOT_REPRODUCED: 1, verdicts.IMPLICATED: 2, verdicts.CONFIRMED: 3}


@dataclass
class Target:
    """One lint finding the tests may reach, and what they showed of it."""

    key: str
    rule: str
    path: str  # relative to the rootdir, as the verdicts file keys it
    line: int
    message: str
    chain: frozenset[int] = frozenset()  # lines of the finding and its related locations in its file
    tests: list[str] = field(default_factory=list)
    runs: int = 0
    perturbations: set[str] = field(default_factory=set)
    verdict: str | None = None
    seed: int | None = None
    replay: str | None = None

    def conclude(self, verdict: str, seed: int | None = None, replay: str | None = None) -> None:
        if _RANK[verdict] > _RANK.get(self.verdict or "", 0):
            self.verdict, self.seed, self.replay = verdict, seed, replay

    def entry(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "verdict": self.verdict or verdicts.UNREACHED,
            "rule": self.rule,
            "path": self.path,
            "line": self.line,
            "message": self.message,
            "tests": self.tests,
            "runs": self.runs,
            "perturbations": sorted(self.perturbations),
        }
        if self.seed is not None:
            entry["seed"] = self.seed
        if self.replay is not None:
            entry["replay"] = self.replay
        return entry


class Targets:
    """The findings of the linted files, by the lines that reach each."""

    def __init__(self, targets: list[Target], lines: dict[str, dict[int, list[Target]]]):
        self.targets = targets
        self.lines = lines  # absolute file name -> line -> targets a line event there reaches

    @classmethod
    def lint(cls, paths: Iterable[str], root: Path, file_timeout: float | None) -> Targets:
        """Lint `paths` as `sparkpar lint` does (each in a worker process within its budget)."""
        from sparkpar_lint.runner import check_files

        targets: list[Target] = []
        lines: dict[str, dict[int, list[Target]]] = {}
        for result in check_files(sorted(set(paths)), file_timeout):
            findings = [f for f in result.findings if f.cell is None]  # a notebook is no importable module
            if not findings:
                continue
            source = Path(result.path).read_text("utf-8", "surrogateescape")
            tree = _parse(source)
            statements = _statements(tree)
            keys = verdicts.keys(findings, {result.path: source}, root)
            by_line: dict[int, list[Target]] = {}
            for name in {os.path.abspath(result.path), str(Path(result.path).resolve())}:
                lines[name] = by_line  # a code object names its file as imported, links and all
            for finding, key in zip(findings, keys):
                spans = [finding.span, *(r.span for r in finding.related if r.path is None and r.cell is None)]
                chain = frozenset(span.line for span in spans)
                relative_path = verdicts.relative(finding.path, root)
                target = Target(key, finding.rule_id, relative_path, finding.span.line, finding.message, chain)
                targets.append(target)
                reached_from = {
                    line
                    for span in spans
                    for first, last in [
                        _enclosing(statements, span.line, span.end_line),
                        *_handed_to_spark(tree, statements, span.line),
                    ]
                    for line in range(first, last + 1)
                }
                for line in reached_from:
                    by_line.setdefault(line, []).append(target)
        return cls(targets, lines)

    def entries(self) -> dict[str, dict[str, Any]]:
        return {target.key: target.entry() for target in self.targets}


def merge(into: dict[str, dict[str, Any]], entries: Mapping[str, dict[str, Any]]) -> None:
    """Fold one pytest-xdist worker's verdicts into `into`. Every worker lints the same modules but
    runs its share of the tests: a finding keeps the strongest verdict any worker gave it (with that
    worker's seed and replay), the tests of all of them and the sum of their runs."""
    for key, entry in entries.items():
        held = into.setdefault(key, {**entry, "tests": [], "runs": 0, "perturbations": []})
        held["tests"] = sorted({*held["tests"], *entry["tests"]})
        held["runs"] += entry["runs"]
        held["perturbations"] = sorted({*held["perturbations"], *entry["perturbations"]})
        if _RANK.get(entry["verdict"], 0) > _RANK.get(held["verdict"], 0):
            held.pop("seed", None), held.pop("replay", None)
            held.update({name: entry[name] for name in ("verdict", "seed", "replay") if name in entry})


def one_chain(targets: list[Target]) -> bool:
    """Whether the findings are linked, each to the next, by shared lines of their chains."""
    if not targets:
        return False
    joined, rest = set(targets[0].chain), list(targets[1:])
    while rest:
        linked = [t for t in rest if t.path == targets[0].path and t.chain & joined]
        if not linked:
            return False
        for target in linked:
            joined |= target.chain
            rest.remove(target)
    return True


def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _statements(tree: ast.Module | None) -> list[tuple[int, int]]:
    """(first line, last line) of every statement, compound ones included."""
    if tree is None:
        return []
    return [(node.lineno, node.end_lineno or node.lineno) for node in ast.walk(tree) if isinstance(node, ast.stmt)]


def _handed_to_spark(tree: ast.Module | None, statements: list[tuple[int, int]], line: int) -> list[tuple[int, int]]:
    """For a line in the body of a function Spark runs in Python workers, out of the tracer's
    sight, the statements that hand that function to Spark on the driver: any use of a UDF's name
    (`@F.udf` ... `visit_number("user")` builds the column that runs it), or a use of another
    function's name as a value (`rdd.map(count_codes)`, `F.udf(parse)`), not a call of it, which
    runs the body on the driver where the tracer sees it."""
    if tree is None:
        return []
    holding = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body[0].lineno <= line <= (node.end_lineno or node.lineno)
    ]
    if not holding:
        return []
    function = max(holding, key=lambda node: node.lineno)  # the innermost
    udf = any("udf" in ast.unparse(decorator).lower() for decorator in function.decorator_list)
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    return [
        _enclosing(statements, use.lineno, use.end_lineno or use.lineno)
        for use in ast.walk(tree)
        if isinstance(use, ast.Name)
        and use.id == function.name
        and isinstance(use.ctx, ast.Load)
        and not function.lineno <= use.lineno <= (function.end_lineno or function.lineno)
        and (udf or id(use) not in called)
    ]


def _enclosing(statements: list[tuple[int, int]], line: int, end_line: int) -> tuple[int, int]:
    """The lines of the smallest statement holding the span: a finding inside a multi-line call or
    a SQL string is reached when any line of its statement runs."""
    holding = [(last - first, first, last) for first, last in statements if first <= line and end_line <= last]
    if not holding:
        return line, end_line
    _, first, last = min(holding)
    return first, last


class reach:
    """Within the block, the targets whose lines run on this thread (sys.settrace; a tracer that
    was already set, such as coverage's, is put back after)."""

    def __init__(self, targets: Targets):
        self.targets = targets
        self.reached: set[int] = set()  # indices into targets.targets
        self._index = {id(target): i for i, target in enumerate(targets.targets)}
        self._before: Any = None

    def __enter__(self) -> reach:
        self._before = sys.gettrace()
        sys.settrace(self._call)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.settrace(self._before)

    def found(self) -> list[Target]:
        return [self.targets.targets[i] for i in sorted(self.reached)]

    def _call(self, frame: FrameType, event: str, arg: object) -> Any:
        lines = self.targets.lines.get(frame.f_code.co_filename)
        if lines is None:
            return None

        def line(frame: FrameType, event: str, arg: object) -> Any:
            if event == "line":
                for target in lines.get(frame.f_lineno, ()):
                    self.reached.add(self._index[id(target)])
            return line

        return line
