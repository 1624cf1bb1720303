"""Ids a job mints in Python, one per row, before `createDataFrame`: a loop counter over `range`
(as itself, `str(n)`, `n + 1`, one f-string around it) or a fresh `uuid4()` makes the column
unique by construction, so a deduplication on it (SPX102) or a window ordered by it (SPX104) has
no two rows to choose between. The near misses repeat an id (an outer loop, a second `append`, a
random pick, two loop values in one f-string) and are still reported at the same place."""

from __future__ import annotations

import textwrap

import pytest

from sparkpar_lint.analysis import analyze

LOOP = textwrap.dedent(
    """\
    import random
    from pyspark.sql import SparkSession, functions as F

    spark = SparkSession.builder.getOrCreate()
    rows = []
    {loop}
        rows.append(({key}, random.randint(1, 500), random.choice(["web", "shop"])))
    txns = spark.createDataFrame(rows, "txn_id STRING, customer INT, channel STRING")
    txns.dropDuplicates(["txn_id"]).write.mode("overwrite").parquet("bronze/txns")
    """
)
UNIQUE = {
    "f-string of the counter": {"loop": "for n in range(1, 300_001):", "key": 'f"TXN-{n:010d}"'},
    "counter as text": {"loop": "for n in range(5000):", "key": "str(n)"},
    "prefix plus counter": {"loop": "for n in range(5000):", "key": '"T" + str(n)'},
    "uuid in any loop": {"loop": "for _ in range(5000):", "key": "str(uuid.uuid4())"},
    "uuid hex": {"loop": "while len(rows) < 5000:", "key": "uuid.uuid4().hex"},
}
REPEATED = {
    "random pick": {"loop": "for n in range(5000):", "key": 'f"TXN-{random.randint(1, 900)}"'},
    "counter over a list": {"loop": "for n in [1, 2, 2]:", "key": "str(n)"},
    "counter in an outer loop": {"loop": "for day in range(3):\n  for n in range(50):", "key": "str(n)"},
    "two values in one f-string": {"loop": "for n in range(50):", "key": 'f"{n}{n % 7}"'},
    "counter bound again": {"loop": "for n in range(50):\n    n = random.randint(1, 9)", "key": "str(n)"},
}


def _found(source: str, rules=("SPX102", "SPX104")) -> list[tuple[str, int, int]]:
    findings = analyze("job.py", source)
    return sorted((f.rule_id, f.span.line, f.span.column) for f in findings if f.rule_id in rules)


def _loop(shape: dict[str, str]) -> str:
    source = LOOP.format(**shape)
    if "uuid." in shape["key"]:
        source = "import uuid\n" + source
    return source


@pytest.mark.parametrize("shape", UNIQUE.values(), ids=UNIQUE.keys())
def test_a_key_minted_per_loop_row_is_not_deduplicated_arbitrarily(shape):
    assert _found(_loop(shape)) == []


@pytest.mark.parametrize("shape", REPEATED.values(), ids=REPEATED.keys())
def test_a_key_the_loop_can_repeat_is_still_reported(shape):
    source = _loop(shape)
    line = source.splitlines().index('txns.dropDuplicates(["txn_id"]).write.mode("overwrite").parquet("bronze/txns")')
    assert _found(source) == [("SPX102", line + 1, 5)]


def test_a_second_append_to_the_rows_may_repeat_an_id():
    source = _loop(UNIQUE["counter as text"]).replace("txns = spark", 'rows.append(("0", 1, "web"))\ntxns = spark')
    assert _found(source) == [("SPX102", 10, 5)]


HELPER = textwrap.dedent(
    """\
    from pyspark.sql import SparkSession
    from pyspark.sql.types import IntegerType, StringType, StructField, StructType

    spark = SparkSession.builder.getOrCreate()
    schema = StructType([StructField("order_id", IntegerType()), StructField("status", StringType())])


    def make_orders(count, first):
        orders = []
        for order_id in range(first, first + count):
            order = {{"order_id": {order}, "status": "new"}}
            orders.append(order)
        return orders


    snapshot = spark.createDataFrame(make_orders(100, 1), schema=schema)
    snapshot.dropDuplicates(["order_id"]).write.mode("overwrite").saveAsTable("orders_snapshot")
    pairs = spark.createDataFrame([({key}, i % 3) for i in range(40)], ["customer", "tier"])
    pairs.dropDuplicates(["customer"]).write.mode("overwrite").saveAsTable("tiers")
    """
)


def test_rows_from_a_helper_or_a_comprehension_keep_their_minted_ids():
    assert _found(HELPER.format(order="order_id", key='f"c-{i}"')) == []


def test_a_helper_or_comprehension_that_repeats_the_id_is_still_reported():
    assert _found(HELPER.format(order="order_id // 2", key='f"c-{i % 5}"')) == [("SPX102", 17, 9), ("SPX102", 19, 6)]


GENERATOR = textwrap.dedent(
    """\
    import random
    import uuid
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.getOrCreate()


    def make_account():
        account_id = {account_id}
        tier = random.choice(["basic", "gold"])
        return {{"account_id": account_id, "tier": tier, "limit": random.randint(100, 900)}}


    accounts = spark.createDataFrame([make_account() for _ in range(20_000)])
    accounts.dropDuplicates(["account_id"]).write.mode("overwrite").saveAsTable("bronze.accounts")
    """
)


def test_a_uuid_drawn_by_a_row_making_helper_is_unique_per_row():
    assert _found(GENERATOR.format(account_id="str(uuid.uuid4())")) == []


def test_a_helper_that_draws_a_short_random_id_is_still_reported():
    assert _found(GENERATOR.format(account_id="random.randint(10**9, 10**10)")) == [("SPX102", 15, 9)]
