"""A permuted batch run reads its input exactly as the interleaving places it: each row in its
partition, in its arrival order, empty partitions included, on real Spark."""

from __future__ import annotations

import datetime
import random

import pytest

from pytest_sparkpar import interleaving as il
from pytest_sparkpar.check import normalise
from pytest_sparkpar.orders import bag
from pytest_sparkpar.runner import SessionPool, run_batch

pytestmark = pytest.mark.spark

T0 = datetime.datetime(2024, 3, 10, 9, 30, 5)


def where_rows_are(frame):
    from pyspark.sql import functions as F

    # collect keeps partitions in order and each partition's rows in the order they were read
    return frame.select("id", F.spark_partition_id().alias("part"))


def expected(data, placement) -> list[tuple]:
    return [
        (data.rows[i][0], part)
        for part in range(placement.partitions)
        for j, i in enumerate(placement.order)
        if placement.partition_of[j] == part
    ]


def test_rows_land_in_their_partition_in_their_order(spark):
    rows = [(i, T0 + datetime.timedelta(minutes=i), [i, None]) for i in range(23)]
    data = normalise(spark, (rows, "id int, t timestamp, a array<int>"), None)
    pool = SessionPool(spark)
    rng = random.Random(3)
    for _ in range(5):
        variant = il.draw(il.RandomChooser(rng), {"df": (data.rows, data.columns, bag())}, False)
        out = run_batch(pool, where_rows_are, {"df": data}, variant)
        assert out.rows == expected(data, variant.placements["df"])


def test_empty_partitions_stay_empty_and_values_round_trip(spark):
    data = normalise(
        spark,
        ([(1, T0, {"k": [1]}), (2, None, None), (3, T0, {})], "id int, t timestamp, m map<string,array<int>>"),
        None,
    )
    placement = il.Placement(order=(2, 0, 1), partitions=5, partition_of=(4, 4, 1), batch_of=(0, 0, 0))
    variant = il.Interleaving({"df": placement}, shuffle_partitions=3, adaptive=False)
    pool = SessionPool(spark)
    assert run_batch(pool, where_rows_are, {"df": data}, variant).rows == [(2, 1), (3, 4), (1, 4)]
    out = run_batch(pool, lambda df: df, {"df": data}, variant)
    assert out.rows == [data.rows[1], data.rows[2], data.rows[0]]


def test_a_thread_keeps_its_session_and_each_run_gets_its_confs(spark):
    data = normalise(spark, ([(1,), (2,)], "id int"), None)
    pool = SessionPool(spark)
    seen = []

    def job(df):
        seen.append((df.sparkSession, df.sparkSession.conf.get("spark.sql.shuffle.partitions")))
        return df

    for partitions in (3, 5):
        variant = il.Interleaving({"df": il.Placement((0, 1), 1, (0, 0), (0, 0))}, partitions, False)
        run_batch(pool, job, {"df": data}, variant)
    assert [conf for _, conf in seen] == ["3", "5"]
    assert seen[0][0] is seen[1][0]
