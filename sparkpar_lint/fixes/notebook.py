"""Fix a notebook through its virtual Python text: cells rewritten in place, the rest kept."""

from __future__ import annotations

from collections.abc import Collection

from sparkpar_lint.fixes.engine import FixOutcome, fix_source
from sparkpar_lint.settings import AnalysisSettings
from sparkpar_lint.sources.notebook import read_notebook


def fix_notebook(
    path: str,
    source: str,
    rule_ids: Collection[str],
    unsafe: bool = False,
    settings: AnalysisSettings | None = None,
) -> FixOutcome:
    """`fix_source` for a notebook: the outcome's texts are the whole file, cells rewritten in place;
    `settings` as for `fix_source` (the configuration's, so a notebook is fixed as it is linted)."""
    data = source.encode("utf-8")
    notebook = read_notebook(path, data)
    outcome = fix_source(path, notebook.virtual.text, rule_ids, unsafe=unsafe, settings=settings)
    outcome.original = source
    outcome.fixed = notebook.fixed_bytes(outcome.fixed).decode("utf-8") if outcome.changed else source
    return outcome
