"""State and key analyses behind SPX201/SPX202 (user_functions, partition_state).

The bad state/key fixtures are shown wrong on real Spark by tests/test_fixtures_on_spark.py."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from sparkpar_lint.analysis import analyze
from sparkpar_lint.graph.partition_state import keyed_state
from sparkpar_lint.graph.passed_function import UserFunction
from sparkpar_lint.graph.user_functions import mutated_outer_names
from sparkpar_lint.model import Span

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _def(source: str, role: str = "row") -> UserFunction:
    node = cst.parse_module(source).body[0]
    return UserFunction("f", node, Span(1, 0, 1, 0), role)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("def f(x):\n    seen.add(x)\n", {"seen"}),
        ("def f(x):\n    cache[x] = 1\n", {"cache"}),
        ("def f(x):\n    stats.rows += 1\n", {"stats"}),
        ("def f(x):\n    global n\n    n += 1\n", {"n"}),
        ("def f(x):\n    del cache[x]\n", {"cache"}),
        ("def f(x):\n    return next(ids)\n", {"ids"}),
        ("def f(x):\n    def g():\n        hits.append(x)\n    g()\n", {"hits"}),
        ("def f(x):\n    out = []\n    out.append(x)\n    return out\n", set()),
        ("def f(acc, x):\n    acc.append(x)\n    return acc\n", set()),
        ("def f(x):\n    n = 0\n    def g():\n        nonlocal n\n        n += 1\n    g()\n", set()),
        ("def f(x):\n    return lookup.value[x]\n", set()),
    ],
)
def test_mutated_outer_names(source, expected):
    assert mutated_outer_names(_def(source)) == expected


@pytest.mark.parametrize(
    ("source", "keys"),
    [
        ("def f(rows):\n    s = {}\n    for r in rows:\n        s[r.user] = r.ts\n", ["user"]),
        ("def f(rows):\n    s = set()\n    for r in rows:\n        s.add(r['id'])\n", ["id"]),
        ("def f(pairs):\n    s = {}\n    for k, v in pairs:\n        s[k] = s.get(k, 0) + v\n", ["[0]"]),
        ("def f(it):\n    for pdf in it:\n        yield pdf.groupby('user').sum()\n", ["user"]),
        (
            "def f(rows):\n    s = {}\n    for r in rows:\n        u = r.user.lower()\n        s.setdefault(u, []).append(r)\n",
            ["user"],
        ),
        ("def f(rows):\n    for r in rows:\n        d = {}\n        d[r.user] = 1\n        yield d\n", []),
        ("def f(rows):\n    for r in rows:\n        yield names.value[r.user]\n", []),
        ("def f(rows):\n    total = 0\n    for r in rows:\n        total += r.v\n    yield total\n", []),
    ],
)
def test_keyed_state(source, keys):
    assert [s.key for s in keyed_state(_def(source, "partition"))] == keys


def test_each_rule_of_the_family_is_registered_with_a_doc():
    from sparkpar_lint.ruledocs import doc_summary
    from sparkpar_lint.rules import all_rules

    ids = {rule.id for rule in all_rules()}
    family = {"SPX201", "SPX202", "SPX203", "SPX204", "SPX301", "SPX302", "SPX303", "SPX401", "SPX402"}
    assert family <= ids
    assert all(doc_summary(rule_id) for rule_id in family)


def test_bound_method_mutating_self_is_found_once():
    source = (
        "class Job:\n"
        "    def parse(self, line):\n        self.seen += 1\n        return line\n"
        "    def run(self, rdd: RDD):\n        return rdd.map(self.parse).filter(self.parse)\n"
    )
    assert [(f.rule_id, f.span.line) for f in analyze("t.py", source)] == [("SPX201", 3)]
