"""Positions placed one statement at a time must equal LibCST's PositionProvider for every node,
whatever the layout: decorators, comments, continuation lines, `;`, tabs, CRLF, form feeds,
non-ASCII text, nested blocks, a missing final newline."""

from __future__ import annotations

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from sparkpar_lint.graph.builder import build_graph
from sparkpar_lint.graph.positions import Positions

TRICKY = '''\
# leading comment
"""Module docstring."""
import os; import sys  # two on a line

@decorator(
    "é", x=[1,
            2],
)
@other
def f(a, *, b=3):  # trailing
    \'\'\'Doc
    string.\'\'\'
    if a: return b; pass
    elif b:
        pass
    else:
        x = (1 +
             2)
    # comment at the end of a block

class C(Base, metaclass=M):
\tdef m(self):
\t\treturn [i for i in range(3)
\t\t        if i]
\tasync def n(self):
\t\tasync with x as y, z:
\t\t\tawait y
\t\tasync for q in r:
\t\t\tpass

try:
    s = f"{a!r:>{w}} ünïcode {b}"
except (A, B) as e:
    raise
except C:
    pass
else:
    t = \\
        1
finally:
    u = 2
try:
    pass
except* D:
    pass

match point:
    case (0, 0):
        pass
    case Point(x=0) if guard:
        pass
    case _:
        v = lambda: (yield)

while True:
    break
else:
    w = 1
with open("f") as h, \\
        open("g") as k:
    global g
\x0c
x = [
    1,  # one
    2,
]
'''


def all_nodes_agree(source: str) -> None:
    module = cst.parse_module(source)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    for node in expected:
        # Fresh each time, so that no node is placed as a by-product of placing another.
        positions = Positions(module, source)
        if positions.statement_of(node) is None:
            continue  # the module, its header and footer: the whole-module pass
        assert positions[node] == expected[node], (type(node).__name__, module.code_for_node(node))
        assert not positions._whole, (type(node).__name__, module.code_for_node(node))


@pytest.mark.parametrize(
    "source",
    [
        TRICKY,
        TRICKY.replace("\n", "\r\n"),
        TRICKY.rstrip("\n"),  # no final newline
        "x = 1\n\n\n    # indented comment\ny = 2",
        "if a:\n  if b:\n      c = [\n1]\n  d = 2\n",
    ],
    ids=["tricky", "crlf", "no-final-newline", "comments", "odd-indents"],
)
def test_every_node_is_placed_as_position_provider_places_it(source):
    all_nodes_agree(source)


def test_module_level_nodes_and_foreign_nodes():
    source = "# header\nx = 1\n# footer\n"
    module = cst.parse_module(source)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    positions = Positions(module, source)
    assert positions[module] == expected[module]  # outside every statement: the whole-module pass
    assert positions.get(cst.Name("x")) is None  # a node of another tree


def test_a_file_this_python_cannot_read_is_placed_by_the_whole_module_pass():
    # `type` statements are Python 3.12; LibCST reads them whatever Python runs it.
    source = "x = 1\ntype Alias = int\ny = [x]\n"
    module = cst.parse_module(source)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    positions = Positions(module, source)
    last = module.body[-1]
    assert positions[last] == expected[last]


def test_text_that_is_not_the_module_falls_back_instead_of_misplacing():
    module = cst.parse_module("a = 1\nb = 2\n")
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    positions = Positions(module, "a = 1\nb = 3\n")  # stale text: b's statement does not match
    second = module.body[1]
    assert positions[second] == expected[second]
    assert positions._whole


def test_graph_spans_come_from_the_statement_alone():
    source = "from pyspark.sql import functions as F\n" + "x = 1\n" * 2000 + 'df.groupBy("k").agg(F.first("v"))\n'
    graph = build_graph(cst.parse_module(source), "job.py", source=source)
    call = graph.nodes[-1].call
    assert graph.span_of(call).line == 2002
    assert len(graph.positions._ranges) < 50  # one statement's nodes, not the module's
