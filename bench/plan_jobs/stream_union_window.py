"""Streaming micro-batches: two streams unioned, counted per user in 10-minute event-time windows."""

from pyspark.sql import functions as F

STREAMING = True


def job(spark, data):
    events = spark.readStream.schema(data["schema"]).option("maxFilesPerTrigger", 2).parquet(data["events"])
    more = spark.readStream.schema(data["schema"]).option("maxFilesPerTrigger", 2).parquet(data["events_copy"])
    both = events.unionByName(more).withWatermark("ts", "1 hour")
    return both.groupBy(F.window("ts", "10 minutes"), "user").count()
