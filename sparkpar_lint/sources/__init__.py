"""Sources that are not plain Python files: Jupyter notebooks and Databricks source exports.

Each is read into cells, turned into one Python text the analysis can parse (magics masked, SQL
cells wrapped as `spark.sql` strings) and mapped back: findings to the notebook's own coordinates,
fixed text to the cells it came from.
"""

from __future__ import annotations

import re

DATABRICKS_HEADER = "# Databricks notebook source"
# Microsoft Fabric exports notebooks the same way, with other cell markers (databricks.py).
FABRIC_HEADER = "# Fabric notebook source"


def is_notebook(path: str, data: bytes | str) -> bool:
    """A Jupyter notebook (by suffix), a Databricks source export (by its first line) or a SQL
    file: anything read through cells rather than as one Python module."""
    return path.endswith(".ipynb") or is_databricks(data) or is_sql_source(path, data) or is_magic_script(path, data)


def is_sql_source(path: str, data: bytes | str) -> bool:
    """Spark SQL: a `.sql` file, or a Databricks SQL notebook export whatever its name."""
    from sparkpar_lint.sources.sqlfile import is_sql_export

    return path.lower().endswith(".sql") or is_sql_export(data)


def is_databricks(data: bytes | str) -> bool:
    """A notebook exported as Python source (Databricks or Fabric)."""
    head = data[:64].decode("utf-8", "replace") if isinstance(data, bytes) else data[:64]
    return head.lstrip("\ufeff").startswith((DATABRICKS_HEADER, FABRIC_HEADER))


# A Databricks Repos file saved without the export header still runs as a notebook when its first
# code line is a magic (`%run ./setup`, `%pip install x`, `%sql ...`); `%` never starts a Python
# statement, so such a file read as a module is only a parse error. Comments and blank lines before
# the magic are allowed; a `# MAGIC` line or a cell separator counts too.
_FIRST_CODE_LINE = re.compile(
    rb"\A(?:\xef\xbb\xbf)?(?:[ \t]*(?:#(?! MAGIC\b| COMMAND -{10})[^\n]*)?\r?\n)*[ \t]*(%|# MAGIC\b|# COMMAND -{10})"
)
_SCANNED_BYTES = 64 * 1024


def is_magic_script(path: str, data: bytes | str) -> bool:
    """A `.py` file with no notebook header whose first code line is a notebook magic."""
    if not path.endswith(".py"):
        return False
    head = data[:_SCANNED_BYTES]
    return bool(_FIRST_CODE_LINE.match(head.encode("utf-8", "replace") if isinstance(head, str) else head))
