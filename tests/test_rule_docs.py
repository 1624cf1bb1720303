"""Each rule's doc page has ruff's fixed sections, and its code matches the rule's own examples."""

from __future__ import annotations

import re

import pytest

from sparkpar_lint.rules import all_rules

SECTIONS = ["What it does", "Why is this bad?", "Example", "Use instead", "Fix safety", "Known problems"]
RULES = all_rules()


def _doc(rule_id: str) -> str:
    import importlib.resources

    return (importlib.resources.files("sparkpar_lint.ruledata") / "docs" / f"{rule_id}.md").read_text("utf-8")


def _section(doc: str, title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", doc, re.S | re.M)
    return match.group(1) if match else ""


def _first_code_block(text: str) -> str:
    match = re.search(r"```python\n(.*?)```", text, re.S)
    return match.group(1) if match else ""


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_doc_has_every_section_in_order(rule):
    doc = _doc(rule.id)
    assert doc.startswith(f"# {rule.id} {rule.name}\n")
    positions = [doc.find(f"\n## {title}\n") for title in SECTIONS]
    assert -1 not in positions, [t for t, p in zip(SECTIONS, positions) if p == -1]
    assert positions == sorted(positions)


@pytest.mark.parametrize("rule", [r for r in RULES if r.id != "SPX901"], ids=lambda r: r.id)
def test_doc_examples_are_the_rules_examples(rule):
    doc = _doc(rule.id)
    bad = _first_code_block(_section(doc, "Example"))
    good = _first_code_block(_section(doc, "Use instead"))
    assert bad and any(bad in example.code for example in rule.INVALID), "Example is not an INVALID example"
    assert good and any(good in example.code for example in rule.VALID), "Use instead is not a VALID example"


@pytest.mark.parametrize("rule", [r for r in RULES if r.id != "SPX901"], ids=lambda r: r.id)
def test_doc_example_is_flagged_and_use_instead_is_clean(rule):
    """Not only the same text: the rule, run on it, flags the doc's Example (inside the example
    that holds it, which supplies the imports a doc snippet leaves out) and not its Use instead."""
    from sparkpar_lint.analysis import analyze

    doc = _doc(rule.id)
    bad = _first_code_block(_section(doc, "Example"))
    good = _first_code_block(_section(doc, "Use instead"))
    example = next(e.code for e in rule.INVALID if bad and bad in e.code)
    first = example[: example.index(bad)].count("\n") + 1
    lines = range(first, first + bad.count("\n"))
    flagged = [f.span.line for f in analyze("doc.py", example, {rule.id}) if f.rule_id == rule.id]
    assert any(line in lines for line in flagged), (flagged, list(lines))
    clean = next(e.code for e in rule.VALID if good and good in e.code)
    assert [f for f in analyze("doc.py", clean, {rule.id}) if f.rule_id == rule.id] == []
