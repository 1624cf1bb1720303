"""Long code is normal: chains of hundreds of calls, thousands of statements and terms are
analysed, not refused; brackets nested past CPython's limit are one SPX901, never a crash."""

from __future__ import annotations

import json

from samples import BAD_JOB

HEADER = 'from pyspark.sql import SparkSession, functions as F\nspark = SparkSession.builder.getOrCreate()\ndf = spark.read.parquet("x")\n'
TAIL = 'out = df.groupBy("k").agg(F.first("v").alias("v"))\n'


def chain_job(calls: int) -> str:
    links = "".join(f"    .withColumn('c{i}', F.lit({i}))\n" for i in range(calls))
    return HEADER + "df = (df\n" + links + ")\n" + TAIL


def test_chain_of_300_calls_is_analysed(sparkpar_cli, tmp_path):
    # Used to fail past ~180 calls with "nesting too deep to analyse".
    (tmp_path / "chain.py").write_text(chain_job(300))
    result = sparkpar_cli("lint", "chain.py", "--format", "concise", "--select", "SPX101", "--no-cache")
    assert result.stderr == ""
    assert result.exit_code == 1 and result.stdout.startswith("chain.py:306:")


def test_3000_flat_with_column_statements_are_analysed(sparkpar_cli, tmp_path):
    body = "".join(f"df = df.withColumn('c{i}', F.lit({i}))\n" for i in range(3000))
    (tmp_path / "flat.py").write_text(HEADER + body + TAIL)
    result = sparkpar_cli("lint", "flat.py", "--format", "concise", "--select", "SPX101", "--no-cache")
    assert result.stderr == "" and result.stdout.startswith("flat.py:3004:")


def test_sum_of_500_columns_is_analysed(sparkpar_cli, tmp_path):
    # LibCST's own parse grows quadratically with one expression's length (1,000 terms: ~10 s).
    total = " + ".join(f"F.col('c{i}')" for i in range(500))
    (tmp_path / "sum.py").write_text(HEADER + f"df = df.withColumn('total', {total})\n" + TAIL)
    result = sparkpar_cli("lint", "sum.py", "--format", "concise", "--select", "SPX101", "--no-cache")
    assert result.stderr == "" and result.stdout.startswith("sum.py:5:")


def test_graph_of_a_long_chain_has_every_stage(sparkpar_cli, tmp_path):
    # `graph` showed a RecursionError traceback here.
    (tmp_path / "chain.py").write_text(chain_job(300))
    result = sparkpar_cli("graph", "chain.py", "--format", "json")
    assert result.exit_code == 0, result.output
    methods = [node["api"] for node in json.loads(result.stdout)["nodes"]]
    assert methods.count("DataFrame.withColumn") == 300


def test_brackets_nested_past_the_limit_are_spx901_and_other_files_are_checked(sparkpar_cli, tmp_path):
    # 5,000 nested brackets used to kill the process inside LibCST's native parser (SIGSEGV).
    (tmp_path / "deep.py").write_text("# spark\nx = " + "(" * 5000 + "1" + ")" * 5000 + "\n")
    (tmp_path / "bad.py").write_text(BAD_JOB)
    result = sparkpar_cli("lint", ".", "--format", "concise", "--select", "SPX101,SPX901", "--no-cache")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith("bad.py:5:")
    assert lines[1] == "deep.py:2:205: SPX901 too deeply nested to analyse (more than 200 nested brackets)"


def test_prefix_operators_past_the_limit_are_spx901_and_other_files_are_checked(sparkpar_cli, tmp_path):
    # 50,000 unary minuses ran to the 120 s --file-timeout in LibCST's parser; 20,000 `not`s
    # crashed it (SIGABRT) in `graph`.
    (tmp_path / "minus.py").write_text("# spark\nx = " + "-" * 50_000 + "1\n")
    (tmp_path / "nots.py").write_text("# spark\nx = " + "not " * 20_000 + "1\n")
    (tmp_path / "bad.py").write_text(BAD_JOB)
    result = sparkpar_cli("lint", ".", "--format", "concise", "--select", "SPX101,SPX901", "--no-cache")
    assert result.stderr == "" and result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith("bad.py:5:")
    assert lines[1:] == [
        "minus.py:2:205: SPX901 too deeply nested to analyse (more than 200 prefix operators in a row)",
        "nots.py:2:805: SPX901 too deeply nested to analyse (more than 200 prefix operators in a row)",
    ]
    graph = sparkpar_cli("graph", "nots.py")
    assert graph.exit_code == 2
    assert (
        graph.stderr
        == "sparkpar: error: nots.py:2:805: too deeply nested to analyse (more than 200 prefix operators in a row)\n"
    )


def test_brackets_at_the_limit_still_parse(sparkpar_cli, tmp_path):
    (tmp_path / "edge.py").write_text("# spark\nx = " + "(" * 200 + "1" + ")" * 200 + "\n")
    result = sparkpar_cli("lint", "edge.py", "--format", "concise", "--no-cache")
    assert result.exit_code == 0, result.output


def test_3000_call_chain_is_analysed_with_its_finding_at_the_end(sparkpar_cli, tmp_path):
    # LibCST's own parse of this one expression takes minutes (a --file-timeout error before);
    # it is parsed in segments now, to the same tree, so the span is exact.
    source = chain_job(3000).replace(")\n" + TAIL, "    .groupBy('k').agg(F.first('v').alias('v'))\n)\n")
    (tmp_path / "chain.py").write_text(source)
    result = sparkpar_cli("lint", "chain.py", "--format", "json", "--select", "SPX101", "--no-cache")
    assert result.stderr == "" and result.exit_code == 1
    (finding,) = json.loads(result.stdout)
    assert (finding["line"], finding["column"], finding["end_line"], finding["end_column"]) == (3005, 22, 3005, 34)
    assert source.splitlines()[3004][22:34] == "F.first('v')"
    graph = sparkpar_cli("graph", "chain.py", "--format", "json")
    assert graph.exit_code == 0, graph.output
    methods = [node["api"] for node in json.loads(graph.stdout)["nodes"]]
    assert methods.count("DataFrame.withColumn") == 3000


def test_fix_at_the_end_of_a_1000_call_chain(sparkpar_cli, tmp_path):
    # The chain is parsed in segments (past long_chains.LONG_CHAIN); the fix lands at its end and
    # every other line of the file is kept.
    source = chain_job(1000).replace(")\n" + TAIL, "    .groupBy('k').agg(F.first('v').alias('v'))\n)\n")
    (tmp_path / "chain.py").write_text(source)
    result = sparkpar_cli("fix", "chain.py", "--unsafe-fixes", "--select", "SPX101")
    assert result.exit_code == 0, result.output
    fixed = (tmp_path / "chain.py").read_text().splitlines()
    lines = source.splitlines()
    assert fixed[:1004] == lines[:1004] and fixed[-1] == lines[-1] == ")"
    assert fixed[1004:-1] == [
        "    .withColumn('_sparkpar_seq', F.monotonically_increasing_id())",
        "    .groupBy('k').agg(F.min(F.struct('_sparkpar_seq', 'v')).getField('v').alias('v'))",
    ]


def test_3000_aggregates_of_one_sorted_frame_are_all_reported(sparkpar_cli, tmp_path):
    # Each finding's fix used to walk the whole module: 1,000 such lines took minutes, 3,000
    # ran past the file budget and were reported "not checked".
    lines = "".join(f"o{i} = df.orderBy('ts').groupBy('k').agg(F.first('v'))\n" for i in range(3000))
    (tmp_path / "fan.py").write_text(HEADER + lines)
    result = sparkpar_cli("lint", "fan.py", "--format", "json", "--select", "SPX101", "--no-cache")
    assert result.stderr == ""
    assert [f["line"] for f in json.loads(result.stdout)] == list(range(4, 3004))


def test_a_query_of_1000_union_alls_is_reported_at_every_select(sparkpar_cli, tmp_path):
    # Each finding's fix used to decode and scan the whole query again.
    query = " UNION ALL ".join(f"SELECT k, first(v) AS v FROM t{i} GROUP BY k" for i in range(1000))
    (tmp_path / "union.py").write_text(HEADER + f'out = spark.sql("{query}")\n')
    result = sparkpar_cli("lint", "union.py", "--format", "json", "--select", "SPX101", "--no-cache")
    assert result.stderr == ""
    findings = json.loads(result.stdout)
    assert len(findings) == 1000 and {f["line"] for f in findings} == {4}


def test_a_sql_file_of_3000_statements_is_reported_at_every_one(sparkpar_cli, tmp_path):
    statement = "CREATE OR REPLACE TEMP VIEW v{i} AS SELECT k, first(v) AS f FROM t GROUP BY k;\n"
    (tmp_path / "views.sql").write_text("".join(statement.format(i=i) for i in range(3000)))
    result = sparkpar_cli("lint", "views.sql", "--format", "json", "--select", "SPX101", "--no-cache")
    assert result.stderr == ""
    assert [f["line"] for f in json.loads(result.stdout)] == list(range(1, 3001))
