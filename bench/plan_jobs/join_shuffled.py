"""Batch join of two large inputs (both sides shuffled), then an aggregate per ad."""

from pyspark.sql import functions as F


def job(spark, data):
    events = spark.read.parquet(data["events"])
    clicks = spark.read.parquet(data["clicks"]).select("id", "cost")
    joined = events.join(clicks, "id")
    return joined.groupBy("ad").agg(F.sum("cost").alias("cost"), F.count("*").alias("clicks"))
