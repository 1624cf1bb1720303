"""The PySpark 3.5 / 4.x differences the plugin meets, in one place.

The plugin runs on PySpark 3.5 and 4.x. Each helper here takes the 4.x API when it exists and the
3.5 one otherwise; nothing else in the plugin asks which version it runs on.
"""

from __future__ import annotations

from typing import Any


def spark_major_minor() -> tuple[int, int]:
    """The installed PySpark's (major, minor), e.g. (3, 5), read without importing it."""
    from importlib.metadata import version

    major, minor = version("pyspark").split(".")[:2]
    return int(major), int(minor)


def sql_confs(spark: Any) -> dict[str, str]:
    """Every conf set in `spark`'s session, as `RuntimeConfig.getAll` gives it (4.0+); 3.5 has no
    such property, so its JVM session's map is read instead."""
    conf = spark.conf
    if hasattr(type(conf), "getAll"):
        return dict(conf.getAll)
    jvm = spark.sparkContext._jvm
    entries = jvm.scala.collection.JavaConverters.mapAsJavaMapConverter(spark._jsparkSession.conf().getAll()).asJava()
    return {str(key): str(value) for key, value in entries.items()}


def classic_dataframe(jdf: Any, session: Any) -> Any:
    """A Python DataFrame over the JVM DataFrame `jdf`: 4.x moved the non-Connect class to
    pyspark.sql.classic."""
    import importlib

    try:
        module = importlib.import_module("pyspark.sql.classic.dataframe")
    except ImportError:  # PySpark 3.5
        module = importlib.import_module("pyspark.sql.dataframe")
    return module.DataFrame(jdf, session)


def arrow_schema_utc(schema: Any) -> Any:
    """The Arrow schema of a Spark schema, timestamps as UTC microseconds: 4.x takes the zone as an
    argument, 3.5 always writes UTC and takes none."""
    import inspect

    from pyspark.sql.pandas.types import to_arrow_schema

    if "timezone" in inspect.signature(to_arrow_schema).parameters:
        return to_arrow_schema(schema, timezone="UTC")
    return to_arrow_schema(schema)


class SparkTooOld(RuntimeError):
    """A plugin feature needs a newer PySpark than the one installed."""


def placed_by_id(frame: Any, partitions: int, part: str, pos: str) -> Any:
    """`frame`'s rows moved to the partition its `part` column names, in `pos` order: how Spark
    Connect runs get an exact placement (no RDDs there). `repartitionById` is Spark 4.1+."""
    from pyspark.sql import functions as F

    if not hasattr(frame, "repartitionById"):
        import pyspark

        raise SparkTooOld(
            f"sparkpar over Spark Connect (--sparkpar-master sc://...) needs PySpark 4.1 or newer "
            f"(DataFrame.repartitionById); this is PySpark {pyspark.__version__}. Use a local or "
            f"local-cluster master on PySpark 3.5."
        )
    return frame.repartitionById(partitions, F.col(part)).sortWithinPartitions(pos)


def row_converter(schema: Any) -> Any:
    """pyspark's converter of rows to plain tuples (`_create_converter`). PySpark 3.5's fails on a
    null array or map whose elements need converting (4.x passes the null through), so on 3.5 the
    same conversion is built here with that fix."""
    from pyspark.sql.types import _create_converter

    return _create_converter(schema) if spark_major_minor() >= (4, 0) else _null_safe_converter(schema)


def _null_safe_converter(data_type: Any) -> Any:
    from pyspark.sql.types import ArrayType, MapType, NullType, StructType, _need_converter

    if not _need_converter(data_type):
        return lambda value: value
    if isinstance(data_type, ArrayType):
        element = _null_safe_converter(data_type.elementType)
        return lambda value: None if value is None else [element(v) for v in value]
    if isinstance(data_type, MapType):
        key, item = _null_safe_converter(data_type.keyType), _null_safe_converter(data_type.valueType)
        return lambda value: None if value is None else {key(k): item(v) for k, v in value.items()}
    if isinstance(data_type, NullType):
        return lambda value: None
    if not isinstance(data_type, StructType):
        return lambda value: value
    names = [f.name for f in data_type.fields]
    fields = [_null_safe_converter(f.dataType) for f in data_type.fields]

    def struct(value: Any) -> tuple[Any, ...] | None:
        if value is None:
            return None
        if isinstance(value, tuple | list):
            return tuple(convert(v) for v, convert in zip(value, fields))
        found = value if isinstance(value, dict) else value.__dict__
        return tuple(convert(found.get(name)) for name, convert in zip(names, fields))

    return struct
