"""Keep the earliest row of each key, chosen by a total order."""

from pyspark.sql import Window
from pyspark.sql import functions as F

from tests.plugin_jobs._data import READINGS_SCHEMA, readings

INPUTS = {"df": (readings(), READINGS_SCHEMA)}


def job(df):
    earliest = Window.partitionBy("k").orderBy("ts", "v")
    return df.withColumn("rank", F.row_number().over(earliest)).where("rank = 1").drop("rank")
