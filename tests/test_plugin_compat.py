"""pytest_sparkpar.compat on the installed PySpark (3.5 in the .ci/spark35 lane, 4.x otherwise):
each helper gives the same answer on both, or says clearly what needs a newer Spark."""

from __future__ import annotations

import datetime

import pytest

from pytest_sparkpar import compat

pytestmark = pytest.mark.spark


def test_sql_confs_has_what_the_session_set(spark):
    session = spark.newSession()
    session.conf.set("spark.sql.shuffle.partitions", "7")
    confs = compat.sql_confs(session)
    assert confs["spark.sql.shuffle.partitions"] == "7"
    assert compat.sql_confs(spark.newSession()).get("spark.sql.shuffle.partitions") != "7"


def test_classic_dataframe_wraps_a_jvm_frame(spark):
    frame = spark.range(3)
    again = compat.classic_dataframe(frame._jdf, spark)
    assert [row.id for row in again.collect()] == [0, 1, 2]


def test_arrow_schema_writes_timestamps_as_utc_microseconds(spark):
    import pyarrow as pa
    from pyspark.sql.types import IntegerType, StructField, StructType, TimestampType

    schema = compat.arrow_schema_utc(StructType([StructField("t", TimestampType()), StructField("n", IntegerType())]))
    assert schema.field("t").type == pa.timestamp("us", tz="UTC")
    stamp = datetime.datetime(2024, 3, 10, 9, 30, tzinfo=datetime.UTC)
    assert pa.Table.from_pylist([{"t": stamp, "n": 1}], schema=schema).column("t")[0].as_py() == stamp


def test_placement_by_id_or_a_clear_word_on_older_spark(spark):
    from pyspark.sql import functions as F

    frame = spark.createDataFrame([(10, 1, 1), (11, 0, 0), (12, 1, 0)], "v int, part int, pos int")
    if compat.spark_major_minor() < (4, 1):
        with pytest.raises(compat.SparkTooOld, match=r"needs PySpark 4\.1 or newer \(DataFrame\.repartitionById\)"):
            compat.placed_by_id(frame, 2, "part", "pos")
        return
    placed = compat.placed_by_id(frame, 2, "part", "pos").select("v", F.spark_partition_id().alias("p"))
    assert [tuple(row) for row in placed.collect()] == [(11, 0), (12, 1), (10, 1)]


def test_row_converter_passes_null_arrays_and_maps_through(spark):
    from pyspark.sql.types import ArrayType, IntegerType, MapType, StringType, StructField, StructType

    inner = StructType([StructField("a", IntegerType())])
    schema = StructType(
        [StructField("xs", ArrayType(inner)), StructField("m", MapType(StringType(), inner)), StructField("s", inner)]
    )
    convert = compat.row_converter(schema)
    assert convert((None, None, None)) == (None, None, None)
    assert convert(([{"a": 1}], {"k": {"a": 2}}, {"a": 3})) == ([(1,)], {"k": (2,)}, (3,))
