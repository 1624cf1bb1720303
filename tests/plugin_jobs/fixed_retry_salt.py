"""The salt is a function of the row (here its amount), so a recomputed map task sends every row
to the reducer it went to the first time: retries cannot move rows."""

INPUTS = {"sales": ([(i % 20, i) for i in range(2000)], "shop int, amount int")}
SALTS = 8


def job(sales):
    salted = sales.rdd.map(lambda row: ((row.shop, row.amount % SALTS), (row.amount, 1)))
    per_salt = salted.reduceByKey(lambda a, b: (a[0] + b[0], a[1] + b[1]), 6)
    per_shop = per_salt.map(lambda kv: (kv[0][0], kv[1])).reduceByKey(lambda a, b: (a[0] + b[0], a[1] + b[1]), 6)
    return per_shop.map(lambda kv: (kv[0], kv[1][0], kv[1][1])).toDF("shop int, total long, rows long")
