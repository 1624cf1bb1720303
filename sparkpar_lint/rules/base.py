"""The rule contract: a small class that reads the stage graph and yields findings.

A rule carries its own examples (Fixit style); tests/test_rule_examples.py runs every one of them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from sparkpar_lint.confidence import links, with_assumptions
from sparkpar_lint.model import Finding, NoFix, RelatedLocation, Severity, Span
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
    # What that fix needs, in the words of the rule doc's "Fix safety" section: the reason
    # `sparkpar fix --show-unfixed` gives for a finding whose fix builder gave neither a fix nor
    # a reason of its own ("SPX101 needs a sort above the aggregate...").
    fix_needs: ClassVar[str | None] = None
    VALID: ClassVar[list[Valid]] = []
    INVALID: ClassVar[list[Invalid]] = []

    registry: ClassVar[dict[str, type[Rule]]] = {}

    def __init_subclass__(cls, **kwargs: object) -> None:
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
        fix: Fix | NoFix | None = None,
        outcomes: bool | str | None = None,
    ) -> Finding:
        """`fix` is the finding's fix, or why there is none (a NoFix, for --show-unfixed);
        None: the rule's `fix_needs`.
        `outcomes`: True when the rule saw that the rows competing at its choice point differ, the
        condition it assumed otherwise ("`event_id` is not unique"); None lets confidence.py decide."""
        no_fix = self._no_fix(fix)
        fix = None if isinstance(fix, NoFix) else fix
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
            no_fix=no_fix,
            links=found,
        )

    def _no_fix(self, fix: Fix | NoFix | None) -> NoFix | None:
        if isinstance(fix, NoFix):
            return fix
        if fix is None and self.fix_needs:
            return NoFix(f"{self.id} {self.fix_needs}")
        return None


def _plain(span: Span) -> Span:
    """Findings outlive the graph (cache, worker processes): numbers, not lazy lookups."""
    return Span(span.line, span.column, span.end_line, span.end_column)
