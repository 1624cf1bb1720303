"""`sparkpar profile`: prefix slicing of job() (no Spark) and one recorded profile fed to `plan`."""

import json
import subprocess
import sys
import textwrap

import libcst as cst
import pytest
from click.testing import CliRunner

from sparkpar_lint.graph.builder import build_graph
from sparkpar_lint.plan.command import plan
from sparkpar_lint.plan.profile import load_profile
from sparkpar_lint.plan.profile_command import ProfileError, profile, slice_job

JOB = textwrap.dedent('''\
    from pyspark.sql import DataFrame, functions as F

    INPUTS = {"orders": [{"id": i, "shop": f"s{i % 5}", "amount": i % 13} for i in range(400)]}
    SCHEMA = {"orders": "id long, shop string, amount long"}


    def job(spark, orders: DataFrame):
        """Revenue per shop of the big orders."""
        big = orders.filter(F.col("amount") > 6)
        tagged = big.withColumn("double", F.col("amount") * 2)
        per_shop = (
            tagged.groupBy("shop")
            .agg(F.sum("double").alias("revenue"))
        )
        result = per_shop.orderBy("shop")
        return result
''')

HEAD = 'def job(spark, orders: DataFrame):\n    """Revenue per shop of the big orders."""\n'
BIG = '    big = orders.filter(F.col("amount") > 6)\n'
TAGGED = '    tagged = big.withColumn("double", F.col("amount") * 2)\n'
PER_SHOP = '    per_shop = (\n        tagged.groupBy("shop")\n        .agg(F.sum("double").alias("revenue"))\n    )\n'


def test_each_operator_is_the_job_cut_before_its_statement_returning_its_call():
    slices = slice_job(JOB, "job.py")
    assert [p.name for p in slices.prefixes] == ["filter:9", "withColumn:10", "groupBy:12", "agg:13", "orderBy:15"]
    sources = [p.source for p in slices.prefixes]
    assert sources[0] == HEAD + '    return (orders.filter(F.col("amount") > 6))\n'
    assert sources[1] == HEAD + BIG + '    return (big.withColumn("double", F.col("amount") * 2))\n'
    assert sources[2] == HEAD + BIG + TAGGED + '    return (tagged.groupBy("shop"))\n'
    assert sources[3] == HEAD + BIG + TAGGED + PER_SHOP.replace("    per_shop = ", "    return ")
    assert sources[4] == HEAD + BIG + TAGGED + PER_SHOP + '    return (per_shop.orderBy("shop"))\n'
    assert slices.baseline == HEAD + "    return (orders)\n"
    for source in sources:
        compile(source, "prefix", "exec")


def test_a_call_cut_out_of_a_multi_line_chain_is_bracketed_so_it_parses():
    source = JOB.replace(
        '        .agg(F.sum("double").alias("revenue"))\n',
        '        .agg(F.sum("double").alias("revenue"))\n        .filter("revenue > 0")\n',
    )
    agg = slice_job(source, "job.py").prefixes[3]
    assert agg.name == "agg:13"
    assert agg.source.endswith('    return (tagged.groupBy("shop")\n        .agg(F.sum("double").alias("revenue")))\n')
    compile(agg.source, "prefix", "exec")


def test_names_are_the_stage_graphs_method_and_line():
    graph = build_graph(cst.parse_module(JOB), "job.py")
    names = {f"{n.method}:{n.span.line}" for n in graph.nodes}
    assert {p.name for p in slice_job(JOB, "job.py").prefixes} == names


def test_statements_joined_by_semicolons_are_cut_between():
    source = JOB.replace(
        BIG + TAGGED,
        '    big = orders.filter(F.col("amount") > 6); tagged = big.withColumn("double", F.col("amount") * 2)\n',
    )
    withcolumn = slice_job(source, "job.py").prefixes[1]
    assert withcolumn.source.splitlines()[2:] == [
        '    big = orders.filter(F.col("amount") > 6)',
        '    return (big.withColumn("double", F.col("amount") * 2))',
    ]


def test_a_file_without_job_is_named_in_the_error():
    with pytest.raises(ProfileError, match=r"jobs/x\.py: no top-level `def job"):
        slice_job("import os\n", "jobs/x.py")


@pytest.mark.parametrize(
    "text, problem",
    [
        ("x = 1\n", "no top-level `def job"),
        (JOB.replace("INPUTS = ", "ROWS = "), "no INPUTS"),
        ("def job(:\n", "cannot parse"),
    ],
)
def test_bad_job_files_exit_2_with_one_line_naming_the_file(tmp_path, text, problem):
    path = tmp_path / "bad_job.py"
    path.write_text(text)
    result = CliRunner().invoke(profile, [str(path)])
    assert result.exit_code == 2
    assert result.output.startswith(f"sparkpar: error: {path}:")
    assert problem in result.output and "Traceback" not in result.output


def test_the_cli_and_the_slicer_never_import_pyspark(tmp_path):
    code = (
        "import sys\nimport sparkpar_lint.cli\n"
        "from sparkpar_lint.plan.profile_command import slice_job\n"
        f"slice_job({JOB!r}, 'job.py')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')))\n"
    )
    # From elsewhere: `python -c` puts its working directory (the checkout) first on sys.path.
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert result.stdout.strip() == "[]"


@pytest.mark.spark
def test_a_recorded_profile_matches_the_graph_and_plans(cluster_spark, tmp_path):
    job = tmp_path / "job.py"
    job.write_text(JOB)
    out = tmp_path / "profile.json"
    shuffle_before = cluster_spark.conf.get("spark.sql.shuffle.partitions")
    result = CliRunner().invoke(profile, [str(job), "-o", str(out), "--repeats", "1"])
    assert result.exit_code == 0, result.output
    assert cluster_spark.conf.get("spark.sql.shuffle.partitions") == shuffle_before  # restored

    recorded = load_profile(out)
    rows = {row.name: row for row in recorded.rows}
    graph = build_graph(cst.parse_module(JOB), str(job))
    assert set(rows) == {f"{n.method}:{n.span.line}" for n in graph.nodes}
    big = sum(1 for i in range(400) if i % 13 > 6)
    assert (rows["filter:9"].rows_in, rows["filter:9"].rows_out) == (400, big)
    assert rows["filter:9"].rows_out < rows["filter:9"].rows_in
    assert rows["groupBy:12"].seconds == 0.0  # GroupedData: measured with agg
    assert (rows["agg:13"].rows_in, rows["agg:13"].rows_out) == (big, 5)

    planned = CliRunner().invoke(plan, [str(job), "--profile", str(out), "--cores", "2", "--format", "json"])
    assert planned.exit_code == 0, planned.output
    report = json.loads(planned.output)
    assert isinstance(report["throughput"], float) and report["throughput"] > 0


@pytest.mark.spark
def test_a_job_that_raises_exits_2_naming_the_file(cluster_spark, tmp_path):
    job = tmp_path / "broken.py"
    job.write_text(JOB.replace('F.col("amount") > 6', 'F.col("no_such_column") > 6'))
    result = CliRunner().invoke(profile, [str(job), "--repeats", "1"])
    assert result.exit_code == 2
    assert result.output.startswith(f"sparkpar: error: {job}: the job failed: ")
    assert "Traceback" not in result.output
