"""Rule documentation pages (`rules/docs/SPXnnn.md`, shipped as `sparkpar_lint.ruledata`).

`sparkpar explain`, the SARIF rule metadata and the docs site all read the same text from here.
"""

from __future__ import annotations

import re
from importlib import resources

SECTIONS = ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety", "Known problems")


class MissingDoc(LookupError):
    pass


def load_doc(rule_id: str) -> str:
    """The whole Markdown page for `rule_id`; MissingDoc when the rule has none."""
    if not re.fullmatch(r"[A-Z]+\d+", rule_id):
        raise MissingDoc(rule_id)
    page = resources.files("sparkpar_lint.ruledata") / "docs" / f"{rule_id}.md"
    try:
        return page.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        raise MissingDoc(rule_id) from None


def doc_section(rule_id: str, heading: str) -> str | None:
    """The text under `## heading`, stripped; None when the page or the section is missing."""
    try:
        text = load_doc(rule_id)
    except MissingDoc:
        return None
    match = re.search(rf"^##\s+{re.escape(heading)}\s*$(.*?)(?=^##\s|\Z)", text, re.M | re.S)
    return match.group(1).strip() if match else None


def doc_summary(rule_id: str) -> str | None:
    """The first paragraph of "What it does", as plain one-line text."""
    section = doc_section(rule_id, "What it does")
    if not section:
        return None
    return " ".join(section.split("\n\n", 1)[0].split())
