"""The pulse runtime on real Structured Streaming: an order-dependent stateful function, wrapped by
`release_in_event_time_order`, gives the batch (sequential) answer whatever the micro-batch splits
and the arrival disorder; unwrapped, it does not.

The stream is a folder of JSON files read one file per micro-batch (`maxFilesPerTrigger=1`,
distinct modification times), each run with a fresh checkpoint and the `availableNow` trigger.
Rows arrive up to 8 minutes out of event-time order; the watermark delay is 10 minutes, so Spark
drops none as late. Two closing files far in the future move the watermark past every reading.
"""

from __future__ import annotations

import json
import math
import os
import random
import sys
from datetime import datetime, timedelta

import pytest

pyspark = pytest.importorskip("pyspark")
pd = pytest.importorskip("pandas")

from sparkpar_lint.runtime.pulses import (  # noqa: E402
    PULSE_STATE_SCHEMA,
    PULSE_TIMEOUT,
    release_in_event_time_order,
)

START = datetime(2026, 11, 23, 8, 0)
READINGS = 36
DEVICES = 3
MAX_DISORDER_MINUTES = 8
OUTPUT_SCHEMA = "device string, ts timestamp, temp double, gap_s double"
FLUSH_DEVICE = "zz-flush"


def fill_and_gap(key, frames, state):
    """Per device, in the order rows come: carry the last temperature over gaps, and the seconds
    since the previous reading. Order-dependent: it is only right in event-time order."""
    last_ns, last_temp = state.get if state.exists else (None, None)
    out = []
    for frame in frames:
        for row in frame.itertuples(index=False):
            temp = last_temp if row.temp is None or math.isnan(row.temp) else row.temp
            gap = None if last_ns is None else (row.ts.value - last_ns) / 1e9
            out.append((row.device, row.ts, temp, gap))
            last_ns, last_temp = row.ts.value, temp
    if last_ns is not None:
        state.update((last_ns, last_temp))
    yield pd.DataFrame(out, columns=["device", "ts", "temp", "gap_s"])


class _BatchState:
    exists = False
    get = None

    def update(self, value):
        self.exists, self.get = True, tuple(value)


def _readings() -> list[dict]:
    return [
        {
            "device": f"d{i % DEVICES}",
            "ts": START + timedelta(minutes=i),
            "temp": None if i % 4 == 3 else float((i * 37) % 23),
        }
        for i in range(READINGS)
    ]


def _arrival(seed: int) -> list[dict]:
    """The readings in arrival order: each up to MAX_DISORDER_MINUTES late."""
    rng = random.Random(seed)
    rows = _readings()
    lateness = [rng.uniform(0, MAX_DISORDER_MINUTES) for _ in rows]
    return [row for _, row in sorted(zip([i + d for i, d in enumerate(lateness)], rows), key=lambda p: p[0])]


def _batch_answer() -> list[tuple]:
    """The sequential semantics: each device's rows in event-time order, one call."""
    frame = pd.DataFrame(_readings())
    frame["ts"] = pd.to_datetime(frame["ts"])
    frame["temp"] = frame["temp"].astype("float64")
    out = []
    for device, rows in frame.groupby("device"):
        rows = rows.sort_values("ts", ignore_index=True)
        for result in fill_and_gap((device,), iter([rows]), _BatchState()):
            out.extend(_plain(r) for r in result.itertuples(index=False))
    return sorted(out)


def _plain(row) -> tuple:
    device, ts, temp, gap = row
    ts = ts.to_pydatetime() if hasattr(ts, "to_pydatetime") else ts

    def number(x):
        return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), 6)

    return (device, ts.isoformat(), number(temp), number(gap))


def _write_stream(folder, arrival: list[dict], sizes: list[int]) -> None:
    """One JSON file per micro-batch, with increasing modification times; then two flush files."""
    chunks, start = [], 0
    for size in sizes:
        chunks.append(arrival[start : start + size])
        start += size
    assert start == len(arrival)
    far = START + timedelta(days=1)
    chunks += [
        [{"device": FLUSH_DEVICE, "ts": far, "temp": 0.0}],
        [{"device": FLUSH_DEVICE, "ts": far + timedelta(days=1), "temp": 0.0}],
    ]
    os.makedirs(folder)
    for index, chunk in enumerate(chunks):
        path = os.path.join(folder, f"part-{index:03d}.json")
        with open(path, "w") as handle:
            for row in chunk:
                handle.write(json.dumps({**row, "ts": row["ts"].isoformat()}) + "\n")
        os.utime(path, (1_700_000_000 + index * 10, 1_700_000_000 + index * 10))


@pytest.fixture(scope="module")
def stream_spark(cluster_spark):
    """The worker's one session (tests/conftest.py), set for these streams and set back after.
    A session of its own would outlive its stop: PySpark keeps the driver JVM, and the session
    started after it would run in a JVM without its tuning."""
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    settings = {"spark.sql.shuffle.partitions": "2", "spark.sql.session.timeZone": "UTC"}
    before = {key: cluster_spark.conf.get(key) for key in settings}
    for key, value in settings.items():
        cluster_spark.conf.set(key, value)
    yield cluster_spark
    for key, value in before.items():
        cluster_spark.conf.set(key, value)


def _run(spark, tmp_path, name: str, arrival: list[dict], sizes: list[int], wrapped: bool) -> list[tuple]:
    folder = tmp_path / f"{name}-input"
    _write_stream(str(folder), arrival, sizes)
    stream = (
        spark.readStream.schema("device string, ts timestamp, temp double")
        .option("maxFilesPerTrigger", 1)
        .json(str(folder))
        .withWatermark("ts", "10 minutes")
        .groupBy("device")
    )
    if wrapped:
        result = stream.applyInPandasWithState(
            release_in_event_time_order(fill_and_gap, "ts"), OUTPUT_SCHEMA, PULSE_STATE_SCHEMA, "Append", PULSE_TIMEOUT
        )
    else:
        result = stream.applyInPandasWithState(
            fill_and_gap, OUTPUT_SCHEMA, "last_ns long, last_temp double", "Append", "NoTimeout"
        )
    query = (
        result.writeStream.format("memory")
        .queryName(name)
        .outputMode("append")
        .option("checkpointLocation", str(tmp_path / f"{name}-checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    rows = [r for r in spark.table(name).collect() if r.device != FLUSH_DEVICE]
    return sorted(_plain(tuple(r)) for r in rows)


# (arrival seed, file sizes): one micro-batch, even splits, ragged splits, another disorder.
SPLITS = [(1, [READINGS]), (1, [6] * 6), (1, [1, 11, 2, 9, 13]), (2, [5, 7, 4, 8, 12])]


@pytest.mark.spark
def test_pulses_give_the_batch_answer_under_every_split(stream_spark, tmp_path):
    expected = _batch_answer()
    assert len(expected) == READINGS
    wrapped = {
        (seed, tuple(sizes)): _run(stream_spark, tmp_path, f"wrapped_{n}", _arrival(seed), sizes, wrapped=True)
        for n, (seed, sizes) in enumerate(SPLITS)
    }
    assert all(out == expected for out in wrapped.values())
    # The bug the wrapper fixes: without it, the answer depends on the split and disorder. One
    # split that shows it is enough; each further one is another streaming query.
    for n, (seed, sizes) in enumerate(SPLITS):
        unwrapped = _run(stream_spark, tmp_path, f"unwrapped_{n}", _arrival(seed), sizes, wrapped=False)
        if unwrapped != expected:
            wrong = sum(a != b for a, b in zip(unwrapped, expected))
            print(f"\nunwrapped, split {sizes}: {wrong} of {len(expected)} rows differ from the batch answer")
            break
    else:
        pytest.fail("without the wrapper every split gave the batch answer")


class _FakeGroupState:
    """Just enough of Spark's GroupState to drive the wrapper without Spark."""

    def __init__(self) -> None:
        self.value, self.watermark, self.timeout = None, 0, None

    exists = property(lambda self: self.value is not None)
    get = property(lambda self: self.value)

    def update(self, value):
        self.value = tuple(value)

    def remove(self):
        self.value = None

    def getCurrentWatermarkMs(self):
        return self.watermark

    def setTimeoutTimestamp(self, millis):
        self.timeout = millis


def test_rows_wait_for_the_watermark_and_come_out_in_event_time_order():
    state = _FakeGroupState()
    released = release_in_event_time_order(fill_and_gap, "ts")
    frame = pd.DataFrame(_readings())
    frame["ts"] = pd.to_datetime(frame["ts"])
    frame["temp"] = frame["temp"].astype("float64")
    arrival = frame.sample(frac=1.0, random_state=3).reset_index(drop=True)
    out = []
    for start in range(0, len(arrival), 7):
        chunk = arrival.iloc[start : start + 7]
        out += [r for f in released(("all",), iter([chunk]), state) for r in f.itertuples(index=False)]
        # The watermark moves only forward, never past a row that has not arrived yet.
        later = arrival["ts"].iloc[start + 7 :]
        if len(later):
            state.watermark = max(state.watermark, int(later.min().value // 1_000_000) - 1)
    assert state.timeout is not None  # something is still waiting for a pulse
    state.watermark = 10**15
    out += [r for f in released(("all",), iter([]), state) for r in f.itertuples(index=False)]
    assert [r.ts for r in out] == sorted(frame["ts"])
    assert state.value is not None and _decode_inner(state) is not None


def _decode_inner(state):
    from sparkpar_lint.runtime.pulses import _decode

    return _decode(state.value[1])
