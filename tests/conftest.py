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


@pytest.fixture
def sparkpar_cli(tmp_path, monkeypatch):
    """Run `sparkpar ARGS...` in-process from `tmp_path`; returns click's Result."""
    from click.testing import CliRunner

    from sparkpar_lint.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CI", raising=False)

    def invoke(*args: str):
        return CliRunner().invoke(main, list(args), catch_exceptions=False)

    return invoke


@pytest.fixture
def pinned_cli(sparkpar_cli):
    """`sparkpar_cli` with `lint` pinned to SPX101 and SPX901 unless the test selects rules itself:
    the CLI tests check exact output for samples.BAD_JOB, which newer rules also flag."""

    def invoke(*args: str):
        if args and args[0] == "lint" and "--select" not in args:
            args = (*args, "--select", "SPX101,SPX901")
        return sparkpar_cli(*args)

    return invoke
