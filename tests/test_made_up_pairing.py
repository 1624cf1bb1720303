"""Two frames of made-up rows zipped by a made-up number (`row_number()` over `rand()`,
`monotonically_increasing_id()`) pair generated rows arbitrarily by design: another run pairs them
otherwise, which is another draw of the same synthetic data. SPX105 assumes that the pairing
matters (medium confidence); the same zip over rows read from storage pairs real rows wrongly and
stays high. Twins differ in one source only."""

from __future__ import annotations

import json
import textwrap

import pytest

from sparkpar_lint.analysis import analyze
from sparkpar_lint.model import Confidence

GENERATOR = textwrap.dedent(
    """\
    from pyspark.sql import SparkSession, functions as F

    spark = SparkSession.builder.getOrCreate()
    orders = spark.range(500).withColumn("amount", F.round(F.rand() * 100))
    shoppers = {shoppers}
    numbered = orders.withColumn("pair", F.expr("row_number() over (order by rand())"))
    people = shoppers.withColumn("pair", F.monotonically_increasing_id())
    numbered.join(people, "pair").drop("pair").write.parquet("fake_orders")
    """
)
# Rows the job makes up, or reads back from where it wrote made-up rows.
MADE_UP = {
    "literal rows": 'spark.createDataFrame([("ana",), ("bo",)], ["name"])',
    "range": 'spark.range(40).withColumn("name", F.concat(F.lit("user_"), "id"))',
    "written back": textwrap.dedent(
        """\
        spark.range(40).withColumnRenamed("id", "shopper")
        shoppers.write.mode("overwrite").json(folder + "/shoppers")
        shoppers = spark.read.json(folder + "/shoppers")"""
    ),
}
# The near misses: real rows, or a file this module did not write.
READ = {
    "table": 'spark.read.table("shoppers")',
    "another path": textwrap.dedent(
        """\
        spark.range(40).withColumnRenamed("id", "shopper")
        shoppers.write.mode("overwrite").json(folder + "/shoppers")
        shoppers = spark.read.json(folder + "/customers")"""
    ),
    "one side real": 'spark.range(40).join(spark.read.table("accounts"), "id")',
}
ASSUMED = (
    "it matters which row pairs with which, though every row joined here is made up (`spark.range`, "
    "literal rows, a rate stream, or a file this module wrote from them)"
)


def _zip_findings(shoppers: str):
    source = GENERATOR.format(shoppers=shoppers)
    if "folder" in shoppers:
        source = source.replace("spark = ", 'folder = "/tmp/demo"\nspark = ', 1)
    found = sorted((f for f in analyze("job.py", source) if f.rule_id == "SPX105"), key=lambda f: f.span.line)
    offset = source.count("\n", 0, source.index("numbered =")) + 1 - 6
    return [(f.span.line - offset, f.span.column, f) for f in found]


@pytest.mark.parametrize("shoppers", MADE_UP.values(), ids=MADE_UP.keys())
def test_a_zip_of_made_up_rows_assumes_the_pairing_matters(shoppers):
    found = _zip_findings(shoppers)
    assert [(line, column) for line, column, _ in found] == [(6, 73), (7, 37)]
    for _, _, finding in found:
        assert finding.confidence is Confidence.MEDIUM
        assert finding.links.assumed == (ASSUMED,)
        assert finding.message.endswith(f"(holds if {ASSUMED})")


@pytest.mark.parametrize("shoppers", READ.values(), ids=READ.keys())
def test_the_same_zip_over_rows_read_from_storage_stays_high(shoppers):
    found = _zip_findings(shoppers)
    assert [(line, column) for line, column, _ in found] == [(6, 73), (7, 37)]
    assert all(f.confidence is Confidence.HIGH and not f.links.assumed for _, _, f in found)


def test_the_default_run_hides_the_made_up_zip(sparkpar_cli, tmp_path, monkeypatch):
    monkeypatch.delenv("SPARKPAR_MIN_CONFIDENCE", raising=False)
    (tmp_path / "gen.py").write_text(GENERATOR.format(shoppers=MADE_UP["literal rows"]))
    shown = sparkpar_cli("lint", "--select", "SPX105", "--no-cache", "gen.py")
    assert shown.exit_code == 0 and "2 findings below high confidence not shown" in shown.output, shown.output
    everything = sparkpar_cli("lint", "--select", "SPX105", "--min-confidence", "low", "--format", "json", "gen.py")
    assert [f["confidence"] for f in json.loads(everything.stdout)] == ["medium", "medium"]
