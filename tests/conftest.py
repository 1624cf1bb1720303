"""Shared helpers for the CLI-facing tests: a known-bad job and a one-call `sparkpar` runner."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

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
    from sparkpar_lint.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CI", raising=False)

    def invoke(*args: str):
        return CliRunner().invoke(main, list(args), catch_exceptions=False)

    return invoke
