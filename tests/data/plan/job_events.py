from pyspark.sql import functions as F


def job(spark):
    raw = spark.read.json("events.json")
    parsed = raw.withColumn("amount", F.col("amount").cast("double"))
    kept = parsed.filter(F.col("amount") > 0)
    totals = kept.groupBy("user").agg(F.sum("amount").alias("total"))
    totals.write.parquet("out")
