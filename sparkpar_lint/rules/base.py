"""The rule contract: a small class that reads the stage graph and yields findings.

A rule carries its own examples (Fixit style); tests/test_rule_examples.py runs every one of them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from sparkpar_lint.confidence import links, with_assumptions
from sparkpar_lint.model import Finding, RelatedLocation, Severity, Span
from sparkpar_lint.settings import AnalysisSettings

if TYPE_CHECKING:
    from sparkpar_lint.edits.model import Fix
    from sparkpar_lint.graph.stage_graph import StageGraph


@dataclass(frozen=True)
class Valid:
    """Code the rule must stay silent on."""

    code: str


@dataclass(frozen=True)
class Invalid:
    """Code the rule must flag at exactly (line, column); `related_lines` checks the chain."""

    code: str
    line: int
    column: int
    related_lines: tuple[int, ...] = ()
    severity: Severity | None = None
    # The code after `sparkpar fix --unsafe-fixes --select <this rule>`; None: no fix applies.
    expected_fix: str | None = None


@dataclass
class RuleContext:
    path: str
    source: str
    graph: StageGraph
    findings: list[Finding] = field(default_factory=list)
    settings: AnalysisSettings = field(default_factory=AnalysisSettings)


class Rule:
    id: ClassVar[str]
    name: ClassVar[str]
    severity: ClassVar[Severity]
    summary: ClassVar[str]
    # "safe", "unsafe" or None: the best fix `sparkpar fix` has for this rule's findings (each
    # finding says whether it got one: a fix needs facts, such as a sort column, not always there).
    fix_safety: ClassVar[str | None] = None
    VALID: ClassVar[list[Valid]] = []
    INVALID: ClassVar[list[Invalid]] = []

    registry: ClassVar[dict[str, type[Rule]]] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if getattr(cls, "id", None):
            Rule.registry[cls.id] = cls

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        raise NotImplementedError

    def awaiting_callers(self, ctx: RuleContext) -> Iterator[Span]:
        """Spans this rule cannot judge without the facts callers in other modules pass (rows
        read from storage, say, where the parameter's origin decides). The top-level function
        holding one is analysed again with its parameters bound to those facts; `check` then
        decides. None by default."""
        return iter(())

    def finding(
        self,
        ctx: RuleContext,
        span: Span,
        message: str,
        *,
        severity: Severity | None = None,
        related: tuple[RelatedLocation, ...] = (),
        fix: Fix | str | None = None,
        outcomes: bool | str | None = None,
    ) -> Finding:
        """`fix` is the finding's fix, or a string saying why there is none (for --show-unfixed).
        `outcomes`: True when the rule saw that the rows competing at its choice point differ, the
        condition it assumed otherwise ("`event_id` is not unique"); None lets confidence.py decide."""
        reason = fix if isinstance(fix, str) else None
        fix = None if isinstance(fix, str) else fix
        found = links(ctx.graph, self.id, span, outcomes)
        return Finding(
            rule_id=self.id,
            message=with_assumptions(message, found),
            severity=severity or self.severity,
            path=ctx.path,
            span=_plain(span),
            related=tuple(RelatedLocation(_plain(r.span), r.message, r.cell, r.path) for r in related),
            fix_safety=fix.safety.value if fix is not None else None,
            fix=fix,
            no_fix_reason=reason,
            links=found,
        )


def _plain(span: Span) -> Span:
    """Findings outlive the graph (cache, worker processes): numbers, not lazy lookups."""
    return Span(span.line, span.column, span.end_line, span.end_column)
