"""A notebook as cells, and the masking that turns a code cell into Python the parser accepts.

IPython syntax (`%magic`, `!shell`, `x = !cmd`) is not Python; each such line becomes a comment
that keeps the original text after a marker, so a fixed cell gets its magics back unchanged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

MASK = "#sparkpar-masked:"
# Cell magics whose body is still Python (timing, capturing output).
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun"})
_ASSIGNED_MAGIC = re.compile(r"^\s*[A-Za-z_][\w.]*(\s*,\s*[A-Za-z_][\w.]*)*\s*=\s*[%!]")
# IPython's help: `spark?`, `??spark`, `spark.read.csv??`, `F.*col*?`; `?` is never Python.
_HELP = re.compile(r"^\s*(\?\??[A-Za-z_*][\w.*]*|[A-Za-z_*][\w.*]*\?\??)\s*$")
# IPython runs these without `%` (automagic) or as shell commands; only tried when a cell does
# not parse otherwise, since `ls -l` is also a valid Python expression.
_AUTOMAGIC = re.compile(
    r"^\s*(pip|conda|ls|cd|pwd|cat|mkdir|rm|cp|mv|less|man|clear|env|history|who|whos|alias|unalias"
    r"|load_ext|reload_ext|matplotlib|pylab|time|timeit|run|sx|system|pinfo|pip3)\b(?!\s*[=(.\[,:])"
)
_CONTINUED = re.compile(r"(\\|[(\[{,]|[-+*/%&|^=<>])\s*$")
SQL_CLOSER = '""")'
# A query that starts on its magic line (`%sql SELECT 1`, `# MAGIC %sql SELECT 1`, a .sql file's
# first line) becomes `spark.sql(r"""/*sparkpar-sql:<prefix>*/SELECT 1""")`: the prefix rides in a
# SQL comment, so the line restores exactly, and columns after it shift by a fixed width.
INLINE_OPENER = 'spark.sql(r"""/*sparkpar-sql:'
# A notebook shows the result of a SQL cell's last query: the call is wrapped in `display(...)`,
# so a LIMIT there reads as the preview it is.
DISPLAY = "display("
# `%sql SELECT ...` or `rows = %sql SELECT ...`: a line magic whose argument is the query.
_SQL_LINE_MAGIC = re.compile(r"^(\s*(?:[A-Za-z_]\w*\s*=\s*)?)(%sql\s+)(\S.*)$")


@dataclass
class Cell:
    index: int  # 1-based over ALL cells of the notebook, markdown included
    kind: str  # "code", "sql" or "other" (markdown, raw, other languages)
    lines: list[str]  # without line endings
    first_line: int = 1  # Databricks exports: the file line of the cell's first line
    header: str | None = None  # SQL cells: the magic line that made them SQL
    extra: dict = field(default_factory=dict)

    @property
    def text(self) -> str:
        return "".join(line + "\n" for line in self.lines)


def is_magic(line: str, previous: str) -> bool:
    """An IPython line magic or shell escape, not a continuation of the line before."""
    stripped = line.lstrip()
    if _CONTINUED.search(previous):
        return False
    if stripped.startswith("!") and not stripped.startswith("!="):
        return True
    if stripped.startswith("%"):
        return True
    return bool(_ASSIGNED_MAGIC.match(line) or _HELP.match(line))


def mask_line(line: str) -> str:
    """A comment (or `pass` when indented, so the block stays valid) carrying the original line."""
    indent = line[: len(line) - len(line.lstrip())]
    if not indent:
        return MASK + line
    return f"{indent}pass  {MASK}{line}"


def mask_all(lines: list[str]) -> list[str]:
    return [MASK + line for line in lines]


def inline_opener(prefix: str, sql: str, shown: bool = False) -> str:
    """The first line of a query that starts after `prefix` (which holds no `*/`) on the same line."""
    return f"{DISPLAY if shown else ''}{INLINE_OPENER}{prefix}*/{sql}"


def closer(shown: bool) -> str:
    return SQL_CLOSER + (")" if shown else "")


def close_sql(lines: list[str], shown: bool = False) -> list[str] | None:
    """`lines` (the first opening the call) with the call closed on the last one, or None when the
    SQL cannot sit in r\"\"\"...\"\"\"."""
    opened = lines[0].split('"""', 1)[1]
    if any('"""' in line for line in [opened, *lines[1:]]) or lines[-1].endswith(("\\", '"')):
        return None
    return [*lines[:-1], lines[-1] + closer(shown)]


def sql_line_magic(line: str) -> str | None:
    """`%sql SELECT 1` as one `spark.sql` call on the same line, or None."""
    match = _SQL_LINE_MAGIC.match(line)
    if match is None:
        return None
    before, magic, sql = match.groups()
    wrapped = close_sql([before + inline_opener(magic, sql)])
    return wrapped[0] if wrapped else None


def mask_magics(lines: list[str], automagic: bool = False) -> list[str]:
    masked, previous = [], ""
    for line in lines:
        sql = None if _CONTINUED.search(previous) else sql_line_magic(line)
        if sql is not None:
            masked.append(sql)
            previous = ""
            continue
        if is_magic(line, previous) or (automagic and _AUTOMAGIC.match(line) and not _CONTINUED.search(previous)):
            masked.append(mask_line(line))
            previous = ""  # a shell line ending in `*` or `&&` continues nothing in Python
            continue
        masked.append(line)
        if line.strip() and not line.lstrip().startswith("#"):
            previous = line
    return masked


def unmask(line: str) -> str:
    at = line.find(MASK)
    return line if at < 0 else line[at + len(MASK) :]


def cell_magic(lines: list[str]) -> str | None:
    """The name of the cell magic (`%%sql` -> "sql"), or None."""
    for line in lines:
        if line.strip():
            stripped = line.strip()
            if stripped.startswith("%%"):
                return stripped[2:].split(None, 1)[0] if stripped[2:].strip() else ""
            return None
    return None
