"""`sparkpar lint fixtures/` finds exactly what each fixture's `# expect:` markers say.

A marker `# expect: SPX101` (or `# expect: SPX101, SPX107`; `-- expect:` in SQL) ends every line
where a finding must start; fixed twins and clean jobs carry none, so any finding on them fails the
test. Jupyter notebooks are matched cell by cell, lines counted within the cell.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sparkpar_lint.rules import all_rules
from sparkpar_lint.runner import check_source
from sparkpar_lint.sources import ipynb

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
MARKER = re.compile(r"(?:#|--)\s*expect:\s*([A-Z0-9, ]+)$")
JOBS = sorted([*FIXTURES.rglob("*.py"), *FIXTURES.rglob("*.ipynb")])
ALL_RULES = frozenset(rule.id for rule in all_rules())


def expected_findings(source: str, cell: int | None = None) -> set[tuple[str, int | None, int]]:
    expected = set()
    for number, line in enumerate(source.splitlines(), start=1):
        match = MARKER.search(line)
        if match:
            expected.update((rule.strip(), cell, number) for rule in match.group(1).split(",") if rule.strip())
    return expected


def expected_in(path: Path) -> set[tuple[str, int | None, int]]:
    if path.suffix != ".ipynb":
        return expected_findings(path.read_text(encoding="utf-8"))
    cells = ipynb.load(str(path), path.read_bytes())["cells"]
    return set().union(*(expected_findings(ipynb.source_text(c), n) for n, c in enumerate(cells, 1)))


def test_fixture_set_has_bad_fixed_and_clean_jobs():
    names = {path.name for path in JOBS}
    assert any(n.startswith("bad_") for n in names)
    assert any(n.startswith("fixed_") for n in names)
    assert any(path.parent.name == "clean" for path in JOBS)


@pytest.mark.parametrize("path", JOBS, ids=[str(p.relative_to(FIXTURES)) for p in JOBS])
def test_fixture_findings_match_markers(path: Path):
    result, _ = check_source(str(path), path.read_bytes(), ALL_RULES)
    assert result.error is None
    found = {(f.rule_id, f.cell, f.span.line) for f in result.findings}
    assert found == expected_in(path)
    if path.name.startswith("bad_"):
        assert found, "a bad fixture must be flagged"
