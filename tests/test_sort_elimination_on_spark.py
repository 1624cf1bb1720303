"""SPX107 stays silent on a sort Spark's optimizer removes; check that Spark really removes it.

The rule skips a DataFrame or SQL sort followed only by a join, `distinct`, a later sort or an
aggregation reading no order (graph/order_flow.optimizer_drops). Each shape below is linted and
its optimized plan read on real Spark: a shape the rule skips must have lost the sort, one it
reports must still be sorting or read the lost order.
"""

from __future__ import annotations

import pytest

from sparkpar_lint.analysis import analyze

pyspark = pytest.importorskip("pyspark")

from pyspark.sql import functions as F  # noqa: E402

PRELUDE = (
    "from pyspark.sql import SparkSession, functions as F\n"
    "spark = SparkSession.builder.getOrCreate()\n"
    'legs = spark.table("legs")\n'
    'ports = spark.table("ports")\n'
)
# (shape, the rule reports it)
SHAPES = [
    ('legs.orderBy("departed").join(ports, "port")', False),
    ('legs.orderBy("departed").filter("fuel > 0").groupBy("port").agg(F.max("fuel"), F.count("*"))', False),
    # A floating-point sum depends on the order of addition: Spark keeps the sort.
    ('legs.orderBy("departed").groupBy("port").agg(F.sum("fuel"))', True),
    ('legs.orderBy("departed").select("port").distinct()', False),
    ('legs.orderBy("departed").orderBy("port")', False),
    ('spark.sql("WITH l AS (SELECT * FROM legs ORDER BY departed) SELECT * FROM ports JOIN l USING (port)")', False),
    ('spark.sql("SELECT port, count(*) AS n FROM (SELECT * FROM legs ORDER BY departed) GROUP BY port")', False),
    ('legs.orderBy("departed").groupBy("port").agg(F.last("fuel"))', True),
    ('legs.orderBy("departed").dropDuplicates(["port"])', True),
    ('legs.orderBy("departed").repartition(3)', True),
]


@pytest.fixture(scope="module")
def tables(cluster_spark):
    cluster_spark.createDataFrame(
        [(i, i % 3, float(i)) for i in range(12)], "departed INT, port INT, fuel DOUBLE"
    ).createOrReplaceTempView("legs")
    cluster_spark.createDataFrame([(p, f"port{p}") for p in range(3)], "port INT, name STRING").createOrReplaceTempView(
        "ports"
    )
    yield cluster_spark
    cluster_spark.catalog.dropTempView("legs")
    cluster_spark.catalog.dropTempView("ports")


@pytest.mark.spark
@pytest.mark.parametrize(("shape", "reported"), SHAPES, ids=[s for s, _ in SHAPES])
def test_reported_exactly_where_spark_keeps_the_sort(tables, shape: str, reported: bool):
    source = PRELUDE + f"result = {shape}\n"
    findings = [f for f in analyze("job.py", source) if f.rule_id == "SPX107"]
    assert bool(findings) == reported
    namespace = {"spark": tables, "F": F}
    namespace.update(legs=tables.table("legs"), ports=tables.table("ports"))
    result = eval(shape, namespace)
    plan = result._jdf.queryExecution().optimizedPlan().toString()
    # Every shape sorts once by `departed`; only a later sort of its own may remain when dropped.
    kept = "departed" in "".join(line for line in plan.splitlines() if "Sort [" in line)
    assert kept == reported, plan
