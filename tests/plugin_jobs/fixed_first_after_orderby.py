"""The value at the earliest timestamp of each key, whatever order the rows arrive in."""

from pyspark.sql import functions as F

from tests.plugin_jobs._data import READINGS_SCHEMA, readings

INPUTS = {"df": (readings(), READINGS_SCHEMA)}


def job(df):
    return df.groupBy("k").agg(F.min_by("v", "ts").alias("v"))
