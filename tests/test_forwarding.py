"""The forwarding analysis (graph/forwarding.py): does a key survive a stage unchanged?"""

from __future__ import annotations

import libcst as cst
import pytest

from sparkpar_lint.graph.builder import build_graph
from sparkpar_lint.graph.forwarding import CHANGED, KEPT, UNKNOWN, key_forwarding, stale_partitioning
from sparkpar_lint.graph.passed_function import UserFunction
from sparkpar_lint.model import Span


def _function(source: str, role: str = "row") -> UserFunction:
    module = cst.parse_module(source)
    node = module.body[0]
    if isinstance(node, cst.SimpleStatementLine):
        node = node.body[0].value
    return UserFunction("f", node, Span(1, 0, 1, 0), role)


@pytest.mark.parametrize(
    ("source", "role", "many", "expected"),
    [
        ("f = lambda kv: (kv[0], kv[1] * 2)", "row", False, KEPT),
        ("f = lambda kv: kv", "row", False, KEPT),
        ("f = lambda kv: (kv[1], kv[0])", "row", False, CHANGED),
        ("f = lambda kv: (kv[0].lower(), kv[1])", "row", False, CHANGED),
        ("f = lambda kv: swap(kv)", "row", False, UNKNOWN),
        ("def f(kv):\n    k, v = kv\n    return (k, v + 1)\n", "row", False, KEPT),
        (
            "def f(kv):\n    key = kv[0]\n    if kv[1]:\n        return (key, 1)\n    return (kv[1], 0)\n",
            "row",
            False,
            CHANGED,
        ),
        ("def f(part):\n    for k, v in part:\n        yield k, v * 2\n", "partition", False, KEPT),
        ("def f(part):\n    for kv in part:\n        yield kv\n", "partition", False, KEPT),
        ("def f(part):\n    return [(v, k) for k, v in part]\n", "partition", False, CHANGED),
        ("def f(i, part):\n    for k, v in part:\n        yield k, (i, v)\n", "partition-with-index", False, KEPT),
        ("f = lambda kv: [(kv[0], x) for x in kv[1]]", "row", True, KEPT),
        ("f = lambda kv: [(w, 1) for w in kv[1].split()]", "row", True, CHANGED),
    ],
)
def test_key_forwarding(source, role, many, expected):
    assert key_forwarding(_function(source, role), many) == expected


def _graph(source: str):
    return build_graph(cst.parse_module(source), "t.py")


_PRELUDE = (
    "from pyspark.sql import SparkSession, functions as F\n"
    "spark = SparkSession.builder.getOrCreate()\n"
    "def f(it):\n    return it\n"
)


@pytest.mark.parametrize(
    ("chain", "breaker"),
    [
        ('.repartition(8, "k").withColumn("k", F.lower("k"))', "withColumn"),
        ('.repartition(8, "k").withColumnRenamed("k", "key")', "withColumnRenamed"),
        ('.repartition(8, "k").drop("k")', "drop"),
        ('.repartition(8, "k").select(F.col("k2").alias("k"), "v")', "select"),
        ('.repartition(8, "k").withColumns({"k": F.lit(1)})', "withColumns"),
        ('.repartition(8, "k").withColumnsRenamed({"k": "key"})', "withColumnsRenamed"),
        # A mapping held in a name: the renamed columns are unknown, and no key is claimed changed.
        ('.repartition(8, "k").withColumnsRenamed(renames)', None),
        ('.repartition(8, "k").withColumn("v", F.lit(1)).select("k", "v")', None),
        ('.repartition(8, "k").select("*")', None),
        ('.withColumn("k", F.lower("k")).repartition(8, "k")', None),
        ('.repartition(8).withColumn("k", F.lower("k"))', None),
    ],
)
def test_stale_partitioning(chain, breaker):
    graph = _graph(_PRELUDE + f'spark.read.parquet("p"){chain}.mapInPandas(f, "k string")\n')
    consumer = next(n for n in graph.nodes if n.method == "mapInPandas")
    stale = stale_partitioning(graph, consumer)
    if breaker is None:
        assert stale is None
    else:
        partitioner, found, keys = stale
        assert (partitioner.method, found.method, keys) == ("repartition", breaker, ("k",))
