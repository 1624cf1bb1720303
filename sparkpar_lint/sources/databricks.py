"""Databricks source exports: a Python file whose cells are separated by `# COMMAND ----------`.

Cells in other languages are `# MAGIC` comment lines; a cell starting `# MAGIC %sql` is SQL.
Fabric exports have the same shape with `# CELL ****` / `# MARKDOWN ****` / `# METADATA ****`
markers and `# MAGIC %%sql` SQL cells.
"""

from __future__ import annotations

import re

from sparkpar_lint.sources import is_databricks
from sparkpar_lint.sources.cells import Cell

_SEPARATOR = re.compile(r"^(# COMMAND -{10}|# (?:PARAMETERS )?CELL \*+|# MARKDOWN \*+|# METADATA \*+)\s*$")
_LANGUAGE = re.compile(r"^# MAGIC\s*%%?(\w+)")


def read_cells(text: str) -> list[Cell]:
    """Cells in file order; each separator line opens the cell after it, line 1 opens cell 1."""
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    starts = [0] + [i for i, line in enumerate(lines) if i > 0 and _SEPARATOR.match(line)]
    spans = [(a, b) for a, b in zip(starts, [*starts[1:], len(lines)]) if b > a]
    return [_cell(number, lines[a:b], a + 1) for number, (a, b) in enumerate(spans, 1)]


def _cell(number: int, lines: list[str], first_line: int) -> Cell:
    cell = Cell(number, "code", lines, first_line=first_line)
    # The export's header line is not content: a notebook's first cell may be a SQL cell.
    content = [
        i for i, line in enumerate(lines) if line.strip() and not _SEPARATOR.match(line) and not is_databricks(line)
    ]
    if not content or not lines[content[0]].startswith("# MAGIC"):
        return cell
    language = _LANGUAGE.match(lines[content[0]])
    if language and language.group(1).lower() == "sql":
        cell.kind, cell.header = "sql", lines[content[0]]
        cell.extra["header_line"] = content[0]
    else:
        cell.kind = "other"  # markdown, shell, pip, run, other languages: comments to Python
    return cell
