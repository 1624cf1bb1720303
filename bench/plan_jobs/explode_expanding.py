"""Batch chain with an expanding operator: every event becomes three tagged rows, counted per tag and ad."""

from pyspark.sql import functions as F


def job(spark, data):
    events = spark.read.parquet(data["events"])
    tagged = events.withColumn("tag", F.explode(F.array(F.lit("a"), F.lit("b"), (F.col("user") % 7).cast("string"))))
    return tagged.groupBy("tag", "ad").agg(F.count("*").alias("n"), F.max("value").alias("top"))
