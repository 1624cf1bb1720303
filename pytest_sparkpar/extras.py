"""What the plugin needs beyond sparkpar's core install, and the one message saying how to get it.

`pip install sparkpar` installs the linter only; the plugin's entry point still loads (pytest finds
it whenever pytest is installed), so it stays dormant until a sparkpar option or fixture is used,
and only then says what to install. `find_spec` looks for a package without importing it.
"""

from __future__ import annotations

import importlib.util

INSTALL = "pip install 'sparkpar[pytest]'"
# The `spark` fixture (and `sparkpar.check`, which uses it) runs PySpark with its pandas and Arrow
# APIs; `sparkpar.check_combiner` and shrinking use hypothesis.
SPARK = ("pyspark", "pandas", "pyarrow")
ALL = ("hypothesis", *SPARK)


def missing(packages: tuple[str, ...] = ALL) -> list[str]:
    return [name for name in packages if importlib.util.find_spec(name) is None]


def message(what: str, absent: list[str]) -> str:
    return f"sparkpar: {what} needs {', '.join(absent)}, not installed here: {INSTALL}"
