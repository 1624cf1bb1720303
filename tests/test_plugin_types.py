"""Inputs as users have them: timestamp, date, decimal, nested and null columns, in every input
form (rows, DDL schema, DataFrame, hypothesis strategy), through batch and streaming checks on
real Spark. The checks run with determinism on, so every permuted run writes and reads the
input too (for streaming: Parquet files per micro-batch, the path that once crashed on TIMESTAMP).
"""

from __future__ import annotations

import datetime
import zoneinfo
from decimal import Decimal

import pytest

from pytest_sparkpar.api import Sparkpar
from pytest_sparkpar.check import Settings
from pytest_sparkpar.report import SparkparFailure

pytestmark = pytest.mark.spark

T0 = datetime.datetime(2024, 3, 10, 9, 30, 5, 250000)

# name -> (DDL of the value column, four values, None included where the type allows it)
TYPES = {
    "timestamp": (
        "timestamp",
        [T0, T0 + datetime.timedelta(hours=20), None, datetime.datetime(1999, 12, 31, 23, 59, 59)],
    ),
    "timestamp_ntz": ("timestamp_ntz", [T0, None, datetime.datetime(2030, 1, 1), T0 + datetime.timedelta(days=1)]),
    "date": ("date", [datetime.date(2024, 2, 29), None, datetime.date(1970, 1, 1), datetime.date(2100, 12, 31)]),
    "decimal": ("decimal(12,3)", [Decimal("1.250"), Decimal("-99999.999"), None, Decimal("0.000")]),
    "struct": ("struct<a:int,b:string,t:timestamp>", [(1, "x", T0), None, (2, None, None), (3, "z", T0)]),
    "array": (
        "array<struct<a:int,d:date>>",
        [[(1, datetime.date(2024, 1, 1))], [], None, [(2, None), (3, datetime.date(2000, 5, 6))]],
    ),
    "map": ("map<string,array<int>>", [{"a": [1, 2]}, {}, None, {"b": None, "c": [3]}]),
    "null": ("void", [None, None, None, None]),
}


def make_sparkpar(spark, nodeid: str, runs: int = 3) -> Sparkpar:
    settings = Settings(
        determinism=True, runs=runs, seed=7, master="local[2]", nodeid=nodeid, replay="pytest ...", shrink_seconds=0
    )
    return Sparkpar(settings, lambda: spark)


@pytest.fixture
def sparkpar_on(spark, request):
    """`sparkpar` with determinism on, over the plugin's own `spark` fixture session."""
    return make_sparkpar(spark, request.node.nodeid)


def identity(df):
    return df


def rows_of(name: str) -> list[tuple]:
    return [(k, value) for k, value in enumerate(TYPES[name][1])]


def as_plain(rows) -> list:
    from pytest_sparkpar.orders import plain

    return sorted((plain(tuple(r)) for r in rows), key=repr)


@pytest.mark.parametrize("streaming", [False, True], ids=["batch", "streaming"])
@pytest.mark.parametrize("name", list(TYPES))
def test_each_type_round_trips_with_a_ddl_schema(sparkpar_on, name, streaming):
    ddl = f"k int, v {TYPES[name][0]}"
    out = sparkpar_on.check(identity, {"df": rows_of(name)}, schema=ddl, streaming=streaming)
    assert as_plain(out) == as_plain(rows_of(name))


@pytest.mark.parametrize("streaming", [False, True], ids=["batch", "streaming"])
def test_rows_with_datetime_values_and_no_schema(sparkpar_on, streaming):
    # Schema inferred by Spark: datetime -> timestamp, date -> date, Decimal -> decimal, dict ->
    # map, list -> array; the all-None column becomes void instead of an error.
    rows = [
        {
            "k": 1,
            "ts": T0,
            "d": datetime.date(2024, 1, 2),
            "amount": Decimal("2.50"),
            "tags": ["a"],
            "attrs": {"x": 1},
            "nothing": None,
        },
        {
            "k": 2,
            "ts": T0 + datetime.timedelta(minutes=7),
            "d": None,
            "amount": None,
            "tags": [],
            "attrs": {},
            "nothing": None,
        },
    ]
    out = sparkpar_on.check(identity, {"df": rows}, streaming=streaming)
    assert {r.k: r.ts for r in out} == {1: T0, 2: T0 + datetime.timedelta(minutes=7)}
    assert next(r for r in out if r.k == 1).asDict() == {
        "k": 1,
        "ts": T0,
        "d": datetime.date(2024, 1, 2),
        "amount": Decimal("2.50"),
        "tags": ["a"],
        "attrs": {"x": 1},
        "nothing": None,
    }


@pytest.mark.parametrize("streaming", [False, True], ids=["batch", "streaming"])
def test_dataframe_input_with_every_type(spark, sparkpar_on, streaming):
    ddl = "k int, " + ", ".join(f"{name} {ddl}" for name, (ddl, _) in TYPES.items())
    rows = [(k, *(values[k] for _, values in TYPES.values())) for k in range(4)]
    frame = spark.createDataFrame(rows, ddl)
    out = sparkpar_on.check(identity, {"df": frame}, streaming=streaming)
    assert as_plain(out) == as_plain(frame.collect())


@pytest.mark.parametrize("streaming", [False, True], ids=["batch", "streaming"])
def test_hypothesis_strategy_with_timestamps_decimals_and_nesting(sparkpar_on, streaming):
    from hypothesis import strategies as st

    row = st.tuples(
        st.integers(0, 3),
        st.datetimes(datetime.datetime(2000, 1, 1), datetime.datetime(2030, 1, 1)),
        st.one_of(st.none(), st.dates(datetime.date(1990, 1, 1), datetime.date(2040, 1, 1))),
        st.decimals(-1000, 1000, places=2),
        st.one_of(st.none(), st.tuples(st.integers(-5, 5), st.lists(st.integers(0, 9), max_size=3))),
        st.dictionaries(st.sampled_from("abc"), st.integers(0, 9), max_size=2),
        st.none(),
    )
    ddl = "k int, ts timestamp, d date, amount decimal(10,2), s struct<a:int,xs:array<int>>, m map<string,int>, n void"
    sparkpar_on.check(identity, {"df": st.lists(row, min_size=1, max_size=8)}, schema=ddl, streaming=streaming)


def test_event_time_watermark_over_timestamps(sparkpar_on):
    # The use the issue names: an event-time watermark over a TIMESTAMP column, ten-minute
    # windows counted in append mode.
    from pyspark.sql import functions as F

    from pytest_sparkpar.orders import sequence

    def per_window(events):
        counts = events.withWatermark("ts", "10 minutes").groupBy(F.window("ts", "10 minutes")).count()
        return counts.select(F.col("window.start").alias("start"), "count")

    rows = [(i % 3, T0 + datetime.timedelta(minutes=3 * i)) for i in range(24)]
    # Events that arrive in time order are never late: the same windows whatever the split...
    out = sparkpar_on.check(
        per_window, {"events": rows}, input_order=sequence(), schema="k int, ts timestamp", streaming=True
    )
    assert [r["count"] for r in sorted(out)] == [4, 3, 3, 4, 3] and all(
        isinstance(r.start, datetime.datetime) for r in out
    )
    # ...while out-of-order arrival drops rows behind the watermark: a real difference, reported.
    with pytest.raises(SparkparFailure, match="micro-batch"):
        sparkpar_on.check(per_window, {"events": rows}, schema="k int, ts timestamp", streaming=True)


def test_order_bug_over_timestamps_is_still_found(spark):
    # Streaming dropDuplicates keeps whichever row of a key comes first: the kept time depends
    # on the micro-batch split, and a TIMESTAMP input must not stop sparkpar from showing it.
    rows = [(i % 4, T0 + datetime.timedelta(seconds=i)) for i in range(40)]
    checker = make_sparkpar(spark, "types::bad", runs=8)
    with pytest.raises(SparkparFailure, match="micro-batch"):
        checker.check(
            lambda events: events.dropDuplicates(["k"]), {"events": rows}, schema="k int, ts timestamp", streaming=True
        )


@pytest.fixture
def los_angeles(spark):
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    yield
    spark.conf.set("spark.sql.session.timeZone", before)


@pytest.mark.parametrize("streaming", [False, True], ids=["batch", "streaming"])
def test_session_time_zone_is_respected(spark, sparkpar_on, los_angeles, streaming):
    # hour(), date_format() and string -> timestamp casts follow the session time zone the test
    # set; the check must give what the same job gives on that session directly.
    from pyspark.sql import functions as F

    def local_fields(df):
        return df.select(
            "k",
            F.hour("ts").alias("h"),
            F.date_format("ts", "yyyy-MM-dd HH:mm").alias("shown"),
            F.to_date("ts").alias("day"),
            F.col("text").cast("timestamp").alias("parsed"),
        )

    rows = [(k, T0 + datetime.timedelta(hours=7 * k), f"2024-06-0{k + 1} 01:00:00") for k in range(4)]
    ddl = "k int, ts timestamp, text string"
    direct = local_fields(spark.createDataFrame(rows, ddl)).collect()
    out = sparkpar_on.check(local_fields, {"df": rows}, schema=ddl, streaming=streaming)
    assert as_plain(out) == as_plain(direct)
    # ...and that is the Los Angeles hour, not the UTC one the permuted sessions started with.
    pacific = T0.astimezone().astimezone(zoneinfo.ZoneInfo("America/Los_Angeles"))
    assert min(out).h == pacific.hour and min(out).h != T0.astimezone(datetime.UTC).hour
