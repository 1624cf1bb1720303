"""The earliest event of each key, as a complete-mode aggregate: the same under any batching."""

from pyspark.sql import functions as F

from pytest_sparkpar.orders import bag

INPUTS = {"events": ([(i % 6, i, (i * 13) % 29) for i in range(60)], "k int, ts int, v int")}
STREAMING = True
OUTPUT_MODE = "complete"
OUTPUT = bag()


def job(events):
    return events.groupBy("k").agg(F.min("ts").alias("ts"), F.min_by("v", "ts").alias("v"))
