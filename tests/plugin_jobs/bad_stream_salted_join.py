"""A skew join salted with a random number, on two streams: each order draws one of SALTS salts and
each shop row is copied once per salt, so every order meets its shop exactly once whatever the
micro-batches and partitions (plain permuted runs agree). When an executor is lost mid-batch, Spark
recomputes its map outputs and the orders draw new salts: reducers that finished before the loss
and those that run after it see some orders twice and others never. Only --sparkpar-faults
catches it."""

import random

from pyspark.sql import functions as F

STREAMING = True
FAULTS_ONLY = True  # plain permuted runs cannot show it (bench/plugin_speed.py skips it)
SALTS = 4
INPUTS = {
    "orders": ([(i, i % 5) for i in range(400)], "order_id int, shop int"),
    "shops": ([(shop, f"region-{shop % 2}") for shop in range(5)], "shop int, region string"),
}


def job(orders, shops):
    salt = F.udf(lambda order_id: random.randrange(SALTS), "int")
    salted = orders.withColumn("salt", salt("order_id"))
    copies = shops.withColumn("salt", F.explode(F.sequence(F.lit(0), F.lit(SALTS - 1))))
    return salted.join(copies, ["shop", "salt"]).select("order_id", "shop", "region")
