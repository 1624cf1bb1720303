"""Watermark pulses for an order-dependent stateful function (SPEC §3, `--unsafe-fixes`).

`applyInPandasWithState` hands each key's rows to the function in whatever order a micro-batch
holds them, and the micro-batch boundaries fall wherever the source happened to split the stream,
so a function that carries a value from one row to the next (a forward fill, a gap since the
previous reading) sees a different sequence on every run. This is the merger of the
auto-parallelizing paper with sequence numbers and pulses: the event time is the sequence number
and the watermark is the pulse. `release_in_event_time_order(func, "ts")` wraps the function so
that each key's rows are buffered in the group state and handed to `func` only once the watermark
has passed them, in event-time order (ties broken by the other columns), together with the rows
buffered earlier. Because Spark drops rows older than the watermark, no row can arrive after a
later one was released: every key's rows reach `func` in one event-time sequence, whatever the
micro-batch splits were, which is the sequential (batch) answer of a function that keeps what it
needs between calls in its state.

Use it in place of the function, with the state schema and timeout it needs:

    grouped.applyInPandasWithState(
        release_in_event_time_order(track, "ts"), output_schema,
        PULSE_STATE_SCHEMA, "Append", PULSE_TIMEOUT)

`func` keeps its own state through the usual `GroupState` methods (`exists`, `get`, `update`,
`remove`); its state is stored pickled inside the wrapper's, so its own state schema is not
needed. The wrapper owns the timeout: `func` cannot set one. Rows are released when the watermark
passes them, so output comes one watermark delay later than before; rows within the delay of the
newest event stay buffered until a later event moves the watermark past them.
"""

from __future__ import annotations

import base64
import pickle
from collections.abc import Callable, Iterator

PULSE_STATE_SCHEMA = "buffered string, inner string"
PULSE_TIMEOUT = "EventTimeTimeout"


def release_in_event_time_order(func: Callable, event_time: str, time_zone: str = "UTC") -> Callable:
    """`func(key, frames, state)` that sees each key's rows once, in event-time order.

    `time_zone` is the session time zone (`spark.sql.session.timeZone`): Spark hands timestamps
    to pandas as wall-clock values in it, and the watermark is in epoch milliseconds.
    """

    def released(key, frames: Iterator, state):
        import pandas as pd

        buffered, inner = _load(state)
        arrived = [frame for frame in frames if len(frame)]
        parts = ([buffered] if buffered is not None else []) + arrived
        pending = pd.concat(parts, ignore_index=True) if parts else None
        inner_state = _InnerState(inner, state)
        if pending is not None and len(pending):
            millis = _epoch_millis(pending[event_time], time_zone)
            passed = millis <= state.getCurrentWatermarkMs()
            ready = _in_event_time_order(pending[passed.to_numpy()], event_time)
            pending = pending[~passed.to_numpy()].reset_index(drop=True)
            if len(ready):
                yield from func(key, iter([ready]), inner_state)
            if len(pending):
                state.setTimeoutTimestamp(int(millis[~passed].min()))
        _save(state, pending if pending is not None and len(pending) else None, inner_state)

    released.__name__ = getattr(func, "__name__", "released")
    released.__wrapped__ = func  # type: ignore[attr-defined]  # as functools.wraps would
    return released


def _in_event_time_order(frame, event_time: str):
    """Sorted by the event time, then by every other column: rows tied on the event time get one
    order too (rows equal in every column are interchangeable)."""
    others = [c for c in frame.columns if c != event_time]
    return frame.sort_values([event_time, *others], kind="mergesort", ignore_index=True)


def _epoch_millis(times, time_zone: str):
    import pandas as pd

    times = pd.to_datetime(times)
    if times.dt.tz is None:
        times = times.dt.tz_localize(time_zone)
    utc = times.dt.tz_convert("UTC").dt.tz_localize(None).astype("datetime64[ns]")
    return utc.astype("int64") // 1_000_000


def _encode(value) -> str:
    return base64.b64encode(pickle.dumps(value)).decode("ascii")


def _decode(text: str | None):
    return None if text is None else pickle.loads(base64.b64decode(text))


def _load(state):
    if not state.exists:
        return None, None
    buffered, inner = state.get
    return _decode(buffered), _decode(inner)


def _save(state, pending, inner_state: _InnerState) -> None:
    if pending is None and inner_state.value is None:
        state.remove()
    else:
        state.update((_encode(pending) if pending is not None else None, _encode(inner_state.value)))


class _InnerState:
    """The `GroupState` the wrapped function sees: its own value, kept inside the wrapper's."""

    def __init__(self, value, outer) -> None:
        self.value = value
        self._outer = outer

    @property
    def exists(self) -> bool:
        return self.value is not None

    @property
    def get(self):
        if self.value is None:
            raise ValueError("State is either not defined or has already been removed")
        return self.value

    @property
    def getOption(self):
        return self.value

    @property
    def hasTimedOut(self) -> bool:
        return False  # the wrapper's timeouts are its pulses, not the function's

    def update(self, new_value) -> None:
        if new_value is None:
            raise ValueError("'None' is not a valid state value")
        self.value = tuple(new_value)

    def remove(self) -> None:
        self.value = None

    def getCurrentWatermarkMs(self) -> int:
        return self._outer.getCurrentWatermarkMs()

    def getCurrentProcessingTimeMs(self) -> int:
        return self._outer.getCurrentProcessingTimeMs()

    def setTimeoutDuration(self, duration) -> None:
        raise RuntimeError("release_in_event_time_order owns the timeout of this group state")

    setTimeoutTimestamp = setTimeoutDuration
