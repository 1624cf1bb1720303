"""Batch union of two inputs, distinct users per ad."""

from pyspark.sql import functions as F


def job(spark, data):
    events = spark.read.parquet(data["events"]).select("ad", "user")
    clicks = spark.read.parquet(data["clicks"]).select("ad", "user")
    both = events.unionByName(clicks)
    return both.groupBy("ad").agg(F.countDistinct("user").alias("users"))
