"""Existing streaming tests, unchanged: under --sparkpar-determinism a test that streams a
directory of files is re-run with the files split over several micro-batches
(pytest_sparkpar.streams). A per-batch dedup inside foreachBatch passes as written (one batch) and
fails once a duplicate's copies land in different batches; the stateful dedup passes every split.
Each re-run gets a fresh tmp_path, so the query's checkpoint there starts empty."""

from __future__ import annotations

import re
import textwrap

import pytest
from test_plugin import CONFTEST, outcomes, run_pytest

pytestmark = pytest.mark.spark

SEED = 3
RUNS = 3

STREAMING_TESTS = """
import json


def write_events(directory):
    # Three files; ids 1 and 2 each come twice, from different files (a replayed delivery).
    files = [[(1, 10), (2, 20)], [(2, 20), (3, 30)], [(1, 10), (4, 40)]]
    directory.mkdir()
    for index, rows in enumerate(files):
        lines = [json.dumps({"id": i, "amount": a}) for i, a in rows]
        (directory / f"events-{index}.json").write_text("\\n".join(lines) + "\\n")


def run(spark, tmp_path, prepare, per_batch):
    write_events(tmp_path / "in")
    stream = prepare(spark.readStream.schema("id int, amount int").json(str(tmp_path / "in")))
    query = (
        stream.writeStream.foreachBatch(per_batch)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()


def test_dedup_per_batch(spark, tmp_path):
    kept = []
    run(spark, tmp_path, lambda s: s, lambda df, _: kept.extend(r.id for r in df.dropDuplicates(["id"]).collect()))
    assert sorted(kept) == [1, 2, 3, 4]


def test_dedup_per_batch_own_session(tmp_path):
    # No fixture, and no job outside the stream (whose jobs run in the query's own job group).
    from pyspark.sql import SparkSession

    kept = []

    def dedup(df, _):
        kept.extend(r.id for r in df.dropDuplicates(["id"]).collect())

    run(SparkSession.builder.getOrCreate(), tmp_path, lambda s: s, dedup)
    assert sorted(kept) == [1, 2, 3, 4]


def test_dedup_across_batches(spark, tmp_path):
    kept = []
    run(spark, tmp_path, lambda s: s.dropDuplicates(["id"]), lambda df, _: kept.extend(r.id for r in df.collect()))
    assert sorted(kept) == [1, 2, 3, 4]
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    directory = tmp_path_factory.mktemp("stream_splits")
    (directory / "conftest.py").write_text(CONFTEST)
    (directory / "test_streams.py").write_text(textwrap.dedent(STREAMING_TESTS))
    return directory


@pytest.fixture(scope="module")
def checked(project):
    return run_pytest(
        project,
        "--sparkpar-determinism",
        "--sparkpar-master=local[2]",
        f"--sparkpar-seed={SEED}",
        f"--sparkpar-runs={RUNS}",
    )


def test_streaming_tests_pass_as_written(checked):
    # The plugin runs each test once as written (on the same local[2]) before its perturbed runs:
    # the report of each failing test says it passed that first run.
    for name in ("test_dedup_per_batch", "test_dedup_per_batch_own_session"):
        headline = (
            rf"test_streams\.py::{name} is order-dependent(, in the test rather than the job)?: it passes as written"
        )
        assert re.search(headline, checked.stdout), checked.stdout[-6000:]
    assert outcomes(checked.stdout)["test_dedup_across_batches"] == "PASSED", checked.stdout[-6000:]


def test_split_micro_batches_fail_the_per_batch_dedup_only(checked):
    assert outcomes(checked.stdout) == {
        "test_dedup_per_batch": "FAILED",
        "test_dedup_per_batch_own_session": "FAILED",
        "test_dedup_across_batches": "PASSED",
    }, checked.stdout[-6000:] + checked.stderr[-3000:]
    # The re-runs start from fresh temporary directories: the correct test was audited, not skipped.
    assert "not audited for order dependence" not in checked.stdout, checked.stdout[-4000:]


def test_report_names_the_split(checked):
    start = checked.stdout.index("_ test_dedup_per_batch _")
    report = checked.stdout[start : checked.stdout.find("\n___", start + 1)]
    assert "test_streams.py::test_dedup_per_batch is order-dependent: it passes as written but fails when Spark " in (
        report
    ), report
    assert re.search(
        r"\nmicro-batches: maxFilesPerTrigger=[12] on the file stream over \S+/in \(3 files\)\n", report
    ), report
    assert re.search(r"assert \[1, [\d, ]+\] == \[1, 2, 3, 4\]", report), report  # pytest's assertion diff
    assert f"seed: {SEED}" in report
