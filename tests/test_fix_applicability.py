"""A fix's applicability decides whether `sparkpar fix` applies it, and what --show-unfixed says."""

from __future__ import annotations

import libcst as cst
import pytest

from sparkpar_lint.edits.model import Applicability, Fix
from sparkpar_lint.fixes.engine import fixable
from sparkpar_lint.fixes.unfixed import why_unfixed
from sparkpar_lint.model import Finding, Severity, Span
from sparkpar_lint.rules import all_rules


def _finding(applicability: Applicability) -> Finding:
    old = cst.parse_expression("rows.first()")
    fix = Fix(applicability, "order the pick", ((old, cst.parse_expression("rows.min()")),))
    return Finding("SPX106", "m", Severity.WARNING, "job.py", Span(1, 0, 1, 12), fix_safety=fix.safety.value, fix=fix)


@pytest.mark.parametrize(
    ("applicability", "by_default", "with_unsafe_fixes"),
    [
        (Applicability.SAFE, True, True),
        (Applicability.UNSAFE, False, True),
        (Applicability.DISPLAY_ONLY, False, False),
    ],
)
def test_the_engine_applies_a_fix_by_its_applicability(applicability, by_default, with_unsafe_fixes):
    finding = _finding(applicability)
    assert fixable(finding, unsafe=False) is by_default
    assert fixable(finding, unsafe=True) is with_unsafe_fixes


def test_a_display_only_fix_is_reported_as_never_applied():
    rule = {r.id: r for r in all_rules()}["SPX106"]
    finding = _finding(Applicability.DISPLAY_ONLY)
    assert why_unfixed(finding, rule, unsafe=True, rejected=False) == (
        "its fix is shown for review, never applied (order the pick)"
    )
    unsafe = _finding(Applicability.UNSAFE)
    assert why_unfixed(unsafe, rule, unsafe=False, rejected=False).startswith("an unsafe fix is available")


def test_the_finding_carries_the_applicability_as_plain_text():
    # Findings cross processes and live in the cache as JSON: the value, not the enum.
    assert [a.value for a in Applicability] == ["safe", "unsafe", "display-only"]
    assert Finding.from_dict(_finding(Applicability.UNSAFE).to_dict()).fix_safety == "unsafe"


def test_every_rule_with_a_fix_says_what_its_fix_needs():
    """The reason --show-unfixed gives when a fix builder gave neither a fix nor a reason."""
    assert [r.id for r in all_rules() if r.fix_safety and not r.fix_needs] == []
    assert [r.id for r in all_rules() if r.fix_needs and not r.fix_safety] == []
