"""Sessions a test builds itself, under --sparkpar-determinism.

A test or conftest that calls `SparkSession.builder.master("local[1]").config(...).getOrCreate()`
would otherwise get a local master, where map outputs are read in a fixed order and most reorder
bugs hide. While the audit is on, `Builder.getOrCreate` first starts the plugin's own session
(on its master, local-cluster by default) when no SparkContext exists yet; PySpark then hands
that session back and applies the builder's runtime SQL settings to it (so `shuffle.partitions=1`
still holds for the run as written). One SparkContext per process means the as-written run shares
that master too. During a perturbed run, the settings the perturbation varies are put back after
any `getOrCreate()` in the test body, so a hard-coded value cannot undo the perturbation. Every
setting replaced this way is recorded for the report.

Spark Connect builders (`remote(...)`, `SPARK_REMOTE`) are left alone.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class State:
    master: str  # the plugin's master, which replaces the builder's own
    pinned: dict[str, str] = field(default_factory=dict)  # a perturbed run's confs, kept in place
    requested_master: str | None = None  # the builder's own master, replaced for the whole run
    overridden: dict[str, str] = field(default_factory=dict)  # this test's pinned confs -> its values
    starting: bool = False


OWN_APP_NAME = "sparkpar"
STATE: State | None = None
_lock = threading.RLock()
_original: Callable[[Any], Any] | None = None  # PySpark's own Builder.getOrCreate while installed


def _remote(options: dict) -> bool:
    return bool(
        options.get("spark.remote")
        or os.environ.get("SPARK_REMOTE")
        or os.environ.get("SPARK_CONNECT_MODE_ENABLED")
        or str(options.get("spark.api.mode", "")).lower() == "connect"
    )


def _get_or_create(builder):
    original = _original
    assert original is not None  # only reached through the patch `install` puts in place
    state = STATE
    options = dict(builder._options)
    # The plugin's own builder (pytest_sparkpar.session.start) goes straight through.
    if state is None or state.starting or _remote(options) or options.get("spark.app.name") == OWN_APP_NAME:
        return original(builder)
    from pyspark import SparkContext

    from pytest_sparkpar.session import start

    with _lock:
        if SparkContext._active_spark_context is None:
            state.starting = True
            try:
                _as_requested(start(state.master), options)
            finally:
                state.starting = False
    requested = options.get("spark.master")
    if requested and requested != state.master:
        state.requested_master = requested
    session = original(builder)
    for key, value in state.pinned.items():
        if key in options and str(options[key]) != value:
            state.overridden[key] = str(options[key])
            session.conf.set(key, value)
    return session


def local_cores(master: str | None) -> int | None:
    """The default parallelism a `local`, `local[N]` or `local[*]` master would give."""
    if master == "local":
        return 1
    match = re.fullmatch(r"local\[(\d+|\*)(?:,\s*\d+)?\]", master or "")
    if match is None:
        return None
    return os.cpu_count() or 1 if match.group(1) == "*" else int(match.group(1))


def _as_requested(session, options: dict) -> None:
    """The plugin's session, started for a test's builder, keeps what the test asked for apart
    from the master: Spark's default shuffle partitions (not the plugin's 4) and the default
    parallelism of the requested local master, unless the builder sets them."""
    if "spark.sql.shuffle.partitions" not in options:
        session.conf.unset("spark.sql.shuffle.partitions")
    context_conf = session.sparkContext._jsc.sc().conf()  # read at each use; getConf() is a copy
    parallelism = options.get("spark.default.parallelism") or local_cores(options.get("spark.master"))
    if parallelism:
        context_conf.set("spark.default.parallelism", str(parallelism))
    else:
        context_conf.remove("spark.default.parallelism")


def install(master: str) -> None:
    """Route `SparkSession.builder...getOrCreate()` through the plugin's session on `master`."""
    global STATE, _original
    from pyspark.sql import SparkSession

    STATE = State(master)
    if _original is None:
        _original = SparkSession.Builder.getOrCreate
        SparkSession.Builder.getOrCreate = _get_or_create  # type: ignore[method-assign]  # the patch itself


def uninstall() -> None:
    global STATE, _original
    if _original is not None:
        from pyspark.sql import SparkSession

        SparkSession.Builder.getOrCreate = _original  # type: ignore[method-assign, assignment]  # undoing the patch
    STATE, _original = None, None


def new_test() -> None:
    """Forget the previous test's overridden confs."""
    if STATE is not None:
        STATE.overridden = {}


class pinned:
    """While a perturbed run lasts, `getOrCreate()` keeps the perturbation's `confs`."""

    def __init__(self, confs: dict[str, str]):
        self.confs = confs

    def __enter__(self):
        if STATE is not None:
            STATE.pinned = dict(self.confs)

    def __exit__(self, *exc):
        if STATE is not None:
            STATE.pinned = {}
        return False


def overridden() -> dict[str, str]:
    """The builder settings replaced for this test (`master`, pinned confs), with the test's values."""
    if STATE is None:
        return {}
    master = {"master": STATE.requested_master} if STATE.requested_master else {}
    return {**STATE.overridden, **master}
