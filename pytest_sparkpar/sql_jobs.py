"""SQL jobs for `sparkpar.check`: a query string, or a function of no arguments returning one.

Each input is registered as a temp view named after it, in the session the interleaving runs in,
and the query's DataFrame is the job's output. A DataFrame job always takes its inputs as
parameters, so a callable with none can only be a query factory.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any


def as_job(job: Any, input_names: Iterable[str]) -> Callable:
    """`job` itself, or a DataFrame job running the SQL `job` stands for."""
    if isinstance(job, str):
        return _sql_job(lambda: job, input_names, "sql_query")
    if callable(job) and _takes_no_arguments(job):
        return _sql_job(job, input_names, getattr(job, "__name__", "sql_query"))
    return job


def _takes_no_arguments(job: Callable) -> bool:
    try:
        return not inspect.signature(job).parameters
    except (TypeError, ValueError):
        return False


def _sql_job(query: Callable[[], str], input_names: Iterable[str], name: str) -> Callable:
    names = list(input_names)

    def job(*positional, **by_name):
        __tracebackhide__ = True
        frames = {**dict(zip(names, positional)), **by_name}
        for view, frame in frames.items():
            frame.createOrReplaceTempView(view)
        text = query()
        if not isinstance(text, str):
            raise TypeError(f"sparkpar: the SQL job {name} returned {type(text).__name__}, not a query string")
        return next(iter(frames.values())).sparkSession.sql(text)

    # call_job passes inputs by name when the parameters match them.
    job.__signature__ = inspect.Signature(  # type: ignore[attr-defined]  # inspect reads it; functions lack the attribute in typeshed
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names]
    )
    job.__name__ = job.__qualname__ = name
    return job
