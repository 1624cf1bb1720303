"""A notebook read into its virtual Python text (virtual.py) and written back from it."""

from __future__ import annotations

from dataclasses import dataclass

from sparkpar_lint.model import Finding
from sparkpar_lint.sources import databricks, ipynb, is_databricks, is_sql_source, sqlfile
from sparkpar_lint.sources.ipynb import NotebookError
from sparkpar_lint.sources.virtual import VirtualSource, build, restore_lines

__all__ = ["Notebook", "NotebookError", "read_notebook"]


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
