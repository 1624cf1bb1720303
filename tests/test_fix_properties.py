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
