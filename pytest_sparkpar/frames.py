"""A job's frames in and out, shared by the local runner and the Spark Connect streaming path:
calling the job, collecting its rows, and the schema streaming inputs are written and read with."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

# Columns tagging each row with its target partition and position where Spark has no RDDs.
PART, POS = "__sparkpar_part", "__sparkpar_pos"


def call_job(job: Callable[..., Any], frames: dict[str, Any]) -> Any:
    __tracebackhide__ = True
    params: Mapping[str, inspect.Parameter]
    try:
        params = inspect.signature(job).parameters
    except (TypeError, ValueError):
        params = {}
    if frames.keys() <= params.keys():
        return job(**frames)
    return job(*frames.values())


def to_rows(frame: Any) -> list[tuple[Any, ...]]:
    from pytest_sparkpar.orders import plain

    return [plain(tuple(r)) for r in frame.collect()]


def _file_schema(schema: Any) -> Any:
    """The schema the input files are written with: Parquet has no void type, so an all-null
    (NullType) column is stored as a string column of nulls and turned back on read."""
    from pyspark.sql.types import NullType, StringType, StructField, StructType

    return StructType(
        [StructField(f.name, StringType(), True) if isinstance(f.dataType, NullType) else f for f in schema.fields]
    )


def _as_read(frame: Any, schema: Any) -> Any:
    """The stream with its all-null columns back to NullType (see `_file_schema`)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import NullType

    voids = [f.name for f in schema.fields if isinstance(f.dataType, NullType)]
    if not voids:
        return frame
    return frame.select(*[F.lit(None).alias(f.name) if f.name in voids else frame[f.name] for f in schema.fields])
