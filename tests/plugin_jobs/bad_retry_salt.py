"""Salting a skewed key with a random number: every interleaving gives the same totals (the salts
are summed away), but when an executor is lost Spark recomputes its map outputs and the rows
draw new salts, so reducers that finished before the loss and reducers that run after it see some
rows twice and others not at all. Only --sparkpar-faults catches it."""

import random

INPUTS = {"sales": ([(i % 20, i) for i in range(2000)], "shop int, amount int")}
SALTS = 8
FAULTS_ONLY = True  # plain permuted runs cannot show it (bench/plugin_speed.py skips it)


def job(sales):
    salted = sales.rdd.map(lambda row: ((row.shop, random.randrange(SALTS)), (row.amount, 1)))
    per_salt = salted.reduceByKey(lambda a, b: (a[0] + b[0], a[1] + b[1]), 6)
    per_shop = per_salt.map(lambda kv: (kv[0][0], kv[1])).reduceByKey(lambda a, b: (a[0] + b[0], a[1] + b[1]), 6)
    return per_shop.map(lambda kv: (kv[0], kv[1][0], kv[1][1])).toDF("shop int, total long, rows long")
