"""`--sparkpar-faults`: an executor of the local-cluster is killed mid-stage during extra runs of
each check (sparkpar.check, batch and streaming) and of ordinary existing tests (no sparkpar API).
Each bad job salts a key with Python's `random` inside a UDF Spark takes for deterministic: every
permuted interleaving gives the same answer, so plain runs pass it; a lost executor makes Spark
recompute map outputs with new salts and the answer changes. The twins salt from the row and
survive the same faults. One pytest subprocess, one local-cluster: its start and every executor
restart cost more than the checks."""

from __future__ import annotations

import re
import textwrap

import pytest
from test_plugin import CONFTEST, outcomes, run_pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SEED = 5
RUNS = 1
# Fault runs alternate between the reading side of a shuffle (run 0: the random salts change under
# readers of the first ones) and its map side (run 1: the accumulator counts re-run map tasks
# again). One of each catches both: each kill is aimed at its moment, not left to chance, and the
# twins survive both.
FAULT_RUNS = 2

ORDINARY_TESTS = """
import json
import random

from pyspark.sql import functions as F

SALTS = 8


def add(a, b):
    return a[0] + b[0], a[1] + b[1]


def totals_per_shop(spark, salt):
    sales = spark.createDataFrame([(i % 20, i) for i in range(2000)], "shop int, amount int")
    # Spread each shop over SALTS keys first (a skewed key), then add the parts up.
    per_salt = sales.rdd.map(lambda row: ((row.shop, salt(row)), (row.amount, 1))).reduceByKey(add, 6)
    return dict(per_salt.map(lambda kv: (kv[0][0], kv[1])).reduceByKey(add, 6).collect())


def test_random_salt(spark):
    totals = totals_per_shop(spark, lambda row: random.randrange(SALTS))
    assert sorted((shop, rows) for shop, (_, rows) in totals.items()) == [(shop, 100) for shop in range(20)]


def test_salt_from_the_row(spark):
    totals = totals_per_shop(spark, lambda row: row.amount % SALTS)
    assert sorted((shop, rows) for shop, (_, rows) in totals.items()) == [(shop, 100) for shop in range(20)]


def sales_stream(spark, directory):
    # 200 sales in 8 files; every 10th is a refund (a negative amount). Eight map tasks leave map
    # output on both executors, so a kill in the aggregation's stage has some to make Spark redo.
    directory.mkdir()
    for part in range(8):
        rows = [{"shop": i % 5, "amount": -1 if i % 10 == 0 else i} for i in range(part * 25, part * 25 + 25)]
        (directory / f"sales-{part}.json").write_text("\\n".join(json.dumps(r) for r in rows) + "\\n")
    return spark.readStream.schema("shop int, amount int").json(str(directory))


def run_to_end(frame, name):
    query = frame.writeStream.outputMode("complete").format("memory").queryName(name)
    query.trigger(availableNow=True).start().awaitTermination()
    return frame.sparkSession.table(name).collect()


def test_stream_counts_refunds_in_an_accumulator(spark, tmp_path):
    refunds = spark.sparkContext.accumulator(0)

    def without_refunds(amount):
        if amount < 0:
            refunds.add(1)
            return 0
        return amount

    sales = sales_stream(spark, tmp_path / "in").withColumn("amount", F.udf(without_refunds, "int")("amount"))
    run_to_end(sales.groupBy("shop").agg(F.sum("amount").alias("total")), "totals_with_accumulator")
    assert refunds.value == 20


def test_the_status_tracker_sees_each_task_end(spark):
    # The map-side kill waits for a chosen number of a stage's tasks to finish; by default the
    # tracker shows them every 100 ms, and a small stage ends before it shows that number.
    assert spark.sparkContext.getConf().get("spark.ui.liveUpdate.period") == "0"


def test_stream_counts_refunds_in_the_query(spark, tmp_path):
    sales = sales_stream(spark, tmp_path / "in")
    refunds = F.sum(F.when(F.col("amount") < 0, 1).otherwise(0)).alias("refunds")
    rows = run_to_end(sales.groupBy("shop").agg(refunds), "totals_in_query")
    assert sum(r.refunds for r in rows) == 20
"""

BATCH_CHECKS = """
from tests.plugin_jobs import bad_retry_salt, fixed_retry_salt


def test_check_random_salt(sparkpar):
    sparkpar.check(bad_retry_salt.job, bad_retry_salt.INPUTS)


def test_check_salt_from_the_row(sparkpar):
    rows = sparkpar.check(fixed_retry_salt.job, fixed_retry_salt.INPUTS)
    assert sorted((r.shop, r.rows) for r in rows) == [(shop, 100) for shop in range(20)]
"""

STREAMING_CHECKS = """
from tests.plugin_jobs import bad_stream_salted_join, fixed_stream_salted_join


def test_stream_random_salt(sparkpar):
    m = bad_stream_salted_join
    sparkpar.check(m.job, m.INPUTS, streaming=True)


def test_stream_salt_from_the_row(sparkpar):
    m = fixed_stream_salted_join
    assert len(sparkpar.check(m.job, m.INPUTS, streaming=True)) == 400
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    directory = tmp_path_factory.mktemp("existing_faults")
    (directory / "conftest.py").write_text(CONFTEST)
    (directory / "test_ordinary.py").write_text(textwrap.dedent(ORDINARY_TESTS))
    (directory / "test_batch_checks.py").write_text(textwrap.dedent(BATCH_CHECKS))
    (directory / "test_stream_checks.py").write_text(textwrap.dedent(STREAMING_CHECKS))
    return directory


@pytest.fixture(scope="module")
def faulted(project):
    return run_pytest(
        project,
        "--sparkpar-faults",
        f"--sparkpar-fault-runs={FAULT_RUNS}",
        # Fault runs follow the plain perturbed runs, which every test here passes: one is enough.
        f"--sparkpar-runs={RUNS}",
        f"--sparkpar-seed={SEED}",
        "--sparkpar-shrink-seconds=0",
    )


def test_ordinary_tests_pass_as_written(faulted):
    # The plugin runs each test once as written before its perturbed and fault runs: the twins
    # pass, and the report of each failing test says it passed that first run.
    for name in ("test_random_salt", "test_stream_counts_refunds_in_an_accumulator"):
        headline = f"test_ordinary.py::{name} is not retry-safe: it passes as written"
        assert headline in faulted.stdout, faulted.stdout[-8000:]
    assert outcomes(faulted.stdout)["test_salt_from_the_row"] == "PASSED", faulted.stdout[-8000:]
    assert outcomes(faulted.stdout)["test_stream_counts_refunds_in_the_query"] == "PASSED", faulted.stdout[-8000:]


def test_faults_catch_the_random_salts_and_pass_the_twins(faulted):
    assert outcomes(faulted.stdout) == {
        "test_check_random_salt": "FAILED",
        "test_check_salt_from_the_row": "PASSED",
        "test_random_salt": "FAILED",
        "test_salt_from_the_row": "PASSED",
        "test_stream_counts_refunds_in_an_accumulator": "FAILED",
        "test_stream_counts_refunds_in_the_query": "PASSED",
        "test_stream_random_salt": "FAILED",
        "test_stream_salt_from_the_row": "PASSED",
        "test_the_status_tracker_sees_each_task_end": "PASSED",
    }, faulted.stdout[-8000:] + faulted.stderr[-3000:]


def test_existing_test_report_blames_the_lost_executor(faulted):
    start = faulted.stdout.index("_ test_random_salt _")
    report = faulted.stdout[start : faulted.stdout.find("\n___", start + 1)]
    assert "test_ordinary.py::test_random_salt is not retry-safe: it passes as written, under every plain" in report, (
        report
    )
    assert re.search(
        r"── failing perturbation ─+\nspark.sql.shuffle.partitions=[2-8], spark.sql.adaptive.enabled=false, .*\n"
        r"fault: executor process(es)? \d+( and \d+)? killed \(SIGKILL\) in stage \d+ after \d+ of its \d+ tasks "
        r"had finished",
        report,
    ), report
    assert re.search(r"At index \d+ diff: \(\d+, \d+\) != \(\d+, 100\)", report), report  # pytest's assertion diff
    assert f"seed: {SEED}" in report
    assert (
        f"pytest test_ordinary.py::test_random_salt --sparkpar-determinism --sparkpar-seed={SEED} --sparkpar-runs={RUNS} "
        f"--sparkpar-faults --sparkpar-fault-runs={FAULT_RUNS}"
    ) in report, report
    assert "── likely cause (sparkpar lint on the test and the project modules it imports)" in report, report


def test_streaming_test_counting_in_an_accumulator_is_not_retry_safe(faulted):
    # A re-run map task adds its rows to the accumulator again: Spark dedups accumulator updates
    # only for tasks of the final stage.
    start = faulted.stdout.index("_ test_stream_counts_refunds_in_an_accumulator _")
    report = faulted.stdout[start : faulted.stdout.find("\n___", start + 1)]
    assert "test_ordinary.py::test_stream_counts_refunds_in_an_accumulator is not retry-safe" in report, report
    assert re.search(r"\nfault: executor process(es)? \d+( and \d+)? killed \(SIGKILL\) in stage \d+", report), report
    assert re.search(r"AssertionError: assert (2[1-9]|[3-9]\d|\d{3,}) == 20", report), report


def test_streaming_check_report_names_the_fault(faulted):
    start = faulted.stdout.index("_ test_stream_random_salt _")
    report = faulted.stdout[start : faulted.stdout.find("\n___", start + 1)]
    # Spark 4.3 checksums DataFrame shuffle outputs: a retried map task whose rows moved makes it
    # abort the micro-batch (its consumers cannot be rolled back); older Spark changes the answer.
    assert (
        "`job` does not survive a lost executor: it failed when an executor was killed mid-stage" in report
        and "Job aborted due to stage failure" in report
    ) or "an executor killed mid-stage (--sparkpar-faults) changed its output" in report, report
    assert "input 'orders': 400 rows in order " in report and "master: local-cluster[2,1,1024]" in report, report
    assert re.search(r"fault: executor process(es)? \d+( and \d+)? killed \(SIGKILL\) in stage \d+", report), report


def test_check_report_blames_the_lost_executor_not_the_interleaving(faulted):
    start = faulted.stdout.index("_ test_check_random_salt _")
    report = faulted.stdout[start : faulted.stdout.find("\n___", start + 1)]
    # Reported only after the plain permuted runs all matched, and confirmed by the same
    # interleaving re-run without the fault.
    assert (
        "an executor killed mid-stage (--sparkpar-faults) changed its output: Spark's retry recomputed rows "
        "differently; the same interleaving without the fault gives the sequential output"
    ) in report, report
    assert re.search(r"\nfault: executor process(es)? \d+( and \d+)? killed \(SIGKILL\) in stage \d+", report), report
    assert f"--sparkpar-faults --sparkpar-fault-runs={FAULT_RUNS}" in report  # the replay command keeps the mode
