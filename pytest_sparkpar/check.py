"""`sparkpar.check`: the sequential run, the permuted interleavings, and the shrunk counterexample."""

from __future__ import annotations

import hashlib
import itertools
import random
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from pytest_sparkpar import interleaving as il
from pytest_sparkpar.orders import OrderType, canonical, differing_groups
from pytest_sparkpar.runner import Dataset, Output, SessionPool, run_batch, run_streaming

# Variants run from this many threads on the one session: small jobs spend most of their time in
# driver-side planning and scheduling, so 2 cores keep 3 threads busy (see bench/plugin_speed.py).
THREADS = 3


@dataclass
class Mismatch:
    inputs: dict[str, Dataset]
    variant: il.Interleaving
    sequential: Output
    permuted: Output
    differing: list[Any]
    fault: str | None = None  # --sparkpar-faults: what was killed when the output changed
    error: str | None = None  # ... or the job's error when it did not survive the loss


@dataclass
class Settings:
    determinism: bool
    runs: int
    seed: int
    master: str
    nodeid: str
    replay: str
    shrink_seconds: float = 30.0
    faults: int = 0  # runs with an executor killed mid-stage (pytest_sparkpar.faults)
    budget: float | None = None  # seconds of permuted runs per check; no new run starts after


def derive_seed(seed: int, nodeid: str, call: int) -> int:
    digest = hashlib.sha256(f"{seed}:{nodeid}:{call}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def is_strategy(value: Any) -> bool:
    return type(value).__module__.startswith("hypothesis")


def normalise(spark, value: Any, schema: Any) -> Dataset:
    """Rows (dicts, Rows or tuples), `(rows, schema)` or a DataFrame -> plain tuples + StructType."""
    from pytest_sparkpar.orders import plain

    if hasattr(value, "collect") and hasattr(value, "schema"):
        return Dataset([plain(tuple(r)) for r in value.collect()], value.schema)
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], list):
        value, schema = value
    rows = list(value)
    if schema is None:
        if not rows:
            raise ValueError("sparkpar: an empty input needs a schema (pass `schema=`)")
        struct = _inferred(spark, rows)
    elif isinstance(schema, str):
        struct = spark.createDataFrame([], schema).schema
    else:
        struct = schema
    names = struct.names

    def as_tuple(row):
        if isinstance(row, dict):
            return tuple(row.get(n) for n in names)
        if hasattr(row, "asDict") and getattr(row, "__fields__", None):
            return tuple(row[n] for n in names)
        return tuple(row)

    return Dataset([plain(as_tuple(r)) for r in rows], struct)


def _inferred(spark, rows: list):
    """The schema Spark infers from `rows`; a column that is None in every row, which Spark
    refuses to type, becomes a NullType (`void`) column instead of an error."""
    try:
        return spark.createDataFrame(rows).schema
    except Exception as error:  # noqa: BLE001 - retried below, re-raised when it is not that case
        if "CANNOT_DETERMINE_TYPE" not in str(error):
            raise
    from functools import reduce

    from pyspark.sql.types import _infer_schema, _merge_type

    return reduce(_merge_type, (_infer_schema(r) for r in rows))


class Checker:
    """One `check(...)` call: inputs normalised, job, orders and the run settings."""

    def __init__(
        self,
        spark,
        settings: Settings,
        job: Callable,
        orders: dict[str, OrderType],
        output: OrderType,
        streaming: bool,
        output_mode: str,
        tolerance: float | None,
    ):
        self.pool = SessionPool(spark)
        self.settings, self.job, self.orders, self.output = settings, job, orders, output
        self.streaming, self.output_mode, self.tolerance = streaming, output_mode, tolerance
        self.ran = 0  # permuted runs the last search completed
        # Spark Connect gives the client no SparkContext to ask
        self.default_parallelism = None if self.pool.shared else spark.sparkContext.defaultParallelism

    def run(self, inputs: dict[str, Dataset], variant: il.Interleaving) -> Output:
        __tracebackhide__ = True
        if self.streaming:
            return run_streaming(self.pool, self.job, inputs, variant, self.output_mode)
        return run_batch(self.pool, self.job, inputs, variant)

    def sequential(self, inputs: dict[str, Dataset]) -> Output:
        __tracebackhide__ = True
        return self.run(inputs, il.sequential({n: len(d.rows) for n, d in inputs.items()}))

    def spec(self, inputs: dict[str, Dataset]) -> dict:
        return {n: (d.rows, d.columns, self.orders[n]) for n, d in inputs.items()}

    def compare(self, inputs, variant, seq: Output, out: Output) -> Mismatch | None:
        if seq.columns != out.columns:
            return Mismatch(inputs, variant, seq, out, ["<columns>"])
        a = canonical(seq.rows, seq.columns, self.output)
        b = canonical(out.rows, out.columns, self.output)
        differing = differing_groups(a, b, self.tolerance)
        return Mismatch(inputs, variant, seq, out, differing) if differing else None

    # -- fixed rows: a fast threaded search, then hypothesis shrinks what it found ------------

    def search(
        self, inputs: dict[str, Dataset], seq: Output, seed: int, deadline: float | None = None
    ) -> Mismatch | None:
        """The first of `settings.runs` permuted runs whose output differs. No new run starts
        after `deadline` (the shrink budget) or once `settings.budget` is spent."""
        __tracebackhide__ = True
        rng = random.Random(seed)
        variants = [
            il.draw(il.RandomChooser(rng), self.spec(inputs), self.streaming, self.default_parallelism)
            for _ in range(self.settings.runs)
        ]
        found: dict[int, Mismatch] = {}
        threads = 1 if self.pool.shared else THREADS
        if self.settings.budget is not None:
            budget_end = time.monotonic() + self.settings.budget
            deadline = budget_end if deadline is None else min(deadline, budget_end)
        queue = iter(enumerate(variants))
        self.ran = 0
        with ThreadPoolExecutor(threads, thread_name_prefix="sparkpar") as executor:
            # At most one run per thread in flight, so a spent budget stops new runs from starting.
            pending = {executor.submit(self.run, inputs, v): i for i, v in itertools.islice(queue, threads)}
            while pending and not found:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    index = pending.pop(future)
                    self.ran += 1
                    mismatch = self.compare(inputs, variants[index], seq, future.result())
                    if mismatch:
                        found[index] = mismatch
                    elif deadline is None or time.monotonic() < deadline:
                        pending.update({executor.submit(self.run, inputs, v): i for i, v in itertools.islice(queue, 1)})
        return found[min(found)] if found else None

    def fault_search(self, inputs: dict[str, Dataset], seq: Output, seed: int) -> Mismatch | None:
        """`settings.faults` runs, one at a time, each of a permuted interleaving (adaptive
        execution off, so stages keep their tasks) with an executor killed mid-stage. A changed
        output is confirmed by the same interleaving without the fault; a job that fails when an
        executor is lost is a finding too."""
        __tracebackhide__ = True
        from pytest_sparkpar import faults

        rng = random.Random(seed ^ 0x5EED)
        executors = faults.executor_count(self.settings.master)
        for index in range(self.settings.faults):
            drawn = il.draw(il.RandomChooser(rng), self.spec(inputs), self.streaming, self.default_parallelism)
            variant = il.Interleaving(
                drawn.placements,
                max(faults.SHUFFLE_PARTITIONS, drawn.shuffle_partitions),
                False,
                label="fault-injected",
            )
            faults.wait_for_executors(self.pool.spark, executors)
            killer = faults.ExecutorKiller(
                self.pool.spark, random.Random(rng.getrandbits(32)), faults.reads_side(index)
            )
            killer.start()
            try:
                out = self.run(inputs, variant)
            except Exception as error:  # noqa: BLE001 - reported: the job did not survive the loss
                fault = killer.stop()
                if fault is None:
                    raise
                return Mismatch(
                    inputs, variant, seq, seq, [], fault=fault.describe(), error=faults.error_summary(error)
                )
            fault = killer.stop()
            mismatch = self.compare(inputs, variant, seq, out)
            if mismatch is not None and fault is not None:
                if self.compare(inputs, variant, seq, self.run(inputs, variant)) is None:
                    mismatch.fault = fault.describe()
                return mismatch
            if mismatch is not None:
                return mismatch  # no executor was killed: a plain permutation bug after all
        return None

    def coarse(self, inputs: dict[str, Dataset], found: Mismatch, seed: int, deadline: float) -> Mismatch:
        """Cheap first cut before hypothesis: the shortest prefix of the inputs (1/16, 1/8, …)
        on which a few threaded interleavings still differ. Each hypothesis candidate costs two
        Spark jobs, so starting from fewer rows is what makes its shrinking finish. Part of the
        shrink budget: no prefix is tried after `deadline`."""
        __tracebackhide__ = True
        runs, self.settings.runs = self.settings.runs, min(self.settings.runs, 6)
        try:
            for fraction in (16, 8, 4, 2):
                if time.monotonic() >= deadline:
                    break
                subset = {n: Dataset(d.rows[: max(2, len(d.rows) // fraction)], d.schema) for n, d in inputs.items()}
                try:
                    mismatch = self.search(subset, self.sequential(subset), seed + fraction, deadline)
                except Exception:  # noqa: BLE001 - e.g. the job needs more rows; try a longer prefix
                    continue
                if mismatch:
                    return mismatch
        finally:
            self.settings.runs = runs
        return found

    def shrink(self, inputs: dict[str, Dataset], seed: int, deadline: float) -> Mismatch | None:
        """Hypothesis looks for the smallest subset of rows and simplest interleaving that still
        differs, until `deadline`: a candidate past it counts as passing, so it always terminates."""

        def draw_inputs(data, chooser):
            from hypothesis import strategies as st

            subset = {}
            for name, d in inputs.items():
                # A prefix first (one choice, shrinks fast), then single rows out of it: flags
                # are mostly 1 when generated and shrink to 0, which drops the row.
                prefix = d.rows[: data.draw(st.integers(min(1, len(d.rows)), len(d.rows)))]
                keep = [data.draw(st.integers(0, 9)) != 0 for _ in prefix]
                subset[name] = Dataset([r for r, k in zip(prefix, keep) if k], d.schema)
            return subset

        return self._hypothesis(draw_inputs, seed, swallow_errors=True, deadline=deadline)

    # -- strategy inputs: hypothesis draws the rows and the interleaving for every run ----------

    def strategy_search(self, strategies: dict[str, Any], schemas: dict[str, Any], spark, seed: int) -> Mismatch | None:
        def draw_inputs(data, chooser):
            return {n: normalise(spark, data.draw(s), schemas.get(n)) for n, s in strategies.items()}

        return self._hypothesis(draw_inputs, seed, swallow_errors=False)

    def _hypothesis(
        self, draw_inputs, seed: int, swallow_errors: bool, deadline: float | None = None
    ) -> Mismatch | None:
        """Hypothesis over `draw_inputs`; the shrink budget runs from `deadline`, or, when none is
        given (a strategy search), from the first differing case."""
        __tracebackhide__ = True
        from hypothesis import HealthCheck, Phase, Verbosity, given, settings
        from hypothesis import seed as fix_seed
        from hypothesis import strategies as st

        outcomes: dict[tuple, Mismatch | None] = {}
        sequential_outputs: dict[tuple, Output] = {}
        state: dict[str, Any] = {"best": None, "deadline": deadline}

        class Differs(AssertionError):
            pass

        class OutOfTime(BaseException):
            pass

        def case(data):
            __tracebackhide__ = True
            chooser = il.HypothesisChooser(data)
            subset = draw_inputs(data, chooser)
            variant = il.draw(chooser, self.spec(subset), self.streaming, self.default_parallelism)
            # repr, not the rows: map columns hold dicts, which cannot be hashed
            rows_key = repr(sorted((n, d.rows) for n, d in subset.items()))
            key = (rows_key, variant.key())
            if key not in outcomes:
                if state["deadline"] is not None and time.monotonic() > state["deadline"]:
                    raise OutOfTime()  # a BaseException: hypothesis lets it through at once
                else:
                    outcomes[key] = self._attempt(subset, variant, rows_key, sequential_outputs, swallow_errors)
            mismatch = outcomes[key]
            if mismatch is not None:
                if state["deadline"] is None:
                    state["deadline"] = time.monotonic() + self.settings.shrink_seconds
                state["best"] = mismatch
                raise Differs("outputs differ")

        test = fix_seed(seed)(
            settings(
                database=None,
                deadline=None,
                max_examples=self.settings.runs,
                phases=[Phase.generate, Phase.shrink],
                suppress_health_check=list(HealthCheck),
                report_multiple_bugs=False,
                print_blob=False,
                verbosity=Verbosity.quiet,
            )(given(st.data())(case))
        )
        try:
            test()
        except (Differs, OutOfTime):
            pass
        except Exception:
            if state["best"] is None:
                raise
        return state["best"]

    def _attempt(self, subset, variant, rows_key, sequential_outputs, swallow_errors) -> Mismatch | None:
        __tracebackhide__ = True
        try:
            if rows_key not in sequential_outputs:
                sequential_outputs[rows_key] = self.sequential(subset)
            return self.compare(subset, variant, sequential_outputs[rows_key], self.run(subset, variant))
        except Exception:
            if swallow_errors:
                return None  # a different failure (e.g. the job rejects an empty input)
            raise
