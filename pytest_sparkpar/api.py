"""The `sparkpar` fixture object: `check`, `check_combiner` and the order types."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from pytest_sparkpar import orders
from pytest_sparkpar.orders import OrderType


class Sparkpar:
    bag = staticmethod(orders.bag)
    per_key = staticmethod(orders.per_key)
    sequence = staticmethod(orders.sequence)

    def __init__(self, settings, get_spark: Callable[[], Any], runs_override: int | None = None):
        self.settings = settings
        self._get_spark = get_spark
        self._calls = 0
        if runs_override:
            self.settings.runs = runs_override

    def check(
        self,
        job: Callable,
        inputs: Any,
        input_order: OrderType | dict[str, OrderType] | None = None,
        output: OrderType | None = None,
        streaming: bool = False,
        *,
        output_mode: str = "append",
        tolerance: float | None = None,
        schema: Any = None,
    ) -> list:
        """Run `job` under its sequential semantics and, with --sparkpar-determinism, under
        permuted interleavings; fail with a shrunk counterexample when outputs differ.

        `job` is a function of the inputs returning a DataFrame, or a SQL job: a query string or
        a function of no arguments returning one, run over temp views named after the inputs.

        `inputs` maps input names (the job's parameter names) to rows, `(rows, schema)`, a
        DataFrame or a hypothesis strategy of row lists; a single non-dict value is one input.
        Returns the sequential output as a list of Rows.
        """
        __tracebackhide__ = True
        from pytest_sparkpar.check import Checker, derive_seed, is_strategy, normalise
        from pytest_sparkpar.report import SparkparFailure, failure_report
        from pytest_sparkpar.sql_jobs import as_job

        named = inputs if isinstance(inputs, dict) else {"input": inputs}
        job = as_job(job, named)  # a SQL query over views named after the inputs
        schemas = schema if isinstance(schema, dict) else dict.fromkeys(named, schema)
        asked = input_order if isinstance(input_order, dict) else dict.fromkeys(named, input_order)
        order_of: dict[str, OrderType] = {n: asked.get(n) or orders.bag() for n in named}
        seed = derive_seed(self.settings.seed, self.settings.nodeid, self._calls)
        self._calls += 1
        spark = self._get_spark()
        checker = Checker(
            spark, self.settings, job, order_of, output or orders.bag(), streaming, output_mode, tolerance
        )

        strategies = {n: v for n, v in named.items() if is_strategy(v)}
        if strategies:
            if len(strategies) != len(named):
                raise TypeError("sparkpar: give every input as a hypothesis strategy, or none")
            return self._check_strategies(checker, strategies, schemas, spark, seed)

        datasets = {n: normalise(spark, v, schemas.get(n)) for n, v in named.items()}
        sequential = checker.sequential(datasets)
        if not self.settings.determinism:
            return _as_rows(sequential)
        mismatch = checker.search(datasets, sequential, seed)
        if mismatch is None and checker.ran < self.settings.runs:
            import warnings

            import pytest

            warnings.warn(
                pytest.PytestWarning(
                    f"sparkpar: {checker.ran} of {self.settings.runs} permuted runs fitted in the "
                    f"--sparkpar-budget of {self.settings.budget:g} s; the rest were not run"
                ),
                stacklevel=2,
            )
        if mismatch is None and self.settings.faults:
            mismatch = checker.fault_search(datasets, sequential, seed)
        if mismatch is None:
            return _as_rows(sequential)
        if self.settings.shrink_seconds > 0 and mismatch.fault is None:
            # One budget for the whole shrink, the first cut included.
            deadline = time.monotonic() + self.settings.shrink_seconds
            mismatch = checker.coarse(datasets, mismatch, seed, deadline)
            mismatch = checker.shrink(mismatch.inputs, seed, deadline) or mismatch
        sizes = {n: len(d.rows) for n, d in datasets.items()}
        raise SparkparFailure(
            failure_report(job, mismatch, checker.output, tolerance, self.settings, sizes, mismatch.inputs != datasets)
        )

    def _check_strategies(self, checker, strategies, schemas, spark, seed) -> list:
        __tracebackhide__ = True
        from hypothesis import HealthCheck, given, settings
        from hypothesis import seed as fix_seed
        from hypothesis import strategies as st

        from pytest_sparkpar.check import normalise
        from pytest_sparkpar.report import SparkparFailure, failure_report

        if not self.settings.determinism:
            # One seeded draw, sequential run only.
            drawn: dict = {}

            @fix_seed(seed)
            @settings(database=None, max_examples=1, deadline=None, suppress_health_check=list(HealthCheck))
            @given(st.fixed_dictionaries(strategies))
            def one(rows):
                drawn.update(rows)

            one()
            datasets = {n: normalise(spark, drawn[n], schemas.get(n)) for n in strategies}
            return _as_rows(checker.sequential(datasets))
        mismatch = checker.strategy_search(strategies, schemas, spark, seed)
        if mismatch is None:
            return []
        raise SparkparFailure(
            failure_report(checker.job, mismatch, checker.output, checker.tolerance, self.settings, {}, True)
        )

    def check_combiner(
        self,
        fn: Callable[[Any, Any], Any],
        values: Any,
        *,
        commutative: bool = True,
        tolerance: float | None = None,
        max_examples: int = 200,
    ) -> None:
        """Property-test that `fn` is associative (and commutative unless told otherwise), as a
        combine function run on partial aggregates must be; fails with a minimal counterexample."""
        __tracebackhide__ = True
        from hypothesis import HealthCheck, given, settings
        from hypothesis import seed as fix_seed
        from hypothesis import strategies as st

        from pytest_sparkpar.check import derive_seed
        from pytest_sparkpar.orders import values_equal
        from pytest_sparkpar.report import SparkparFailure, section

        strategy = values if type(values).__module__.startswith("hypothesis") else st.sampled_from(list(values))
        found: dict[str, str] = {}
        name = getattr(fn, "__qualname__", repr(fn))

        class NotAMonoid(AssertionError):
            pass

        @fix_seed(derive_seed(self.settings.seed, self.settings.nodeid, self._calls))
        @settings(
            database=None,
            deadline=None,
            max_examples=max_examples,
            suppress_health_check=list(HealthCheck),
            report_multiple_bugs=False,
        )
        @given(strategy, strategy, strategy)
        def law(a, b, c):
            left, right = fn(fn(a, b), c), fn(a, fn(b, c))
            if not values_equal(left, right, tolerance):
                found["law"] = "associativity: fn(fn(a, b), c) == fn(a, fn(b, c))"
                found["detail"] = (
                    f"a = {a!r}\nb = {b!r}\nc = {c!r}\nfn(fn(a, b), c) = {left!r}\nfn(a, fn(b, c)) = {right!r}"
                )
                raise NotAMonoid()
            if commutative:
                ab, ba = fn(a, b), fn(b, a)
                if not values_equal(ab, ba, tolerance):
                    found["law"] = "commutativity: fn(a, b) == fn(b, a)"
                    found["detail"] = f"a = {a!r}\nb = {b!r}\nfn(a, b) = {ab!r}\nfn(b, a) = {ba!r}"
                    raise NotAMonoid()

        self._calls += 1
        try:
            law()
        except NotAMonoid:
            raise SparkparFailure(
                f"sparkpar: combiner `{name}` breaks {found['law']}, so Spark's partial aggregation"
                " can change the result with the partitioning.\n\n"
                + section("minimal counterexample (shrunk by hypothesis)", found["detail"])
                + "\n"
                + section("reproduce", f"seed: {self.settings.seed}\n{self.settings.replay}")
            ) from None


def _as_rows(output) -> list:
    from pyspark.sql import Row

    make = Row(*output.columns)
    return [make(*row) for row in output.rows]
