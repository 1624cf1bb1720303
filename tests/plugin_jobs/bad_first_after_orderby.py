"""SPX101: the orderBy does not survive groupBy's shuffle, so first() picks an arbitrary row."""

from pyspark.sql import functions as F

from tests.plugin_jobs._data import READINGS_SCHEMA, readings

INPUTS = {"df": (readings(), READINGS_SCHEMA)}


def job(df):
    return df.orderBy("ts").groupBy("k").agg(F.first("v").alias("v"))
