"""SPX205 on real Spark: a streaming query whose foreachBatch fails once after writing is
restarted from its checkpoint; the replayed micro-batch duplicates an append, not a keyed write."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
# The same replay for the Python writer API and for a SQL INSERT run from the batch function,
# for an overwrite of a directory named by a random run id instead of the batch id, and for an
# append made by a method the batch function reaches through `self`.
APPENDS = [
    "spx205/bad_order_log_append",
    "sql/bad_order_log_insert",
    "spx205/bad_order_log_clock_location",
    "spx205/bad_order_log_helper_append",
]
KEYED = [
    "spx205/fixed_order_log_append",
    "sql/fixed_order_log_insert",
    "spx205/fixed_order_log_clock_location",
    "spx205/fixed_order_log_helper_append",
]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name.replace("/", "_"), FIXTURES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run_with_one_crash(spark, job, tmp_path: Path) -> tuple[int, int]:
    """Rows written and rows in the source, after a crash following the first write and a restart."""
    from pyspark.errors import StreamingQueryException

    source, out, checkpoint = tmp_path / "in", tmp_path / "out", tmp_path / "cp"
    source.mkdir()
    rows = [{"order_id": i, "amount": float(i)} for i in range(50)]
    (source / "orders.json").write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    job.OUTPUT["path"] = str(out)
    crashed = []

    def crash_once():
        if not crashed:
            crashed.append(True)
            raise RuntimeError("driver lost after the write, before the commit")

    job.after_write = crash_once
    query = job.start(spark, str(source), str(checkpoint))
    with pytest.raises(StreamingQueryException):
        query.processAllAvailable()
    query.stop()
    restarted = job.start(spark, str(source), str(checkpoint))
    restarted.processAllAvailable()
    restarted.stop()
    return spark.read.parquet(str(out)).count(), len(rows)


@pytest.mark.spark
@pytest.mark.parametrize("name", APPENDS)
def test_replayed_append_writes_the_batch_twice(cluster_spark, tmp_path, name):
    written, source_rows = _run_with_one_crash(cluster_spark, _load(name), tmp_path)
    assert written == 2 * source_rows


@pytest.mark.spark
@pytest.mark.parametrize("name", KEYED)
def test_batch_keyed_overwrite_writes_it_once(cluster_spark, tmp_path, name):
    written, source_rows = _run_with_one_crash(cluster_spark, _load(name), tmp_path)
    assert written == source_rows


def _run_in_two_batches(spark, job, tmp_path: Path) -> tuple[int, int]:
    """Rows kept for one day whose readings arrive in two micro-batches, and rows sent."""
    source, out, checkpoint = tmp_path / "in", tmp_path / "out", tmp_path / "cp"
    source.mkdir()
    job.OUTPUT["path"] = str(out)
    batches = [[("a", 1.0), ("b", 2.0), ("c", 3.0)], [("a", 4.0), ("b", 5.0)]]
    query = job.start(spark, str(source), str(checkpoint))
    for number, readings in enumerate(batches):
        rows = [{"sensor": s, "day": "2026-01-05", "reading": r} for s, r in readings]
        (source / f"part{number}.json").write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
        query.processAllAvailable()
    query.stop()
    return spark.read.parquet(str(out)).count(), sum(len(b) for b in batches)


@pytest.mark.spark
def test_dynamic_partition_overwrite_per_batch_loses_the_earlier_batch(cluster_spark, tmp_path):
    kept, sent = _run_in_two_batches(cluster_spark, _load("spx205/bad_daily_partition_overwrite"), tmp_path)
    assert (kept, sent) == (2, 5)


@pytest.mark.spark
def test_batch_keyed_partitions_keep_every_batch(cluster_spark, tmp_path):
    kept, sent = _run_in_two_batches(cluster_spark, _load("spx205/fixed_daily_partition_overwrite"), tmp_path)
    assert kept == sent
