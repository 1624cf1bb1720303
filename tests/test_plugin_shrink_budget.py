"""`--sparkpar-shrink-seconds` bounds the whole shrink, its first cut (prefixes of the input)
included: a failure found when the budget is already spent is reported on the input as given.
In-process checks over the plugin's own `spark` session."""

from __future__ import annotations

import pytest

from pytest_sparkpar.api import Sparkpar
from pytest_sparkpar.check import Settings
from pytest_sparkpar.report import SparkparFailure

pytestmark = pytest.mark.spark

# Streaming dropDuplicates keeps whichever row of a key arrives first, so the kept `v` follows the
# micro-batch split: a failure every interleaving search finds, on any master.
ROWS = [(i % 4, i) for i in range(40)]


def first_per_key(events):
    return events.dropDuplicates(["k"])


def check(spark, shrink_seconds: float) -> str:
    settings = Settings(
        determinism=True,
        runs=8,
        seed=7,
        master="local[2]",
        nodeid="shrink::budget",
        replay="pytest ...",
        shrink_seconds=shrink_seconds,
    )
    with pytest.raises(SparkparFailure) as failure:
        Sparkpar(settings, lambda: spark).check(first_per_key, {"events": ROWS}, schema="k int, v int", streaming=True)
    return str(failure.value)


def test_a_spent_budget_reports_the_input_as_given(spark):
    report = check(spark, shrink_seconds=1e-9)
    assert "input 'events': 40 rows, columns ['k', 'v']" in report, report
    assert "shrunk" not in report, report
