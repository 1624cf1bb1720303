"""A random draw over rows the job makes up (`spark.range`, the rate stream, literal rows) is the
data being generated: that a retry must repeat it is assumed, so the finding is medium, and the
same draw over rows read from storage stays high. Twins differ in the source only."""

from __future__ import annotations

import json

import pytest

from sparkpar_lint.analysis import analyze
from sparkpar_lint.model import Confidence

JOB = """\
import random
from pyspark.sql import SparkSession, functions as F

spark = SparkSession.builder.getOrCreate()

@F.udf("double")
def jitter(x):
    return x + random.gauss(0, 1)

rows = {source}
rows.withColumn("noisy", jitter("value")).write.parquet("out")
"""
MADE_UP = {
    "range": 'spark.range(1000).withColumnRenamed("id", "value")',
    "rate stream": 'spark.readStream.format("rate").option("rowsPerSecond", 10).load()',
    "literal rows": 'spark.createDataFrame([(1.0,), (2.0,)], ["value"])',
}
READ = {
    "parquet": 'spark.read.parquet("readings")',
    "kafka stream": 'spark.readStream.format("kafka").load()',
    "range joined to a table": 'spark.range(10).join(spark.table("readings"), "id")',
}
ASSUMED = "a retried task must draw the same values: these rows are made up by the job, like test data"


def _spx203(source: str):
    [finding] = [f for f in analyze("job.py", JOB.format(source=source)) if f.rule_id == "SPX203"]
    return finding


@pytest.mark.parametrize("source", MADE_UP.values(), ids=MADE_UP.keys())
def test_a_draw_over_made_up_rows_assumes_the_retry_matters(source):
    finding = _spx203(source)
    assert finding.confidence is Confidence.MEDIUM
    assert finding.links.assumed == (ASSUMED,)
    assert finding.message.endswith(f"(holds if {ASSUMED})")


@pytest.mark.parametrize("source", READ.values(), ids=READ.keys())
def test_the_same_draw_over_rows_read_from_storage_stays_high(source):
    finding = _spx203(source)
    assert finding.confidence is Confidence.HIGH and not finding.links.assumed


def test_a_clock_read_over_made_up_rows_is_not_excused(tmp_path):
    clocked = JOB.replace("random.gauss(0, 1)", "time.time()").replace("import random", "import time")
    [finding] = [f for f in analyze("job.py", clocked.format(source=MADE_UP["range"])) if f.rule_id == "SPX203"]
    assert finding.confidence is Confidence.HIGH


def test_the_default_run_hides_it_and_says_so(sparkpar_cli, tmp_path, monkeypatch):
    monkeypatch.delenv("SPARKPAR_MIN_CONFIDENCE", raising=False)
    (tmp_path / "gen.py").write_text(JOB.format(source=MADE_UP["range"]))
    shown = sparkpar_cli("lint", "--select", "SPX203", "gen.py")
    assert shown.exit_code == 0 and "1 finding below high confidence not shown" in shown.output, shown.output
    everything = sparkpar_cli("lint", "--select", "SPX203", "--min-confidence", "low", "--format", "json", "gen.py")
    [finding] = json.loads(everything.stdout)
    assert finding["confidence"] == "medium"
