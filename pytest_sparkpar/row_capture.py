"""Why a perturbed run of an existing test failed: the job's rows changed, or only their order.

A test that compares `df.collect()` with a list, after a `groupBy` or a window and no sort, fails
under another partitioning although the job returned the same rows: the test, not the job,
depends on row order. Recording what each `DataFrame.collect()` returned in the failing run and
in a run as written tells the two apart (chispa and `assertDataFrameEqual` collect both sides).
`DataFrame.take`/`first`/`head` collect a limit, so they are recorded too; an RDD's `take` and
`first` run their own jobs, so `RDD.take` is recorded beside `RDD.collect`.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

# The classes that define the methods returning rows in the PySpark versions the plugin runs on
# (DataFrames, and RDDs, which 4.x keeps in pyspark.core); only those a test already imported
# are patched, so a test without Spark never imports pyspark here.
_COLLECTING = (
    ("pyspark.sql.classic.dataframe", "DataFrame", ("collect",)),
    ("pyspark.sql.connect.dataframe", "DataFrame", ("collect",)),
    ("pyspark.sql.dataframe", "DataFrame", ("collect",)),
    ("pyspark.core.rdd", "RDD", ("collect", "take")),
    ("pyspark.rdd", "RDD", ("collect", "take")),
)

# A session from `getOrCreate` loads the DataFrame class only with its first DataFrame, which may
# be the test body's own: once pyspark.sql is in, the classic DataFrame module is loaded too, so
# the body's first collect() is recorded. (Connect's needs its extras; a Connect session has
# loaded it.)
_LOADED_WITH_SPARK = ("pyspark.sql.classic.dataframe", "pyspark.sql.dataframe")

REORDERED = "reordered"
CHANGED = "changed"


class recording:
    """Within the block, every `DataFrame.collect()`, `RDD.collect()` and `RDD.take()` appends the
    rows it returned to `results`."""

    def __init__(self) -> None:
        self.results: list[list[Any]] = []
        self._patched: list[tuple[Any, str, Any]] = []

    def __enter__(self) -> recording:
        if "pyspark.sql" in sys.modules:
            for module in _LOADED_WITH_SPARK:
                try:
                    importlib.import_module(module)
                except ImportError:  # pyspark.sql.classic is 4.x only
                    pass
        for module, name, methods in _COLLECTING:
            cls: Any = getattr(sys.modules.get(module), name, None)
            if cls is None or any(cls is done for done, _, _ in self._patched):
                continue
            for method in methods:
                original = cls.__dict__.get(method)
                if original is not None:
                    setattr(cls, method, self._recorded(original))
                    self._patched.append((cls, method, original))
        return self

    def __exit__(self, *exc: object) -> None:
        for cls, method, original in reversed(self._patched):
            setattr(cls, method, original)

    def _recorded(self, original: Any) -> Any:
        def rows_of(df: Any, *args: Any, **kwargs: Any) -> Any:
            rows = original(df, *args, **kwargs)
            self.results.append(list(rows))
            return rows

        return rows_of


def compare(as_written: list[list[Any]], perturbed: list[list[Any]]) -> tuple[str, int] | None:
    """(REORDERED, i) when the perturbed run's collects returned the rows of the run as written,
    the i-th (1-based) in another order; (CHANGED, i) when its i-th returned other rows; None when
    the collects cannot tell (none, more than as written, or all identical). A failing run stops
    at its assertion, so it is compared with the same number of collects as written."""
    if not perturbed or len(perturbed) > len(as_written):
        return None
    reordered = None
    for index, (before, after) in enumerate(zip(as_written, perturbed), start=1):
        if before == after:
            continue
        if sorted(map(repr, before)) != sorted(map(repr, after)):
            return CHANGED, index
        reordered = reordered or index
    return None if reordered is None else (REORDERED, reordered)


def explain(verdict: tuple[str, int] | None, unperturbed: bool = False) -> str | None:
    """The diagnosis line a report gives for `compare`'s verdict (`unperturbed`: against the first
    run as written, by a run with no perturbation)."""
    if verdict is None:
        return None
    kind, index = verdict
    if unperturbed:
        return (
            f"the job is nondeterministic: run again with no perturbation at all, the test failed too, and "
            f"collect() #{index} returned rows the first run as written did not return."
        )
    if kind == REORDERED:
        return (
            f"the test, not the job, depends on row order: every collect() returned the rows of the run as "
            f"written, collect() #{index} in another order, and the test compares them in order. Sort in the "
            f"test (`sorted(df.collect())`, or `orderBy` before `collect`) or compare ignoring row order "
            f"(chispa's `ignore_row_order=True`; `assertDataFrameEqual` ignores it unless `checkRowOrder=True`)."
        )
    return (
        f"the job's output changed: collect() #{index} returned rows the run as written did not return "
        f"(not only another order), so the job, not the test, depends on order, partitioning or timing."
    )
