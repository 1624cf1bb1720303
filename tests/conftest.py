"""Shared test fixtures. Spark starts once per test session, only for tests that ask for it."""

from __future__ import annotations

import os

import pytest

# Shuffle blocks are fetched between two executor JVMs in random order, which exposes the
# reorder bugs that local[N] hides (its reducers read map outputs in a fixed order).
CLUSTER_MASTER = "local-cluster[2,1,1024]"


@pytest.fixture(scope="session")
def cluster_spark():
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", __import__("sys").executable)
    spark = (
        SparkSession.builder.master(CLUSTER_MASTER)
        .appName("sparkpar-fixtures")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.executor.memory", "700m")
        .config("spark.driver.memory", "1g")
        .config("spark.python.worker.reuse", "true")
        .getOrCreate()
    )
    yield spark
    spark.stop()


# --- CLI-facing helpers (test_cli, test_config, test_suppressions, test_robustness) ---

# SPX101: the orderBy does not survive the shuffle, so F.first picks an arbitrary row per key.
BAD_JOB = """\
from pyspark.sql import SparkSession, functions as F

spark = SparkSession.builder.getOrCreate()
df = spark.read.parquet("events")
latest = df.orderBy("ts").groupBy("k").agg(F.first("v"))
"""
BAD_LINE = 5
BAD_COLUMN = BAD_JOB.splitlines()[BAD_LINE - 1].index("F.first")  # 0-based, as Span stores it

GOOD_JOB = """\
from pyspark.sql import SparkSession, functions as F

spark = SparkSession.builder.getOrCreate()
df = spark.read.parquet("events")
latest = df.groupBy("k").agg(F.max_by("v", "ts"))
"""


@pytest.fixture
def sparkpar(tmp_path, monkeypatch):
    """Run `sparkpar ARGS...` in-process from `tmp_path`; returns click's Result."""
    from click.testing import CliRunner

    from sparkpar_lint.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CI", raising=False)

    def invoke(*args: str):
        return CliRunner().invoke(main, list(args), catch_exceptions=False)

    return invoke
