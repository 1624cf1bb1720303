"""Lint and fix a notebook through its virtual Python text (virtual.py), in its own coordinates."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from dataclasses import dataclass

from sparkpar_lint.model import Finding, RelatedLocation, Span
from sparkpar_lint.sources import databricks, ipynb, is_databricks, is_sql_source, sqlfile
from sparkpar_lint.sources.ipynb import NotebookError
from sparkpar_lint.sources.virtual import VirtualSource, build, restore_lines

__all__ = ["Notebook", "NotebookError", "fix_notebook", "lint_notebook", "read_notebook"]


@dataclass
class Notebook:
    path: str
    data: bytes
    virtual: VirtualSource
    jupyter: bool
    sql_file: bool = False  # a .sql file: SQL lines are not `# MAGIC` comments

    def cell_text(self, number: int) -> str:
        return next(cell.text for cell in self.virtual.cells if cell.index == number)

    def display_sources(self, findings: list[Finding]) -> dict[str, str]:
        """Text for code frames: a Jupyter finding's span is in its cell, keyed `path:cell N`."""
        if not self.jupyter:
            return {self.path: self.data.decode("utf-8-sig", "replace")}
        return {cell_key(self.path, f.cell): self.cell_text(f.cell) for f in findings if f.cell is not None}

    def fixed_bytes(self, fixed_text: str) -> bytes:
        if self.jupyter:
            changed = self.virtual.restore(fixed_text)
            return ipynb.write_cells(self.data, changed) if changed else self.data
        text = "\n".join(restore_lines(fixed_text.split("\n"), databricks=not self.sql_file))
        if not self.data.endswith(b"\n") and text.endswith("\n"):
            text = text[:-1]
        return text.encode("utf-8")


def cell_key(path: str, cell: int | None) -> str:
    return path if cell is None else f"{path}:cell {cell}"


def read_notebook(path: str, data: bytes) -> Notebook:
    """Raises NotebookError for a Jupyter file that is not a notebook."""
    if path.endswith(".ipynb") and not is_databricks(data):
        return Notebook(path, data, build(ipynb.read_cells(path, data), markers=True), True)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise NotebookError(f"{path}: cannot decode: not valid UTF-8 (byte at offset {error.start})") from None
    if is_sql_source(path, data):
        return Notebook(path, data, build(sqlfile.read_cells(text), markers=False, sql_file=True), False, True)
    return Notebook(path, data, build(databricks.read_cells(text), markers=False), False)


def lint_notebook(notebook: Notebook, rule_ids: Collection[str], settings=None) -> list[Finding]:
    """Findings in notebook coordinates; a `# noqa` never hides a cell that does not parse."""
    from sparkpar_lint.analysis import analyze
    from sparkpar_lint.suppressions import apply_suppressions

    virtual = notebook.virtual
    findings = [f for f in analyze(notebook.path, virtual.text, rule_ids, settings) if f.rule_id in rule_ids]
    findings = [_locate(f, virtual) for f in apply_suppressions(findings, virtual.text)]
    findings += [_unparsable(notebook, cell, error) for cell, error in virtual.broken]
    return sorted(findings, key=Finding.sort_key)


def _locate(finding: Finding, virtual: VirtualSource) -> Finding:
    cell, span = virtual.locate(finding.span)
    related = tuple(_related(r, virtual) for r in finding.related)
    return dataclasses.replace(finding, cell=cell, span=span, related=related, fix=None)


def _related(related: RelatedLocation, virtual: VirtualSource) -> RelatedLocation:
    if related.path is not None:
        return related  # in another file (an imported helper): not a cell of this notebook
    cell, span = virtual.locate(related.span)
    return RelatedLocation(span, related.message, cell)


def _unparsable(notebook: Notebook, cell, error: SyntaxError) -> Finding:
    from sparkpar_lint.rules.spx901_unparsable_file import UnparsableFile

    line, column = error.lineno or 1, max((error.offset or 1) - 1, 0)
    if not notebook.jupyter:
        line += cell.first_line - 1
    return Finding(
        rule_id=UnparsableFile.id,
        message=f"cannot parse cell {cell.index}: {error.msg}",
        severity=UnparsableFile.severity,
        path=notebook.path,
        span=Span(line, column, line, column),
        cell=cell.index if notebook.jupyter else None,
    )


def fix_notebook(path: str, source: str, rule_ids: Collection[str], unsafe: bool = False, settings=None):
    """`fix_source` for a notebook: the outcome's texts are the whole file, cells rewritten in place;
    `settings` as for `fix_source` (the configuration's, so a notebook is fixed as it is linted)."""
    from sparkpar_lint.fixes.engine import fix_source

    data = source.encode("utf-8")
    notebook = read_notebook(path, data)
    outcome = fix_source(path, notebook.virtual.text, rule_ids, unsafe=unsafe, settings=settings)
    outcome.original = source
    outcome.fixed = notebook.fixed_bytes(outcome.fixed).decode("utf-8") if outcome.changed else source
    return outcome
