"""Order sensitivity of grouped and per-partition function bodies."""

from __future__ import annotations

import libcst as cst
import pytest

from sparkpar_lint.graph.order_sensitivity import find_order_dependence, parameter_kinds

CASES = [
    ("def f(pdf):\n    pdf['v'] = pdf['v'].interpolate()\n    return pdf\n", "group", True),
    (
        "def f(pdf):\n    pdf = pdf.sort_values('ts')\n    pdf['v'] = pdf['v'].interpolate()\n    return pdf\n",
        "group",
        False,
    ),
    ("def f(pdf):\n    pdf.sort_values('ts', inplace=True)\n    return pdf['v'].ffill()\n", "group", False),
    ("def f(pdf):\n    d = pdf['device'].iloc[0]\n    return pdf.assign(n=len(pdf), d=d)\n", "group", False),
    ("def f(pdf):\n    return pdf.iloc[[0]]\n", "group", True),
    # The row holding the extreme, by label on the fresh index Spark gives the frame, or by position.
    ("def f(pdf):\n    i = pdf['v'].idxmax()\n    return pdf.iloc[i : i + 1]\n", "group", False),
    ("def f(pdf):\n    return pdf.iloc[[pdf.v.idxmin()]]\n", "group", False),
    ("def f(pdf):\n    return pdf.iloc[np.argmax(pdf['v'].values)]\n", "group", False),
    ("def f(pdf):\n    return pdf['v'].iloc[pdf['v'].argmax()]\n", "group", False),
    # Labels that are no longer positions, or a position that is not an extreme's.
    ("def f(pdf):\n    pdf = pdf[pdf.v > 0]\n    return pdf.iloc[[pdf.v.idxmax()]]\n", "group", True),
    ("def f(pdf):\n    pdf.dropna(inplace=True)\n    return pdf.iloc[[pdf.v.idxmax()]]\n", "group", True),
    ("def f(pdf):\n    pdf.index = pdf['ts']\n    return pdf.iloc[[pdf.v.idxmax()]]\n", "group", True),
    ("def f(pdf):\n    i = pdf['v'].idxmax()\n    return pdf.iloc[i * 2]\n", "group", True),
    ("def f(pdf):\n    return pdf.iloc[pdf.v.idxmax() :: 2]\n", "group", True),
    ("def f(pdf):\n    return pdf.sort_values('device').head(1)\n", "group", True),
    ("def f(key, pdf):\n    return pdf.assign(k=key[0])\n", "group", False),
    ("def f(pdf):\n    return pdf.drop_duplicates(subset=['user'])\n", "group", True),
    ("def f(pdf):\n    return pdf.drop_duplicates()\n", "group", False),
    (
        "def f(rows):\n    prev = None\n    for r in rows:\n        if prev is not None:\n"
        "            yield r.ts - prev\n        prev = r.ts\n",
        "partition",
        True,
    ),
    (
        "def f(rows):\n    prev = None\n    for r in sorted(rows, key=lambda r: r.ts):\n        if prev is not None:\n"
        "            yield r.ts - prev\n        prev = r.ts\n",
        "partition",
        False,
    ),
    ("def f(rows):\n    total = 0\n    for r in rows:\n        total += r.v\n    yield total\n", "partition", False),
    ("def f(rows):\n    total = 0\n    for r in rows:\n        total += r.v\n        yield total\n", "partition", True),
    (
        "def f(rows):\n    best = None\n    for r in rows:\n        if best is None or r.ts > best.ts:\n"
        "            best = r\n    return [best]\n",
        "partition",
        False,
    ),
    ("def f(rows):\n    last = None\n    for r in rows:\n        last = r\n    return [last]\n", "partition", True),
    (
        "def f(rows):\n    latest = {}\n    for r in rows:\n        latest[r.k] = r\n    return latest.values()\n",
        "partition",
        True,
    ),
    (
        "def f(rows):\n    c = {}\n    for r in rows:\n        c[r.k] = c.get(r.k, 0) + 1\n    return c.items()\n",
        "partition",
        False,
    ),
    ("def f(it):\n    yield next(it)\n", "partition", True),
    ("def f(vals):\n    return list(vals)[0]\n", "value", True),
    ("def f(vals):\n    return sorted(vals)[0]\n", "value", False),
    ("def f(vals):\n    return '>'.join(v for v in vals)\n", "value", True),
    ("def f(vals):\n    return max(vals) - min(vals)\n", "value", False),
]


@pytest.mark.parametrize(("source", "role", "dependent"), CASES)
def test_order_dependence(source, role, dependent):
    function = cst.parse_module(source).body[0]
    kinds = parameter_kinds(function, role, "GroupedData" if role == "group" else "RDD")
    assert (find_order_dependence(function, kinds, ("device",)) is not None) == dependent


def test_helper_called_with_unsorted_rows_is_reported_inside_the_helper():
    module = cst.parse_module(
        "def helper(x):\n    return x.ffill()\n"
        "def bad(pdf):\n    return helper(pdf)\n"
        "def good(pdf):\n    return helper(pdf.sort_values('ts'))\n"
    )
    helpers = {d.name.value: d for d in module.body}
    bad, good = module.body[1], module.body[2]
    found = find_order_dependence(bad, parameter_kinds(bad, "group", "GroupedData"), (), helpers)
    assert found is not None and found.helper == "helper"
    assert find_order_dependence(good, parameter_kinds(good, "group", "GroupedData"), (), helpers) is None


def test_a_slice_of_a_key_and_rows_pair_is_no_row_read_by_position():
    # `pair[1:]` is a Slice, not an Index: it used to stop the file with an AttributeError.
    function = cst.parse_module("def f(pair):\n    rows = pair[1:]\n    return list(rows)[0]\n").body[0]
    assert isinstance(function, cst.FunctionDef)
    assert find_order_dependence(function, parameter_kinds(function, "grouped-row", "RDD")) is None
