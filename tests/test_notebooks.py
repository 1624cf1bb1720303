"""Jupyter notebooks and Databricks source exports through the real CLI: coordinates, masking,
bad input, and `sparkpar fix` rewriting cells in place."""

from __future__ import annotations

import json

import pytest

FIRST_AFTER_SORT = 'out = df.orderBy("ts").groupBy("k").agg(F.first("v").alias("v"))'
FIXED_LINE = 'out = df.groupBy("k").agg(F.min(F.struct("ts", "v")).getField("v").alias("v"))'


def notebook(*cells: tuple[str, str], indent: int = 1) -> str:
    """A notebook whose code cells carry an output and metadata a fix must keep."""
    raw = []
    for kind, text in cells:
        cell = {"cell_type": kind, "metadata": {"tags": ["keep"]}, "source": text.splitlines(keepends=True)}
        if kind == "code":
            cell |= {"execution_count": 7, "outputs": [{"output_type": "stream", "name": "stdout", "text": ["ok\n"]}]}
        raw.append(cell)
    document = {
        "cells": raw,
        "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(document, indent=indent, ensure_ascii=False) + "\n"


JOB_CELLS = (
    ("markdown", "# Report"),
    (
        "code",
        "%pip install tabulate\n!ls\nfiles = !ls /tmp\nfrom pyspark.sql import functions as F\ndf = spark.read.parquet('x')",
    ),
    ("code", f"%%time\n{FIRST_AFTER_SORT}\nout.show()"),
)
JOB = notebook(*JOB_CELLS)


def lint(cli, *args):
    return cli("lint", "--select", "SPX101,SPX901", *args)


def test_cells_are_reported_as_path_cell_line_column(sparkpar_cli, tmp_path):
    (tmp_path / "job.ipynb").write_text(JOB)
    result = lint(sparkpar_cli, "--format", "concise", "job.ipynb")
    assert result.exit_code == 1, result.output
    # Cell 3 counts the markdown cell; line 2 of that cell, after the `%%time` line.
    assert result.stdout.startswith("job.ipynb:cell 3:2:41: SPX101 ")


def test_json_and_sarif_carry_the_cell(sparkpar_cli, tmp_path):
    (tmp_path / "job.ipynb").write_text(JOB)
    [finding] = json.loads(lint(sparkpar_cli, "--format", "json", "job.ipynb").stdout)
    assert (finding["cell"], finding["line"], finding["column"]) == (3, 2, 40)
    sarif = json.loads(lint(sparkpar_cli, "--format", "sarif", "job.ipynb").stdout)
    [location] = sarif["runs"][0]["results"][0]["locations"]
    assert location["properties"] == {"cell": 3}
    assert location["physicalLocation"]["region"]["startLine"] == 2


def test_rich_output_frames_the_cell_line(sparkpar_cli, tmp_path):
    (tmp_path / "job.ipynb").write_text(JOB)
    result = lint(sparkpar_cli, "job.ipynb")
    assert "job.ipynb:cell 3:2:41" in result.stdout
    assert f"2 | {FIRST_AFTER_SORT}" in result.stdout


def test_directory_walk_includes_notebooks(sparkpar_cli, tmp_path):
    (tmp_path / "nb").mkdir()
    (tmp_path / "nb" / "job.ipynb").write_text(JOB)
    result = lint(sparkpar_cli, "--format", "concise", "nb")
    assert "nb/job.ipynb:cell 3:2:41: SPX101" in result.stdout


def test_other_cell_magics_and_kernels_are_not_python(sparkpar_cli, tmp_path):
    (tmp_path / "job.ipynb").write_text(
        notebook(("code", "%%bash\nfor f in *; do echo $f; done"), ("code", "%%html\n<b>x</b>"))
    )
    result = lint(sparkpar_cli, "job.ipynb")
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", "not a valid notebook: invalid JSON at line 1"),
        ('{"metadata": {}}', "not a valid notebook: it has no cells"),
        ("[1, 2]", "not a valid notebook: it has no cells"),
    ],
)
def test_a_broken_notebook_is_one_error_naming_it(sparkpar_cli, tmp_path, content, message):
    (tmp_path / "bad.ipynb").write_text(content)
    (tmp_path / "good.ipynb").write_text(JOB)
    result = lint(sparkpar_cli, "--format", "concise", "bad.ipynb", "good.ipynb")
    assert result.exit_code == 2
    assert f"bad.ipynb: {message}" in result.stderr
    assert "Traceback" not in result.output
    assert "good.ipynb:cell 3:2:41: SPX101" in result.stdout  # the other file is still checked


def test_a_cell_that_does_not_parse_is_spx901_there_and_noqa_cannot_hide_it(sparkpar_cli, tmp_path):
    (tmp_path / "job.ipynb").write_text(notebook(("code", "def f(:  # noqa\n    pass"), *JOB_CELLS[1:]))
    result = lint(sparkpar_cli, "--format", "concise", "job.ipynb")
    lines = result.stdout.splitlines()
    assert lines[0].startswith("job.ipynb:cell 1:1:7: SPX901 cannot parse cell 1")
    assert lines[1].startswith("job.ipynb:cell 3:2:41: SPX101")


def test_a_cell_in_newer_python_syntax_is_checked_not_reported_unparsable(sparkpar_cli, tmp_path):
    # A backslash inside an f-string's braces is Python 3.12 (PEP 701), what Databricks runtimes
    # run; the interpreter running the linter may be older. A real syntax error stays SPX901.
    newer = "%pip install tabulate\nsep = f\"{',\\n'.join(['a', 'b'])}\"\n" + FIRST_AFTER_SORT
    broken = "del = 400"
    (tmp_path / "job.ipynb").write_text(notebook(JOB_CELLS[1], ("code", newer), ("code", broken)))
    result = lint(sparkpar_cli, "--format", "concise", "job.ipynb")
    lines = result.stdout.splitlines()
    assert lines[0].startswith("job.ipynb:cell 2:3:41: SPX101"), result.output
    assert lines[1].startswith("job.ipynb:cell 3:1:5: SPX901 cannot parse cell 3")


def test_noqa_never_hides_an_unparsable_python_file(sparkpar_cli, tmp_path):
    (tmp_path / "job.py").write_text("import pyspark\nx = (1,  # noqa\n")
    result = lint(sparkpar_cli, "--format", "concise", "job.py")
    assert result.exit_code == 1 and "SPX901" in result.stdout


def test_fix_rewrites_the_cell_in_place_and_keeps_everything_else(sparkpar_cli, tmp_path):
    for indent in (1, 2):
        path = tmp_path / f"job{indent}.ipynb"
        original = notebook(*JOB_CELLS, indent=indent)
        path.write_text(original)
        result = sparkpar_cli("fix", "--select", "SPX101", path.name)
        assert result.exit_code == 0, result.output
        fixed = path.read_text()
        # Only the one source line changed: outputs, metadata, indentation and magics are kept.
        expected = original.replace(json.dumps(FIRST_AFTER_SORT + "\n"), json.dumps(FIXED_LINE + "\n"))
        assert fixed == expected
        assert sparkpar_cli("fix", "--select", "SPX101", path.name).stdout == ""
        assert path.read_text() == expected  # a second run changes nothing


def test_fix_puts_a_needed_import_in_the_first_code_cell(sparkpar_cli, tmp_path):
    path = tmp_path / "job.ipynb"
    path.write_text(
        notebook(
            ("markdown", "intro"),
            ("code", "!pip list\ndf = spark.read.parquet('x')"),
            (
                "code",
                "import pyspark.sql.functions\nout = df.orderBy('ts').groupBy('k').agg(pyspark.sql.functions.first('v').alias('v'))",
            ),
        )
    )
    assert sparkpar_cli("fix", "--select", "SPX101", "job.ipynb").exit_code == 0
    cells = json.loads(path.read_text())["cells"]
    assert "".join(cells[1]["source"]).startswith("!pip list\n")  # the magic came back unchanged
    assert "first(" not in "".join(cells[2]["source"])
    assert cells[0]["source"] == ["intro"]


DATABRICKS = """# Databricks notebook source
# MAGIC %md
# MAGIC # Report

# COMMAND ----------

%pip install tabulate
!ls
from pyspark.sql import functions as F
df = spark.table("events")

# COMMAND ----------

{line}
display(out)
"""


def test_databricks_export_keeps_file_lines_and_masks_magics(sparkpar_cli, tmp_path):
    (tmp_path / "job.py").write_text(DATABRICKS.format(line=FIRST_AFTER_SORT))
    result = lint(sparkpar_cli, "--format", "concise", "job.py")
    assert result.stdout.startswith("job.py:14:41: SPX101 "), result.output
    assert "SPX901" not in result.stdout


def test_databricks_fix_keeps_magics_and_comments(sparkpar_cli, tmp_path):
    path = tmp_path / "job.py"
    path.write_text(DATABRICKS.format(line=FIRST_AFTER_SORT))
    assert sparkpar_cli("fix", "--select", "SPX101", "job.py").exit_code == 0
    assert path.read_text() == DATABRICKS.format(line=FIXED_LINE)


def test_databricks_cell_that_does_not_parse_is_spx901_in_file_lines(sparkpar_cli, tmp_path):
    (tmp_path / "job.py").write_text(DATABRICKS.format(line=FIRST_AFTER_SORT) + "\n# COMMAND ----------\n\ndef f(:\n")
    result = lint(sparkpar_cli, "--format", "concise", "job.py")
    assert result.stdout.splitlines()[1].startswith("job.py:19:7: SPX901 cannot parse cell 4")


# Written (a SQL cell's last query is only displayed, a preview SPX106 leaves alone).
SQL_LIMIT = "CREATE OR REPLACE TABLE top_pages AS\nSELECT page, count(*) AS n\nFROM events\nGROUP BY page\nLIMIT 5"


@pytest.mark.parametrize("header", ["%%sql", "%sql"])
def test_sql_cells_are_analysed_in_cell_coordinates(sparkpar_cli, tmp_path, header):
    (tmp_path / "job.ipynb").write_text(
        notebook(
            ("code", "spark.read.parquet('e').createOrReplaceTempView('events')"),
            ("code", f"{header}\n{SQL_LIMIT}"),
            ("code", "%%sql\nSELECT {broken template FROM"),  # does not parse: skipped, no error
        )
    )
    result = sparkpar_cli("lint", "--select", "SPX106,SPX901", "--format", "concise", "job.ipynb")
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines() == [result.stdout.splitlines()[0]]
    assert result.stdout.startswith("job.ipynb:cell 2:6:1: SPX106 ")


def test_databricks_sql_cell_is_analysed_in_file_lines(sparkpar_cli, tmp_path):
    magic = "".join(f"# MAGIC {line}\n" for line in SQL_LIMIT.splitlines())
    (tmp_path / "job.py").write_text(
        DATABRICKS.format(line="x = 1") + f"\n# COMMAND ----------\n\n# MAGIC %sql\n{magic}"
    )
    result = sparkpar_cli("lint", "--select", "SPX106", "--format", "concise", "job.py")
    assert result.stdout.startswith("job.py:24:9: SPX106 "), result.output


@pytest.mark.parametrize(
    "cell",
    [
        "pip install kafka-python",  # automagic: IPython runs it without `%`
        "ls ~/data\ncd /tmp",
        "! ls -la  # a space after the bang",
        "! cd repo && rm *\n! cp a b",  # a shell line ending in `*` continues nothing
        "total = (a\n    % b)",  # a continuation line starting with `%` is Python
        "files = !ls\n%matplotlib inline",
    ],
)
def test_valid_ipython_is_never_spx901(sparkpar_cli, tmp_path, cell):
    (tmp_path / "job.ipynb").write_text(notebook(("code", cell), ("code", "df = spark.range(3)")))
    result = lint(sparkpar_cli, "--format", "concise", "job.ipynb")
    assert result.exit_code == 0, result.output


SQL_LAST = "SELECT store, last(amount) AS amount\nFROM (SELECT * FROM sales ORDER BY sold_at)\nGROUP BY store"
SQL_LAST_FIXED = SQL_LAST.replace("last(amount)", "max(struct(sold_at, amount)).amount")


def test_fix_rewrites_a_sql_cell_in_place(sparkpar_cli, tmp_path):
    path = tmp_path / "job.ipynb"
    path.write_text(
        notebook(("code", "spark.table('s').createOrReplaceTempView('sales')"), ("code", f"%%sql\n{SQL_LAST}"))
    )
    assert sparkpar_cli("fix", "--select", "SPX101", "job.ipynb").exit_code == 0
    cells = json.loads(path.read_text())["cells"]
    assert "".join(cells[1]["source"]) == f"%%sql\n{SQL_LAST_FIXED}"
    assert cells[1]["outputs"][0]["text"] == ["ok\n"]


def test_fix_rewrites_a_databricks_sql_cell_keeping_magic_prefixes(sparkpar_cli, tmp_path):
    def cell(sql):
        return "".join(f"# MAGIC {line}\n" for line in ["%sql", *sql.splitlines()])

    path = tmp_path / "job.py"
    path.write_text(DATABRICKS.format(line="x = 1") + f"\n# COMMAND ----------\n\n{cell(SQL_LAST)}")
    assert sparkpar_cli("fix", "--select", "SPX101", "job.py").exit_code == 0
    assert path.read_text() == DATABRICKS.format(line="x = 1") + f"\n# COMMAND ----------\n\n{cell(SQL_LAST_FIXED)}"


def test_github_annotations_name_the_cell_and_graph_reads_notebooks(sparkpar_cli, tmp_path):
    (tmp_path / "job.ipynb").write_text(JOB)
    github = lint(sparkpar_cli, "--format", "github", "job.ipynb").stdout
    assert "line=2,col=41," in github and "title=SPX101 [low] (cell 3)" in github
    graph = sparkpar_cli("graph", "--format", "json", "job.ipynb")
    assert graph.exit_code == 0 and "Reader.parquet" in graph.stdout
    (tmp_path / "bad.ipynb").write_text("{")
    assert "bad.ipynb: not a valid notebook" in sparkpar_cli("graph", "bad.ipynb").stderr


def test_jupyter_checkpoints_are_not_walked(sparkpar_cli, tmp_path):
    (tmp_path / "nb" / ".ipynb_checkpoints").mkdir(parents=True)
    (tmp_path / "nb" / ".ipynb_checkpoints" / "job-checkpoint.ipynb").write_text('{"cells": []}')
    (tmp_path / "nb" / "job.ipynb").write_text(JOB)
    result = lint(sparkpar_cli, "--format", "concise", "nb")
    assert result.exit_code == 1 and "checkpoint" not in result.output


FABRIC = """# Fabric notebook source

# METADATA ********************

# META {{"kernel_info": {{"name": "synapse_pyspark"}}}}

# MARKDOWN ********************

# # Report

# CELL ********************

config:
  streaming: true

# CELL ********************

from pyspark.sql import functions as F
df = spark.read.parquet("x")
{line}

# CELL ********************

# MAGIC %%sql
# MAGIC CREATE TABLE top AS SELECT page, count(*) AS n FROM events GROUP BY page LIMIT 5
"""


def test_fabric_export_is_checked_cell_by_cell(sparkpar_cli, tmp_path):
    (tmp_path / "notebook-content.py").write_text(FABRIC.format(line=FIRST_AFTER_SORT))
    result = sparkpar_cli("lint", "--select", "SPX101,SPX106,SPX901", "--format", "concise", "notebook-content.py")
    lines = [line.split(" ", 2)[:2] for line in result.stdout.splitlines()]
    # The YAML cell alone is unparsable; the Python and %%sql cells are still checked.
    assert lines == [
        ["notebook-content.py:13:8:", "SPX901"],
        ["notebook-content.py:20:41:", "SPX101"],
        ["notebook-content.py:25:82:", "SPX106"],
    ], result.output


def test_graph_shows_notebook_nodes_at_cell_coordinates(sparkpar_cli, tmp_path):
    (tmp_path / "job.ipynb").write_text(JOB)
    nodes = json.loads(sparkpar_cli("graph", "--format", "json", "job.ipynb").stdout)["nodes"]
    where = {node["api"]: (node.get("cell"), node["line"], node["column"]) for node in nodes}
    # `df = spark.read.parquet('x')` is line 5 of cell 2; the aggregation is line 2 of cell 3.
    assert where["Reader.parquet"] == (2, 5, len("df = spark.read."))
    assert where["GroupedData.agg"] == (3, 2, FIRST_AFTER_SORT.index("agg"))
    rich = sparkpar_cli("graph", "job.ipynb").stdout
    assert f"GroupedData.agg cell 3:2:{FIRST_AFTER_SORT.index('agg') + 1} " in rich
    mermaid = sparkpar_cli("graph", "--format", "mermaid", "job.ipynb").stdout
    assert "agg(k) cell 3:2<br/>" in mermaid
    # A Databricks export keeps its file lines; a one-line `# MAGIC %sql` keeps its own columns.
    (tmp_path / "db.py").write_text(
        DATABRICKS.format(line="x = 1") + "\n# COMMAND ----------\n\n# MAGIC %sql SELECT * FROM t LIMIT 5\n"
    )
    nodes = json.loads(sparkpar_cli("graph", "--format", "json", "db.py").stdout)["nodes"]
    assert [(n["api"], n["line"], n["column"]) for n in nodes if "cell" not in n][-1] == ("DataFrame.limit", 19, 29)


@pytest.mark.parametrize("indent, ascii_only", [(1, True), (1, False), (None, True), (2, False)])
def test_cell_positions_map_each_source_character_to_the_json_text(indent, ascii_only):
    from sparkpar_lint.sources.ipynb import cell_positions

    cells = [
        {"cell_type": "markdown", "metadata": {"x": ["source"]}, "source": "# Title"},
        {
            "cell_type": "code",
            "metadata": {},
            "outputs": [{"text": ["not source\n"]}],
            "source": ['s = "é\\t\\u00e9"\n', "t = '\U0001f600' + s\n", "end"],
        },
    ]
    text = json.dumps({"cells": cells, "metadata": {"cells": []}}, indent=indent, ensure_ascii=ascii_only)
    positions = cell_positions(text)
    assert set(positions) == {1, 2}
    for number, cell in enumerate(cells, 1):
        source, offsets = positions[number]
        assert source == "".join(cell["source"]) and len(offsets) == len(source) + 1
        for index, char in enumerate(source):  # each character's JSON spelling starts at its offset
            spelled = json.dumps(char, ensure_ascii=ascii_only)[1:-1]
            assert text[offsets[index] :].startswith(spelled) or text[offsets[index] :].startswith(char)


def test_elasticsearch_writes_keyed_by_a_document_id_in_another_cell_are_replay_safe(sparkpar_cli, tmp_path):
    """SPX205 reads `es.mapping.id` from a settings dict defined in an earlier cell; the write with
    generated ids (no `es.mapping.id`) is still reported, at its own cell and line."""
    settings = (
        'keyed = {"es.nodes": "search:9200", "es.mapping.id": "reading_id", "es.write.operation": "upsert"}\n'
        'unkeyed = {"es.nodes": "search:9200"}'
    )
    sinks = (
        'readings = spark.readStream.format("kafka").load()\n'
        "def upsert(frame, epoch):\n"
        '    frame.write.format("org.elasticsearch.spark.sql").options(**keyed).mode("append").save("readings")\n'
        "def index(frame, epoch):\n"
        '    frame.write.format("org.elasticsearch.spark.sql").options(**unkeyed).mode("append").save("raw")\n'
        "readings.writeStream.foreachBatch(upsert).start()\n"
        "readings.writeStream.foreachBatch(index).start()"
    )
    (tmp_path / "sink.ipynb").write_text(notebook(("markdown", "# Sinks"), ("code", settings), ("code", sinks)))
    result = sparkpar_cli("lint", "--select", "SPX205", "--format", "json", "sink.ipynb")
    assert result.exit_code == 1, result.output
    findings = json.loads(result.stdout)
    assert [(f["rule"], f["cell"], f["line"]) for f in findings] == [("SPX205", 3, 5)]
