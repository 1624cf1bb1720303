"""The operator catalogue is well formed and names real PySpark APIs."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from sparkpar_lint.catalogue import Catalogue, CatalogueError, load_catalogue, parse_catalogue_file

CLASSES = {
    "DataFrame": "pyspark.sql.dataframe.DataFrame",
    "GroupedData": "pyspark.sql.group.GroupedData",
    "CoGroupedData": "pyspark.sql.pandas.group_ops.PandasCogroupedOps",
    "RDD": "pyspark.rdd.RDD",
    "DStream": "pyspark.streaming.dstream.DStream",
    "SparkSession": "pyspark.sql.session.SparkSession",
    "SparkContext": "pyspark.context.SparkContext",
    "StreamingContext": "pyspark.streaming.context.StreamingContext",
    "Reader": "pyspark.sql.readwriter.DataFrameReader",
    "StreamReader": "pyspark.sql.streaming.readwriter.DataStreamReader",
    "Writer": "pyspark.sql.readwriter.DataFrameWriter",
    "StreamWriter": "pyspark.sql.streaming.readwriter.DataStreamWriter",
    "WindowSpec": "pyspark.sql.window.WindowSpec",
}


def _class(path: str):
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def test_catalogue_loads_with_operators_of_every_receiver():
    catalogue = load_catalogue()
    assert {receiver for receiver, _ in catalogue.operators} == set(CLASSES)
    assert catalogue.functions["first"].order_sensitive


@pytest.mark.parametrize("receiver", sorted(CLASSES))
def test_every_operator_is_a_real_pyspark_api(receiver):
    cls = _class(CLASSES[receiver])
    methods = sorted(m for r, m in load_catalogue().operators if r == receiver)
    assert [m for m in methods if not hasattr(cls, m)] == []


def test_every_function_is_a_real_pyspark_function():
    functions = importlib.import_module("pyspark.sql.functions")
    assert [name for name in load_catalogue().functions if not hasattr(functions, name)] == []


def test_operators_that_take_functions_name_their_role():
    specs = list(load_catalogue().operators.values())
    for spec in specs:
        assert bool(spec.functions) == bool(spec.function_role), spec.api
    # Strict: the shuffle check below must have sorts to check.
    total_sorts = [spec for spec in specs if spec.order_effect == "establishes-total"]
    assert total_sorts
    assert [spec.api for spec in total_sorts if not spec.shuffle] == []


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('receiver = "Nope"\n', "receiver 'Nope'"),
        ('receiver = "DataFrame"\n[x]\nstate = "sometimes"\n', "state = 'sometimes'"),
        ('receiver = "DataFrame"\n[x]\ncolour = "red"\n', "unknown field 'colour'"),
        ('receiver = "DataFrame"\n[x]\nalias_of = "y"\n', "alias of unknown 'y'"),
        ('receiver = "DataFrame"\n[x]\nfunctions = [0]\n', "without function_role"),
        ('receiver = "functions"\n[x]\norder_sensitive = "yes"\n', "must be true or false"),
    ],
)
def test_malformed_entries_are_rejected_with_the_entry_named(text, problem):
    with pytest.raises(CatalogueError, match=problem.replace("(", r"\(").replace("[", r"\[")):
        parse_catalogue_file("bad.toml", text, Catalogue())


def test_the_linter_never_imports_pyspark(tmp_path):
    code = (
        "import sys\n"
        "from sparkpar_lint.analysis import analyze\n"
        'src = \'import pyspark.sql.functions as F\\nspark.read.parquet("p").groupBy("k").agg(F.first("v"))\\n\'\n'
        "assert analyze('job.py', src)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j', 'pandas')))\n"
    )
    # Run from elsewhere: `python -c` puts its working directory first on sys.path.
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert result.stdout.strip() == "[]"
