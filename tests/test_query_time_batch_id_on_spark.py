"""SPX203 on real Spark: a batch id computed from `current_timestamp()` on an uncached frame is
read on the driver by one query and written with the rows by another, so the run log names an id
no loaded row carries; the fixed twin, an id made once on the driver, matches its rows."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "spx203"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, FIXTURES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _ids_written(spark, job, tmp_path: Path) -> tuple[str, set[str]]:
    """The id the run log holds and the ids the loaded rows carry."""
    source = tmp_path / "in"
    source.mkdir()
    rows = [{"order_id": i, "amount": float(i)} for i in range(20)]
    (source / "orders.json").write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    job.OUTPUT.update(rows=str(tmp_path / "rows"), runs=str(tmp_path / "runs"))
    job.load(spark, str(source))
    logged = {r.batch_id for r in spark.read.parquet(job.OUTPUT["runs"]).collect()}
    carried = {r.batch_id for r in spark.read.parquet(job.OUTPUT["rows"]).collect()}
    assert len(logged) == 1
    return logged.pop(), carried


@pytest.mark.spark
def test_the_logged_batch_id_is_not_the_one_on_the_rows(cluster_spark, tmp_path):
    logged, carried = _ids_written(cluster_spark, _load("bad_query_time_batch_id"), tmp_path)
    # Two queries, two query times (to the millisecond: a write takes longer than that).
    assert carried and logged not in carried


@pytest.mark.spark
def test_an_id_made_on_the_driver_is_the_one_on_the_rows(cluster_spark, tmp_path):
    logged, carried = _ids_written(cluster_spark, _load("fixed_query_time_batch_id"), tmp_path)
    assert carried == {logged}
