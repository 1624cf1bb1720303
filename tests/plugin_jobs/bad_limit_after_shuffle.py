"""limit() after an aggregation keeps whichever groups the shuffle happens to emit first."""

from pyspark.sql import functions as F

from tests.plugin_jobs._data import READINGS_SCHEMA, readings

INPUTS = {"df": (readings(), READINGS_SCHEMA)}


def job(df):
    return df.groupBy("k").agg(F.sum("v").alias("total")).limit(3)
