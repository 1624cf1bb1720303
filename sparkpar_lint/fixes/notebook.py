"""Fix a notebook through its virtual Python text: cells rewritten in place, the rest kept."""

from __future__ import annotations

from collections.abc import Collection

from sparkpar_lint.fixes.engine import FixOutcome, fix_source
from sparkpar_lint.settings import AnalysisSettings
from sparkpar_lint.sources.notebook import NotebookError, read_notebook


def fix_notebook(
    path: str,
    source: str,
    rule_ids: Collection[str],
    unsafe: bool = False,
    settings: AnalysisSettings | None = None,
) -> FixOutcome:
    """`fix_source` for a notebook: the outcome's texts are the whole file, cells rewritten in place;
    `settings` as for `fix_source` (the configuration's, so a notebook is fixed as it is linted)."""
    return fix_notebook_file(path, source.encode("utf-8"), rule_ids, unsafe, settings)


def fix_notebook_file(
    path: str,
    data: bytes,
    rule_ids: Collection[str],
    unsafe: bool = False,
    settings: AnalysisSettings | None = None,
) -> FixOutcome:
    """`fix_notebook` of the file's bytes, read as `lint` reads them: a notebook lint cannot read
    raises NotebookError with lint's message. Notebooks are UTF-8 text, and written back so."""
    notebook = read_notebook(path, data)
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError as error:  # JSON in another Unicode encoding: read, not rewritten
        raise NotebookError(f"{path}: cannot decode: not valid UTF-8 (byte at offset {error.start})") from None
    outcome = fix_source(path, notebook.virtual.text, rule_ids, unsafe=unsafe, settings=settings)
    outcome.original = source
    outcome.fixed = notebook.fixed_bytes(outcome.fixed).decode("utf-8") if outcome.changed else source
    return outcome
