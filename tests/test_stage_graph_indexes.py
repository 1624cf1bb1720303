"""The indexed lookups behind each finding's confidence answer what a scan of every stage
answers: `StageGraph.downstream` (all stages reachable from one, in creation order) and the stage
a finding's span is about (`confidence.node_at`, through `graph.span_index`). The scans made one
finding per line of a long module quadratic; here the indexes are held to them on every fixture
job, an aggregate whose call spans many lines, and one `spark.sql` string whose stages all sit on
one line."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from sparkpar_lint import confidence
from sparkpar_lint.graph.builder import build_graph
from sparkpar_lint.graph.span_index import SpanIndex
from sparkpar_lint.model import Span

FIXTURES = sorted(p for p in (Path(__file__).parent.parent / "fixtures").rglob("*.py"))
# An aggregate whose call spans 120 lines (a stage indexed apart from the others), then a chain.
WIDE_AGGREGATE = (
    "from pyspark.sql import functions as F\n"
    "df = spark.read.parquet('x')\nwide = df.orderBy('ts').groupBy('k').agg(\n"
    + "".join(f"    F.first('v{i}'),\n" for i in range(120))
    + ")\nout = wide.withColumn('n', F.lit(1)).dropDuplicates(['k'])\nout.write.parquet('y')\n"
)
# Sixty SELECTs in one string: every stage on line 2, some of them far to the right.
ONE_LINE_SQL = 'df = spark.sql("""{}""")\ndf.write.parquet("out")\n'.format(
    " UNION ALL ".join(f"SELECT k, first(v) AS v{i} FROM t{i} GROUP BY k" for i in range(60))
)

# A stage created after the ones it encloses but starting left of them (the join).
NESTED_ON_ONE_LINE = (
    "from pyspark.sql import functions as F\n"
    "a = spark.read.parquet('a')\nb = spark.read.parquet('b')\n"
    "joined = a.join(b.orderBy('ts').groupBy('k').agg(F.first('v').alias('v')), 'k')\njoined.write.parquet('c')\n"
)


def _sources():
    for path in FIXTURES:
        source = path.read_text()
        if not source.lstrip().startswith("# Databricks notebook source"):  # magics: not Python
            yield path.name, source
    yield "wide_aggregate.py", WIDE_AGGREGATE
    yield "one_line_sql.py", ONE_LINE_SQL
    yield "nested_on_one_line.py", NESTED_ON_ONE_LINE


SOURCES = list(_sources())


def _graph(name, source):
    return build_graph(cst.parse_module(source), name, source=source)


def _scanned_node_at(graph, span):
    """node_at as a scan of every stage (what the index replaced)."""
    start, end = (span.line, span.column), (span.end_line, span.end_column)
    holding, inside, same_line = [], [], []
    for node in graph.nodes:
        where = node.span
        if where.line > span.end_line or where.end_line < span.line:
            continue
        first, last = (where.line, where.column), (where.end_line, where.end_column)
        if first <= start <= last:
            holding.append(((where.end_line - where.line, where.end_column - where.column), node))
        elif start <= first <= end:
            inside.append(node)
        elif where.line == span.line and first < start:
            same_line.append(node)
    if holding:
        return min(holding, key=lambda pair: (pair[0], -pair[1].id))[1]
    if inside:
        return inside[0]
    return (
        confidence._running(graph, start) or (same_line[-1] if same_line else None) or confidence._in_sql(graph, start)
    )


def _probes(graph, source):
    """Spans a finding may have: every stage's, and short ones all along every line."""
    yield from (node.span for node in graph.nodes)
    for number, text in enumerate(source.splitlines(), start=1):
        for column in range(len(text) + 1):
            yield Span(number, column, number, column + 5)
        yield Span(number, 0, number + 3, 0)
        yield Span(number, 0, number + 70, 0)


@pytest.mark.parametrize(("name", "source"), SOURCES, ids=[name for name, _ in SOURCES])
def test_downstream_matches_a_scan(name, source):
    graph = _graph(name, source)
    for node in graph.nodes:
        reached, scanned = {node.id}, []
        for candidate in graph.nodes[node.id + 1 :]:
            if any(i in reached for i in candidate.inputs):
                reached.add(candidate.id)
                scanned.append(candidate.id)
        assert [n.id for n in graph.downstream(node)] == scanned


@pytest.mark.parametrize(("name", "source"), SOURCES, ids=[name for name, _ in SOURCES])
def test_the_stage_a_span_is_about_matches_a_scan(name, source):
    graph = _graph(name, source)
    for span in _probes(graph, source):
        assert confidence.node_at(graph, span) is _scanned_node_at(graph, span), span


@pytest.mark.parametrize(("name", "source"), SOURCES, ids=[name for name, _ in SOURCES])
def test_overlapping_matches_a_scan(name, source):
    graph = _graph(name, source)
    index = SpanIndex(graph)
    last = max((n.span.end_line for n in graph.nodes), default=1)
    for line in range(1, last + 1):
        for end_line in (line, line + 2, line + 60):
            scanned = [n.id for n in graph.nodes if n.span.line <= end_line and n.span.end_line >= line]
            assert [n.id for n in index.overlapping(line, end_line)] == scanned


def test_the_one_line_query_puts_stages_beyond_the_column_window():
    # Otherwise the test above would not reach the index's column cut-off.
    graph = _graph("one_line_sql.py", ONE_LINE_SQL)
    assert max(n.span.column for n in graph.nodes if n.span.line == 1) > 2000
