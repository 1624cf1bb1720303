"""The salt is a function of the order (its id), so a recomputed map task sends every order to the
reducer it went to the first time: a lost executor cannot move orders."""

from pyspark.sql import functions as F

STREAMING = True
SALTS = 4
INPUTS = {
    "orders": ([(i, i % 5) for i in range(400)], "order_id int, shop int"),
    "shops": ([(shop, f"region-{shop % 2}") for shop in range(5)], "shop int, region string"),
}


def job(orders, shops):
    salted = orders.withColumn("salt", F.col("order_id") % SALTS)
    copies = shops.withColumn("salt", F.explode(F.sequence(F.lit(0), F.lit(SALTS - 1))))
    return salted.join(copies, ["shop", "salt"]).select("order_id", "shop", "region")
