"""SQL files: a Databricks SQL notebook export (`-- Databricks notebook source`, cells separated by
`-- COMMAND ----------`, other languages as `-- MAGIC` lines) or a plain script of Spark SQL.

Each SQL cell (a plain file is one) becomes one `spark.sql` call over its own lines, so findings
keep the file's lines and columns; `-- MAGIC` cells (markdown, Python, shell) are not checked.
"""

from __future__ import annotations

import re

from sparkpar_lint.sources.cells import Cell

SQL_EXPORT_HEADER = "-- Databricks notebook source"
_SEPARATOR = re.compile(r"^-- COMMAND -{10}\s*$")


def is_sql_export(data: bytes | str) -> bool:
    head = data[:64].decode("utf-8", "replace") if isinstance(data, bytes) else data[:64]
    return head.lstrip("\ufeff").startswith(SQL_EXPORT_HEADER)


def read_cells(text: str) -> list[Cell]:
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    if not is_sql_export(text):
        return [Cell(1, "sql", lines, extra={"script": True})]
    starts = [0] + [i for i, line in enumerate(lines) if i > 0 and _SEPARATOR.match(line)]
    spans = [(a, b) for a, b in zip(starts, [*starts[1:], len(lines)]) if b > a]
    return [_cell(number, lines[a:b], a + 1) for number, (a, b) in enumerate(spans, 1)]


def _cell(number: int, lines: list[str], first_line: int) -> Cell:
    content = [line for line in lines if line.strip() and not _SEPARATOR.match(line) and not is_sql_export(line)]
    magic = bool(content) and content[0].startswith("-- MAGIC")
    return Cell(number, "other" if magic else "sql", lines, first_line=first_line)
