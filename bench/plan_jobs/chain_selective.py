"""Batch chain with a selective filter: read, keep about 10% of rows, derive, aggregate per user."""

from pyspark.sql import functions as F


def job(spark, data):
    events = spark.read.parquet(data["events"])
    kept = events.filter(F.col("value") > 90)
    scored = kept.withColumn("score", F.col("value") * 2 + F.col("ad"))
    return scored.groupBy("user").agg(F.sum("score").alias("score"), F.count("*").alias("n"))
