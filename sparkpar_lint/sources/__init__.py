"""Sources that are not plain Python files: Jupyter notebooks and Databricks source exports.

Each is read into cells, turned into one Python text the analysis can parse (magics masked, SQL
cells wrapped as `spark.sql` strings) and mapped back: findings to the notebook's own coordinates,
fixed text to the cells it came from.
"""

from __future__ import annotations

DATABRICKS_HEADER = "# Databricks notebook source"
# Microsoft Fabric exports notebooks the same way, with other cell markers (databricks.py).
FABRIC_HEADER = "# Fabric notebook source"


def is_notebook(path: str, data: bytes | str) -> bool:
    """A Jupyter notebook (by suffix) or a Databricks source export (by its first line)."""
    return path.endswith(".ipynb") or is_databricks(data)


def is_databricks(data: bytes | str) -> bool:
    """A notebook exported as Python source (Databricks or Fabric)."""
    head = data[:64].decode("utf-8", "replace") if isinstance(data, bytes) else data[:64]
    return head.lstrip("\ufeff").startswith((DATABRICKS_HEADER, FABRIC_HEADER))
