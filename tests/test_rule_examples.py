"""Every rule's own VALID/INVALID examples, checked to the exact line and column (Fixit style)."""

from __future__ import annotations

import pytest

from sparkpar_lint.analysis import analyze
from sparkpar_lint.rules import all_rules

RULES = all_rules()


def _cases(kind: str):
    for rule in RULES:
        for index, example in enumerate(getattr(rule, kind)):
            yield pytest.param(rule, example, id=f"{rule.id}-{kind}-{index}")


@pytest.mark.parametrize(("rule", "example"), list(_cases("VALID")))
def test_valid_example_is_clean(rule, example):
    findings = [f for f in analyze("example.py", example.code) if f.rule_id == rule.id]
    assert findings == []


@pytest.mark.parametrize(("rule", "example"), list(_cases("INVALID")))
def test_invalid_example_is_flagged_at_its_span(rule, example):
    findings = [f for f in analyze("example.py", example.code) if f.rule_id == rule.id]
    assert [(f.span.line, f.span.column) for f in findings] == [(example.line, example.column)]
    finding = findings[0]
    assert finding.severity == (example.severity or rule.severity)
    if example.related_lines:
        assert tuple(r.span.line for r in finding.related) == example.related_lines


@pytest.mark.parametrize(("rule", "example"), [c for c in _cases("INVALID") if c.values[0].fix_safety])
def test_fix_of_invalid_example(rule, example):
    from sparkpar_lint.fixes.engine import fix_source

    outcome = fix_source("example.py", example.code, {rule.id}, unsafe=True)
    assert outcome.fixed == (example.expected_fix or example.code)
    if example.expected_fix is not None:
        again = fix_source("example.py", outcome.fixed, {rule.id}, unsafe=True)
        assert again.fixed == outcome.fixed, "a second fix pass must change nothing"
        assert [f for f in analyze("example.py", outcome.fixed) if f.rule_id == rule.id] == []


def test_every_rule_has_examples_of_both_kinds():
    for rule in RULES:
        assert rule.VALID and rule.INVALID, rule.id
