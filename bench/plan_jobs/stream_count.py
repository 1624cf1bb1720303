"""Streaming micro-batches: a running count per ad (stateful), two files per micro-batch."""

STREAMING = True


def job(spark, data):
    events = spark.readStream.schema(data["schema"]).option("maxFilesPerTrigger", 2).parquet(data["events"])
    return events.groupBy("ad").count()
