"""The stage graph's indexed lookups answer what a scan of every node answers: `downstream` (all
nodes reachable from one, in creation order) and `overlapping` (nodes sharing a line with a
range). They replaced scans that made one finding per line of a long module quadratic; here they
are held to the scans on every fixture job and on an aggregate whose call spans many lines."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from sparkpar_lint.graph.builder import build_graph

FIXTURES = sorted(p for p in (Path(__file__).parent.parent / "fixtures").rglob("*.py"))
# An aggregate whose call spans 120 lines (a node indexed apart from the others), then a chain.
WIDE_AGGREGATE = (
    "df = spark.read.parquet('x')\nwide = df.orderBy('ts').groupBy('k').agg(\n"
    + "".join(f"    F.first('v{i}'),\n" for i in range(120))
    + ")\nout = wide.withColumn('n', F.lit(1)).dropDuplicates(['k'])\nout.write.parquet('y')\n"
)


def _graphs():
    for path in FIXTURES:
        source = path.read_text()
        if not source.lstrip().startswith("# Databricks notebook source"):  # magics: not Python
            yield path.name, source
    yield "wide_aggregate.py", "from pyspark.sql import functions as F\n" + WIDE_AGGREGATE


@pytest.mark.parametrize(("name", "source"), list(_graphs()), ids=lambda v: v if v.endswith(".py") else "")
def test_indexed_lookups_match_a_scan(name, source):
    graph = build_graph(cst.parse_module(source), name, source=source)
    for node in graph.nodes:
        reached, scanned = {node.id}, []
        for candidate in graph.nodes[node.id + 1 :]:
            if any(i in reached for i in candidate.inputs):
                reached.add(candidate.id)
                scanned.append(candidate.id)
        assert [n.id for n in graph.downstream(node)] == scanned
    last = max((n.span.end_line for n in graph.nodes), default=1)
    for line in range(1, last + 1):
        for end_line in (line, line + 2, line + 60):
            scanned = [n.id for n in graph.nodes if n.span.line <= end_line and n.span.end_line >= line]
            assert [n.id for n in graph.overlapping(line, end_line)] == scanned
