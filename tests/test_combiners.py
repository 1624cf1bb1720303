"""The combiner algebra: proofs for non-monoid combiners, silence for commutative monoids."""

from __future__ import annotations

import libcst as cst
import pytest

from sparkpar_lint.graph.combiners import MERGE, SAFE, SEQ, UNKNOWN, UNSAFE, classify, classify_named


def _fn(source: str):
    if source.startswith("def"):
        return cst.parse_module(source).body[0]
    return cst.parse_expression(source)


@pytest.mark.parametrize(
    ("source", "role", "shape", "expected"),
    [
        ("lambda a, b: a - b", MERGE, None, UNSAFE),
        ("lambda a, b: a / b", MERGE, None, UNSAFE),
        ("lambda a, b: a", MERGE, None, UNSAFE),
        ("lambda a, b: b", MERGE, None, UNSAFE),
        ("lambda a, b: (a + b) / 2", MERGE, None, UNSAFE),
        ('lambda a, b: a + "," + b', MERGE, None, UNSAFE),
        ('lambda a, b: f"{a}>{b}"', MERGE, None, UNSAFE),
        ("lambda a, b: a + [b]", SEQ, None, UNSAFE),
        ("lambda a, b: a + b", MERGE, "list", UNSAFE),
        ("lambda a, b: a + b", MERGE, "tuple", UNSAFE),
        ("lambda a, b: {**a, **b}", MERGE, None, UNSAFE),
        ("def merge(a, b):\n    a.update(b)\n    return a\n", MERGE, None, UNSAFE),
        ("lambda a, b: a + b", MERGE, None, SAFE),
        ("lambda a, b: a * b", MERGE, None, SAFE),
        ("lambda a, b: max(a, b)", MERGE, None, SAFE),
        ("lambda a, b: a if a > b else b", MERGE, None, SAFE),
        ("lambda a, b: (a[0] + b[0], a[1] + b[1])", MERGE, None, SAFE),
        ("lambda a, b: a | b", MERGE, None, SAFE),
        ("lambda a, b: sorted(a + b)", MERGE, "list", SAFE),
        ("lambda acc, v: acc - v", SEQ, None, SAFE),
        ("lambda acc, v: (acc[0] + v, acc[1] + 1)", SEQ, None, SAFE),
        ("def merge(a, b):\n    total = a + b\n    return total\n", MERGE, None, SAFE),
        ("lambda a, b: merge_sessions(a, b)", MERGE, None, UNKNOWN),
    ],
)
def test_classify(source, role, shape, expected):
    assert classify(_fn(source), role, shape).kind == expected


def test_proof_is_a_counterexample():
    verdict = classify(_fn("lambda a, b: a - b"))
    assert verdict.proof == "not commutative: f(1, 2) = -1 but f(2, 1) = 1"
    assert "f(f(1, 2), 3) = 9/4" in classify(_fn("lambda a, b: (a + b) / 2")).proof


def test_named_callables():
    assert classify_named("operator.add").kind == SAFE
    assert classify_named("max").kind == SAFE
    assert classify_named("operator.sub").kind == UNSAFE
    assert classify_named("mylib.merge").kind == UNKNOWN
