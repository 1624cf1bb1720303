"""One Python text for a notebook, mapped both ways.

Code cells are masked (cells.py); SQL cells become `spark.sql(r\"\"\"...\"\"\")` around their own lines,
so the SQL analysis, its graph links and its fixes treat them as any literal query. Columns of the SQL
are kept (Databricks' `# MAGIC ` prefix becomes as many spaces). A cell that does not parse is masked
whole and reported on its own. Jupyter cells are preceded by a marker comment so fixed text splits
back into cells; Databricks files keep their lines one to one.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

import libcst as cst

from sparkpar_lint.model import Span
from sparkpar_lint.parsing import TooDeeplyNested, parse_module
from sparkpar_lint.sources.cells import (
    DISPLAY,
    MASK,
    Cell,
    close_sql,
    closer,
    inline_opener,
    mask_all,
    mask_magics,
    unmask,
)
from sparkpar_lint.sources.run_magic import run_as_import

CELL_MARKER = "#sparkpar-cell:"
SQL_OPENER = 'spark.sql(r"""--sparkpar-sql:'
# before, display( (a shown cell), the prefix the query followed, the query's first line.
_INLINE = re.compile(r'^(.*?)(display\()?spark\.sql\(r"""/\*sparkpar-sql:(.*?)\*/(.*)$')
_MARKER_LINE = re.compile(r"^#sparkpar-cell:(\d+)$")


@dataclass
class VirtualSource:
    text: str
    cells: list[Cell]
    markers: bool  # Jupyter: marker lines and cell coordinates; Databricks: file lines
    # Virtual line (0-based) -> (cell number, 1-based line in that cell).
    origin: list[tuple[int, int]] = field(default_factory=list)
    # Virtual line (0-based) -> columns the inline SQL wrapper added before the query on that line.
    shifts: dict[int, int] = field(default_factory=dict)
    broken: list[tuple[Cell, SyntaxError]] = field(default_factory=list)

    def locate(self, span: Span) -> tuple[int | None, Span]:
        """The notebook coordinates of a span of the virtual text."""
        span = self._unshift(span)
        if not self.markers:
            return None, span
        cell, line = self.origin[min(span.line, len(self.origin)) - 1]
        end_cell, end_line = self.origin[min(span.end_line, len(self.origin)) - 1]
        if end_cell != cell:
            return cell, Span(line, span.column, line, span.column)
        return cell, Span(line, span.column, end_line, span.end_column)

    def _unshift(self, span: Span) -> Span:
        start = self.shifts.get(span.line - 1, 0)
        end = self.shifts.get(span.end_line - 1, 0)
        if not start and not end:
            return span
        return Span(span.line, max(0, span.column - start), span.end_line, max(0, span.end_column - end))

    def restore(self, fixed: str) -> dict[int, str]:
        """Jupyter: cell number -> new source of every cell the fixed text changed."""
        chunks: dict[int, list[str]] = {}
        preamble: list[str] = []
        current = None
        for line in fixed.split("\n")[:-1] if fixed.endswith("\n") else fixed.split("\n"):
            marker = _MARKER_LINE.match(line)
            if marker:
                current = chunks.setdefault(int(marker.group(1)), [])
            elif current is None:
                preamble.append(line)  # imports a fix added above the first cell
            else:
                current.append(line)
        if preamble and chunks:
            first = next(iter(chunks))
            chunks[first] = preamble + chunks[first]
        changed = {}
        for cell in self.cells:
            if cell.index not in chunks:
                continue
            lines = restore_lines(chunks[cell.index], databricks=False)
            text = "\n".join(lines) + ("\n" if cell.extra.get("trailing_newline") else "")
            original = "\n".join(cell.lines) + ("\n" if cell.extra.get("trailing_newline") else "")
            if text != original:
                changed[cell.index] = text
        return changed


def build(cells: list[Cell], *, markers: bool, sql_file: bool = False) -> VirtualSource:
    """Jupyter cells (`markers`), or a Databricks export / SQL file (`sql_file`) line for line."""
    virtual = VirtualSource("", cells, markers)
    out: list[str] = []
    for cell in cells:
        if cell.kind == "other" and markers:
            continue  # markdown and raw cells are not in the Jupyter text at all
        if sql_file:
            lines = _sql_file_lines(cell)
        else:
            lines = _python_lines(cell, virtual, databricks=not markers)
        if markers:
            out.append(f"{CELL_MARKER}{cell.index}")
            virtual.origin.append((cell.index, 1))
        for number, line in enumerate(lines):
            inline = _INLINE.match(line)
            if inline:  # the query's columns, less those of what it followed in the file
                virtual.shifts[len(out) + number] = inline.start(4) - len(inline.group(1)) - len(inline.group(3))
        out.extend(lines)
        virtual.origin.extend((cell.index, number) for number in range(1, len(lines) + 1))
    virtual.text = "".join(line + "\n" for line in out)
    return virtual


def restore_lines(lines: list[str], *, databricks: bool) -> list[str]:
    """Undo masking and SQL wrapping on (fixed) virtual lines."""
    out: list[str] = []
    in_sql, end = False, ""
    for line in lines:
        inline = None if in_sql else _INLINE.match(line)
        if inline:
            before, shown, prefix, rest = inline.groups()
            end = closer(bool(shown))
            in_sql = not rest.endswith(end)
            out.append(before + prefix + (rest if in_sql else rest[: -len(end)]))
        elif not in_sql and line.startswith((SQL_OPENER, DISPLAY + SQL_OPENER)):
            shown = line.startswith(DISPLAY)
            end = closer(shown)
            out.append(line[len(SQL_OPENER) + (len(DISPLAY) if shown else 0) :])
            in_sql = True
        elif in_sql:
            in_sql = not line.endswith(end)
            body = line if in_sql else line[: -len(end)]
            out.append(_remagic(body) if databricks else body)
        else:
            out.append(unmask(line))
    return out


def _python_lines(cell: Cell, virtual: VirtualSource, *, databricks: bool) -> list[str]:
    if cell.kind == "other":  # Jupyter leaves these out; an export's `# MAGIC %run` may import
        return [_run_line(line) if databricks else line for line in cell.lines]
    if cell.kind == "sql":
        return _wrap_sql(cell, databricks) or mask_all(cell.lines)
    # Plain Python first (a continuation line may start with `%`), then with magics masked, then
    # with automagic shell commands (`pip install x`, `ls`) masked too.
    errors = []
    masked = mask_magics(cell.lines)
    for candidate in (cell.lines, masked, mask_magics(cell.lines, automagic=True)):
        try:
            ast.parse("".join(line + "\n" for line in candidate))
        except SyntaxError as error:
            errors.append(error)
            continue
        except (ValueError, RecursionError, MemoryError):  # NUL bytes, absurd nesting
            return mask_all(cell.lines)
        return _runs_imported(candidate)
    if _newer_python(masked):
        return _runs_imported(masked)
    virtual.broken.append((cell, errors[1]))  # the error with magics masked, as IPython sees it
    return mask_all(cell.lines)


def _runs_imported(lines: list[str]) -> list[str]:
    """The cell's lines, each masked `%run` line as the import it stands for."""
    return [run_as_import(line, line[len(MASK) :]) if line.startswith(MASK) else line for line in lines]


def _newer_python(lines: list[str]) -> bool:
    """Python a newer interpreter than this one accepts (PEP 701 f-strings of 3.12, as Databricks
    runtimes run them): `ast` judges by the running version, LibCST by the grammar it knows."""
    try:
        parse_module("".join(line + "\n" for line in lines))
    except (cst.ParserSyntaxError, TooDeeplyNested, RecursionError, MemoryError):
        return False
    return True


def _run_line(line: str) -> str:
    """An export's comment line, or the import its `# MAGIC %run ./x` stands for (masked after it)."""
    imported = run_as_import(MASK + line, line)
    return imported if imported != MASK + line else line


def _wrap_sql(cell: Cell, databricks: bool) -> list[str] | None:
    """The cell as one `spark.sql` call on its own lines, or None if it cannot be wrapped exactly."""
    header = cell.extra["header_line"]
    rest = cell.lines[header + 1 :]
    if databricks:
        magic = [i for i, line in enumerate(rest) if line.startswith("# MAGIC")]
        end = magic[-1] + 1 if magic else 0
        if any(not line.startswith("# MAGIC") for line in rest[:end]):
            return None
        body = [_unmagic(line) for line in rest[:end]]
    else:
        filled = [i for i, line in enumerate(rest) if line.strip()]
        end = filled[-1] + 1 if filled else 0
        body = rest[:end]
    inline = _INLINE_MAGIC.match(cell.header or "") if databricks else None
    # The cell's last query is what the notebook shows: `display(spark.sql(...))`.
    if inline:  # `# MAGIC %sql SELECT ...`: the query starts on the magic line
        opener = [inline_opener(inline.group(1), inline.group(2), shown=True)]  # `# MAGIC` holds no `*/`
    else:
        opener = [DISPLAY + SQL_OPENER + (cell.header or "")]
    wrapped = close_sql([*opener, *body], shown=True) if inline or body else None
    if wrapped is None:
        return None
    before = cell.lines[:header] if databricks else mask_all(cell.lines[:header])
    return [*before, *wrapped, *rest[end:]]


_INLINE_MAGIC = re.compile(r"^(# MAGIC\s*%sql\s+)(\S.*)$")


def _sql_file_lines(cell: Cell) -> list[str]:
    """A SQL cell from its first non-blank line to its last as one call; anything else masked.
    An export's cell shows its last query (as a notebook does); a plain script's result is not shown."""
    filled = [i for i, line in enumerate(cell.lines) if line.strip()]
    if cell.kind != "sql" or not filled:
        return mask_all(cell.lines)
    first, last = filled[0], filled[-1] + 1
    shown = not cell.extra.get("script")
    wrapped = close_sql([inline_opener("", cell.lines[first], shown), *cell.lines[first + 1 : last]], shown)
    if wrapped is None:
        return mask_all(cell.lines)
    return [*cell.lines[:first], *wrapped, *cell.lines[last:]]


def _unmagic(line: str) -> str:
    rest = line[len("# MAGIC") :]
    if not rest:
        return ""
    return " " * 8 + rest[1:] if rest.startswith(" ") else " " * 7 + rest


def _remagic(line: str) -> str:
    if not line:
        return "# MAGIC"
    if line.startswith(" " * 8):
        return "# MAGIC " + line[8:]
    if line.startswith(" " * 7):
        return "# MAGIC" + line[7:]
    return "# MAGIC " + line
