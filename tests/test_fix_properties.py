"""Fixes applied to generated variations of the fixture jobs: the result parses, a second pass
changes nothing, and the fixed rule no longer fires."""

from __future__ import annotations

import libcst as cst
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkpar_lint.analysis import analyze
from sparkpar_lint.fixes.engine import fix_source

IDENTIFIERS = st.sampled_from(["df", "events", "raw", "clicks", "orders", "frame"])
COLUMNS = st.sampled_from(["ts", "event_time", "seq", "created_at"])
VALUES = st.sampled_from(["page", "status", "amount", "url"])
IMPORTS = st.sampled_from(
    [
        ("from pyspark.sql import functions as F\n", "F.{}"),
        ("import pyspark.sql.functions as fn\n", "fn.{}"),
        ("from pyspark.sql import functions\n", "functions.{}"),
        ("from pyspark.sql.functions import {0}\n", "{}"),
        ("from pyspark.sql.functions import {0} as agg_fn\n", "agg_fn"),
    ]
)


@st.composite
def spx101_jobs(draw) -> str:
    name, sort, value = draw(IDENTIFIERS), draw(COLUMNS), draw(VALUES)
    function = draw(st.sampled_from(["first", "last", "first_value", "last_value", "any_value", "collect_list", "array_agg"]))
    import_line, reference = draw(IMPORTS)
    call = (reference.format(function) if "{}" in reference else reference) + f'("{value}")'
    alias = draw(st.sampled_from(["", '.alias("picked")']))
    lines = [import_line.format(function), "", f"def job(spark, {name}):"]
    if draw(st.booleans()):
        lines.append(f'    {name} = {name}.filter("{value} IS NOT NULL").orderBy("{sort}")')
        lines.append(f'    return {name}.groupBy("key").agg({call}{alias})')
    else:
        lines.append("    return (")
        lines.append(f'        {name}.orderBy("{sort}")  # sorted by time')
        lines.append('        .groupBy("key")')
        lines.append(f"        .agg({call}{alias})")
        lines.append("    )")
    return "\n".join(lines) + "\n"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spx101_jobs())
def test_spx101_fix_parses_is_idempotent_and_silences_the_rule(code: str):
    before = [f for f in analyze("job.py", code) if f.rule_id == "SPX101"]
    assert before, code
    outcome = fix_source("job.py", code, {"SPX101"})
    assert outcome.changed
    cst.parse_module(outcome.fixed)
    compile(outcome.fixed, "job.py", "exec")
    assert fix_source("job.py", outcome.fixed, {"SPX101"}).fixed == outcome.fixed
    assert [f for f in analyze("job.py", outcome.fixed) if f.rule_id == "SPX101"] == []


# ---------------------------------------------------------------------- SPX103: sort at the top

FRAME_OPERATIONS = st.sampled_from(
    ['{f}["v"] = {f}["v"].ffill()', '{f}["v"] = {f}["v"].interpolate()', '{f}["d"] = {f}["v"].diff()',
     '{f}["c"] = {f}["v"].cumsum()', '{f} = {f}.head(3)', '{f}["p"] = {f}["v"].shift(1)']
)


@st.composite
def spx103_frame_jobs(draw) -> str:
    """applyInPandas functions with an order from an upstream sort, a watermark-free guess or both."""
    name, frame, sort = draw(IDENTIFIERS), draw(st.sampled_from(["pdf", "group", "frame_"])), draw(COLUMNS)
    operation = draw(FRAME_OPERATIONS).format(f=frame)
    params = draw(st.sampled_from([frame, f"key, {frame}"]))
    docstring = draw(st.sampled_from(["", '    """Per group."""\n']))
    upstream_sort = draw(st.booleans())
    reads_time = not upstream_sort or draw(st.booleans())
    body = operation if not reads_time else f'{operation}\n    {frame}["gap"] = {frame}["{sort}"].diff()'
    chain = f'{name}.orderBy("{sort}")' if upstream_sort else name
    return (
        f"def per_group({params}):\n{docstring}    {body}\n    return {frame}\n\n\n"
        f"def job(spark, {name}):\n"
        f'    return {chain}.groupBy("key").applyInPandas(per_group, "key string, v double")\n'
    )


@st.composite
def spx103_row_jobs(draw) -> str:
    """Row loops carrying the previous row's time, under mapPartitions or groupByKey().mapValues."""
    name, rows, sort = draw(IDENTIFIERS), draw(st.sampled_from(["rows", "values", "it"])), draw(COLUMNS)
    item = draw(st.sampled_from(["r", "row", "x"]))
    runner = draw(
        st.sampled_from([f"{name}.rdd.mapPartitions(deltas)", f"{name}.rdd.map(lambda e: (e.key, e)).groupByKey().mapValues(deltas)"])
    )
    return (
        f"def deltas({rows}):\n    prev, out = None, []\n    for {item} in {rows}:\n"
        f"        if prev is not None:\n            out.append({item}.{sort} - prev)\n        prev = {item}.{sort}\n"
        f"    return out\n\n\ndef job(spark, {name}):\n    return {runner}\n"
    )


def _assert_spx103_fix(code: str) -> None:
    assert [f for f in analyze("job.py", code) if f.rule_id == "SPX103"], code
    outcome = fix_source("job.py", code, {"SPX103"}, unsafe=True)
    assert outcome.changed, code
    cst.parse_module(outcome.fixed)
    compile(outcome.fixed, "job.py", "exec")
    assert fix_source("job.py", outcome.fixed, {"SPX103"}, unsafe=True).fixed == outcome.fixed
    assert [f for f in analyze("job.py", outcome.fixed) if f.rule_id == "SPX103"] == []


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spx103_frame_jobs())
def test_spx103_frame_sort_parses_is_idempotent_and_silences_the_rule(code: str):
    _assert_spx103_fix(code)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spx103_row_jobs())
def test_spx103_row_sort_parses_is_idempotent_and_silences_the_rule(code: str):
    _assert_spx103_fix(code)
