"""The stage graph follows Spark values through the ways real code moves them."""

from __future__ import annotations

import json
import textwrap

import libcst as cst
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from sparkpar_lint.graph.builder import _string_value, build_graph
from sparkpar_lint.graph.render import render_graph

HEAD = "from pyspark.sql import SparkSession, Window\nimport pyspark.sql.functions as F\nspark = SparkSession.builder.getOrCreate()\n"


def graph_of(code: str, head: str = HEAD):
    return build_graph(cst.parse_module(head + textwrap.dedent(code)), "job.py")


def apis(graph) -> list[str]:
    return [node.api for node in graph.nodes]


def only(graph, api: str):
    matches = [n for n in graph.nodes if n.api == api]
    assert len(matches) == 1, apis(graph)
    return matches[0]


def test_method_chain_split_across_lines_and_variables():
    graph = graph_of(
        """
        df = spark.read.parquet("events")
        df = df.filter(F.col("v") > 0)
        out = (
            df.orderBy("ts")
              .groupBy("user")
        )
        result = out.agg(F.first("page"))
        """
    )
    assert apis(graph) == [
        "Reader.parquet",
        "DataFrame.filter",
        "DataFrame.orderBy",
        "DataFrame.groupBy",
        "GroupedData.agg",
    ]
    agg = only(graph, "GroupedData.agg")
    assert [n.method for n in graph.upstream(agg)] == ["groupBy", "orderBy", "filter", "parquet"]
    assert agg.keys == ("user",)
    assert agg.state == "partitioned(user)"


def test_data_trace_types_of_edges():
    graph = graph_of(
        """
        df = spark.read.parquet("events")
        a = df.orderBy("ts")
        b = a.groupBy("k").count()
        c = df.repartition(8, "k").sortWithinPartitions("ts")
        d = df.sortWithinPartitions("ts")
        """
    )
    assert only(graph, "Reader.parquet").output_order.kind == "sequence"
    assert only(graph, "DataFrame.orderBy").output_order.kind == "total"
    assert only(graph, "DataFrame.groupBy").input_order.kind == "total"
    assert only(graph, "DataFrame.groupBy").output_order.kind == "unordered"
    per_key, within = [n for n in graph.nodes if n.method == "sortWithinPartitions"]
    assert (per_key.output_order.kind, per_key.output_order.keys, per_key.output_order.by) == (
        "per-key",
        ("k",),
        ("ts",),
    )
    assert within.output_order.kind == "within-partition"


@pytest.mark.parametrize(
    ("call", "kind", "keys"),
    [
        ("repartition(8)", "round-robin", ()),
        ('repartition(8, "k")', "hash", ("k",)),
        ('repartition("k", "j")', "hash", ("k", "j")),
        ("coalesce(1)", "single", ()),
        ("repartition(1)", "single", ()),
        ('repartitionByRange(4, "ts")', "range", ("ts",)),
        ('withColumn("x", F.lit(1))', "source", ()),
    ],
)
def test_partitioning_effects(call, kind, keys):
    graph = graph_of(f'spark.read.parquet("p").{call}\n')
    partitioning = graph.nodes[-1].output_partitioning
    assert (partitioning.kind, partitioning.keys) == (kind, keys)


def test_helper_functions_are_inlined_with_their_arguments():
    graph = graph_of(
        """
        def load(session):
            return session.readStream.format("kafka").load()

        def enrich(frame, column):
            return frame.withColumn(column, F.lit(1)).orderBy("ts")

        stream = enrich(load(spark), "x")
        stream.groupBy("k").agg(F.last("v"))
        """
    )
    agg = only(graph, "GroupedData.agg")
    chain = [n.api for n in graph.upstream(agg)]
    assert chain == ["DataFrame.groupBy", "DataFrame.orderBy", "DataFrame.withColumn", "StreamReader.load"]
    assert agg.streaming


def test_helper_analysed_alone_when_never_called():
    graph = graph_of(
        """
        def latest(df):
            return df.groupBy("user").agg(F.first("page"))
        """
    )
    assert apis(graph) == ["DataFrame.groupBy", "GroupedData.agg"]


@pytest.mark.parametrize(
    "head",
    [
        "import pyspark.sql.functions as fn\n",
        "from pyspark.sql import functions as fn\n",
        "from pyspark.sql import functions\nfn = functions\n",
        "import pyspark.sql.functions\nfn = pyspark.sql.functions\n",
        "from pyspark.sql.connect import functions as fn\n",
    ],
)
def test_every_import_form_of_the_functions_module(head):
    graph = graph_of('df = spark.read.parquet("p")\ndf.groupBy("k").agg(fn.first("v"))\n', head=HEAD + head)
    assert [c.function for c in only(graph, "GroupedData.agg").columns.calls] == ["first"]


def test_direct_aliased_and_star_imports():
    aliased = graph_of(
        'spark.read.parquet("p").groupBy("k").agg(f1("v"))\n', HEAD + "from pyspark.sql.functions import first as f1\n"
    )
    star = graph_of(
        'spark.read.parquet("p").groupBy("k").agg(first("v"))\n', HEAD + "from pyspark.sql.functions import *\n"
    )
    for graph in (aliased, star):
        call = only(graph, "GroupedData.agg").columns.calls[0]
        assert call.function == "first" and call.spec.order_sensitive


def test_local_names_shadow_imports():
    graph = graph_of(
        """
        def first(values):
            return values[0]
        spark.read.parquet("p").groupBy("k").agg(first(["v"]))
        """,
        head=HEAD + "from pyspark.sql.functions import first\n",
    )
    assert only(graph, "GroupedData.agg").columns.calls == ()


def test_window_specs_and_columns_held_in_variables_and_helpers():
    graph = graph_of(
        """
        def by_user():
            return Window.partitionBy("user")
        w = by_user().orderBy("ts")
        unordered = Window.partitionBy("user")
        rank = F.row_number().over(w)
        earliest = F.first("page").over(unordered)
        spark.read.parquet("p").select(rank, earliest)
        """
    )
    calls = {c.function: c for c in only(graph, "DataFrame.select").columns.calls}
    assert calls["row_number"].window.order_by == ("ts",) and calls["row_number"].window.partition_by == ("user",)
    assert calls["first"].window.has_partition and not calls["first"].window.has_order


def test_nested_column_functions_know_their_wrappers():
    graph = graph_of('spark.read.parquet("p").groupBy("k").agg(F.array_sort(F.collect_list(F.struct("ts", "v"))))\n')
    calls = {c.function: c for c in only(graph, "GroupedData.agg").columns.calls}
    assert calls["collect_list"].enclosing == ("array_sort",)
    assert calls["struct"].enclosing == ("array_sort", "collect_list")


def test_rdd_and_dstream_operators_and_user_functions():
    graph = graph_of(
        """
        from pyspark.streaming import StreamingContext
        seen = {}
        def remember(kv):
            seen[kv[0]] = kv[1]
            return kv
        pairs = spark.sparkContext.parallelize([(1, 2)]).map(remember).reduceByKey(lambda a, b: a + b)
        ssc = StreamingContext(spark.sparkContext, 1)
        ssc.socketTextStream("localhost", 9999).map(lambda line: (line, 1)).updateStateByKey(lambda new, old: new)
        """
    )
    mapped = only(graph, "RDD.map")
    assert mapped.functions[0].name == "remember" and mapped.state == "unknown"
    reduced = only(graph, "RDD.reduceByKey")
    assert reduced.functions[0].role == "combiner" and reduced.output_partitioning.kind == "hash"
    assert only(graph, "DStream.updateStateByKey").streaming


def test_parameters_typed_by_use_or_annotation():
    graph = graph_of(
        """
        from pyspark.sql import DataFrame
        def a(frame):
            return frame.withColumn("x", F.lit(1))
        def b(frame: DataFrame):
            return frame.filter("x > 1")
        def c(pdf):
            return pdf.groupby("k").head(1)
        """
    )
    assert apis(graph) == ["DataFrame.withColumn", "DataFrame.filter"]


def test_unknown_apis_degrade_to_unknown():
    graph = graph_of('df = spark.read.parquet("p").fancyNewThing(3).groupBy("k").count()\n')
    unknown = only(graph, "DataFrame.fancyNewThing")
    assert unknown.spec is None and unknown.state == "unknown" and unknown.order_effect == "unknown"
    assert only(graph, "GroupedData.count").inputs == [only(graph, "DataFrame.groupBy").id]


def test_selectivity_and_forwarding():
    graph = graph_of(
        """
        df = spark.read.parquet("p")
        df.filter("x > 1")
        df.select(F.explode("items"))
        df.groupBy("k").agg(F.sum("v"))
        """
    )
    assert only(graph, "DataFrame.filter").selectivity == "at-most-one"
    assert only(graph, "DataFrame.select").selectivity == "any"
    assert only(graph, "GroupedData.agg").forwarding == "k"


def test_sql_text_in_expr_and_agg_dict():
    graph = graph_of(
        """
        df = spark.read.parquet("p")
        df.groupBy("k").agg(F.expr("collect_list(v)"), {"w": "first"})
        """
    )
    assert {c.function for c in only(graph, "GroupedData.agg").columns.calls} >= {"collect_list", "first"}


def test_driver_results_and_indexing():
    graph = graph_of('row = spark.read.parquet("p").groupBy("k").count().collect()[0]\n')
    assert only(graph, "DataFrame.collect").indexed


@pytest.mark.parametrize("fmt", ["rich", "mermaid", "dot", "json"])
def test_render_formats(fmt):
    source = HEAD + 'spark.read.parquet("p").orderBy("ts").groupBy("k").agg(F.first("v"))\n'
    text = render_graph("job.py", source, fmt)
    if fmt == "json":
        nodes = json.loads(text)["nodes"]
        assert [n["api"] for n in nodes] == [
            "Reader.parquet",
            "DataFrame.orderBy",
            "DataFrame.groupBy",
            "GroupedData.agg",
        ]
        assert nodes[3]["order_requirement"] == "per-key" and nodes[2]["input_order"] == "total(by ts)"
    elif fmt == "mermaid":
        assert text.startswith("flowchart LR") and "n2 -->|unordered| n3" in text
    elif fmt == "dot":
        assert text.startswith("digraph stages {") and 'n1 -> n2 [label="total(by ts)"]' in text
    else:
        assert "GroupedData.agg" in text and "state=partitioned(k)" in text


def test_coalesce_to_one_partition_keeps_a_total_order():
    graph = graph_of('df = spark.read.parquet("p").orderBy("ts")\ndf.coalesce(1)\ndf.coalesce(4)\n')
    one, four = [n for n in graph.nodes if n.method == "coalesce"]
    assert one.output_order.kind == "total" and four.output_order.kind == "unordered"


def test_computed_grouping_key_is_one_key_not_its_string_arguments():
    # `window("ts", "10 minutes")` groups by one computed column; "10 minutes" is no column.
    graph = graph_of(
        """
        clicks = spark.read.parquet("clicks")
        counts = clicks.groupBy(F.window("ts", "10 minutes"), F.col("ad")).count()
        monthly = clicks.repartition(4, F.date_format("ts", "yyyy-MM")).dropDuplicates(["ad"])
        ranked = clicks.orderBy(F.desc("ts"), F.length("ad"))
        """
    )
    count = only(graph, "GroupedData.count")
    assert count.keys == ('F.window("ts", "10 minutes")', "ad")
    assert count.output_partitioning.keys == ('F.window("ts", "10 minutes")', "ad")
    assert only(graph, "DataFrame.repartition").keys == ('F.date_format("ts", "yyyy-MM")',)
    # Sort keys stay the columns they sort by, which the order rules compare with other columns.
    assert only(graph, "DataFrame.orderBy").keys == ("ts", "ad")


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::SyntaxWarning")
@settings(max_examples=400, deadline=None)
@given(
    prefix=st.sampled_from(["", "r", "u", "R", "b", "rb"]),
    quote=st.sampled_from(['"', "'", '"""', "'''"]),
    body=st.text(alphabet="ab '\"\\\n\r\t\0é{}", max_size=8),
)
def test_string_literals_read_as_python_reads_them(prefix, quote, body):
    """The builder reads plain literals off the text; the value must be literal_eval's."""
    try:
        expr = cst.parse_expression(prefix + quote + body + quote)
    except Exception:
        assume(False)
    assume(isinstance(expr, cst.SimpleString))
    try:
        expected = expr.evaluated_value
    except Exception as error:  # NUL, bad escapes in bytes: the fast path must not hide it
        with pytest.raises(type(error)):
            _string_value(expr)
        return
    got = _string_value(expr)
    assert (type(got), got) == (type(expected), expected)
