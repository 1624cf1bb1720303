"""`sparkpar lint fixtures/` finds exactly what each fixture's `# expect:` markers say.

A marker `# expect: SPX101` (or `# expect: SPX101, SPX107`) ends every line where a finding must
start; fixed twins and clean jobs carry none, so any finding on them fails the test.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sparkpar_lint.analysis import analyze

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
MARKER = re.compile(r"#\s*expect:\s*([A-Z0-9, ]+)$")
JOBS = sorted(FIXTURES.rglob("*.py"))


def expected_findings(source: str) -> set[tuple[str, int]]:
    expected = set()
    for number, line in enumerate(source.splitlines(), start=1):
        match = MARKER.search(line)
        if match:
            expected.update((rule.strip(), number) for rule in match.group(1).split(",") if rule.strip())
    return expected


def test_fixture_set_has_bad_fixed_and_clean_jobs():
    names = {path.name for path in JOBS}
    assert any(n.startswith("bad_") for n in names)
    assert any(n.startswith("fixed_") for n in names)
    assert any(path.parent.name == "clean" for path in JOBS)


@pytest.mark.parametrize("path", JOBS, ids=[str(p.relative_to(FIXTURES)) for p in JOBS])
def test_fixture_findings_match_markers(path: Path):
    source = path.read_text(encoding="utf-8")
    found = {(f.rule_id, f.span.line) for f in analyze(str(path), source)}
    assert found == expected_findings(source)
    if path.name.startswith("bad_"):
        assert found, "a bad fixture must be flagged"
