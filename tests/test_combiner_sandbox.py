"""The combiner evaluator works in a sandbox of bounded numbers and steps: hostile arithmetic
gives "cannot tell" quickly, never a stall or an internal error."""

from __future__ import annotations

import libcst as cst
import pytest

from sparkpar_lint.graph.combiners import MERGE, SAFE, UNKNOWN, UNSAFE, classify

HOSTILE = [
    "lambda a, b: a + b * 1e99999999",  # used to run for 717 s
    "lambda a, b: (a ** 64) ** 64 + b",  # used to take 10 s, then internal errors
    "lambda a, b: ((a ** 64) ** 64) ** 64 - b",
    "lambda a, b: a + b + 1e-99999999",
    "lambda a, b: a + b * " + "1" * 5000,  # more digits than int() converts
    "lambda a, b: a + b * 0x" + "f" * 5000,
    "def merge(a, b):\n"
    + "".join(f"    c{i + 1} = c{i} * c{i}\n" for i in range(40)).replace("c0", "a")
    + "    return c40 + b\n",
]


@pytest.mark.parametrize("source", HOSTILE)
def test_hostile_arithmetic_is_unknown_not_a_stall(source):
    node = cst.parse_module(source).body[0] if source.startswith("def") else cst.parse_expression(source)
    assert classify(node, MERGE).kind == UNKNOWN


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("lambda a, b: a * 2 ** 10 + b", UNSAFE),
        ("lambda a, b: a - b + 0x10", UNSAFE),
        ("lambda a, b: a + b", SAFE),
        ("lambda a, b: a * b * 1e300", SAFE),
    ],
)
def test_ordinary_arithmetic_is_still_proved(source, expected):
    assert classify(cst.parse_expression(source), MERGE).kind == expected


def test_hostile_combiner_in_a_job_is_linted_quickly(sparkpar_cli, tmp_path):
    (tmp_path / "job.py").write_text(
        "from pyspark import SparkContext\nsc = SparkContext()\n"
        "total = sc.parallelize([1, 2]).reduce(lambda a, b: a + b * 1e99999999)\n"
    )
    result = sparkpar_cli("lint", "job.py", "--format", "concise", "--file-timeout", "30", "--no-cache")
    assert result.stderr == "" and result.exit_code in (0, 1)
