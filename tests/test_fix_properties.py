"""Fixes applied to generated variations of the fixture jobs: the result parses, a second pass
changes nothing, and the fixed rule no longer fires."""

from __future__ import annotations

from collections import Counter

import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkpar_lint.analysis import analyze
from sparkpar_lint.fixes.engine import fix_source

# Hundreds of generated jobs fixed and re-analysed: about 40 s of CPU, too much for the fast lane
# (each rule's own examples, fixes included, stay there in test_rule_examples.py).
pytestmark = pytest.mark.slow

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
    function = draw(
        st.sampled_from(["first", "last", "first_value", "last_value", "any_value", "collect_list", "array_agg"])
    )
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
    after = analyze("job.py", outcome.fixed)
    assert [f for f in after if f.rule_id == "SPX101"] == []
    assert not Counter(f.rule_id for f in after) - Counter(f.rule_id for f in analyze("job.py", code))


# ---------------------------------------------------------------------- SPX103: sort at the top

FRAME_OPERATIONS = st.sampled_from(
    [
        '{f}["v"] = {f}["v"].ffill()',
        '{f}["v"] = {f}["v"].interpolate()',
        '{f}["d"] = {f}["v"].diff()',
        '{f}["c"] = {f}["v"].cumsum()',
        "{f} = {f}.head(3)",
        '{f}["p"] = {f}["v"].shift(1)',
    ]
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
        st.sampled_from(
            [
                f"{name}.rdd.mapPartitions(deltas)",
                f"{name}.rdd.map(lambda e: (e.key, e)).groupByKey().mapValues(deltas)",
            ]
        )
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


# ------------------------------------------ SPX105, SPX202, SPX204, SPX301, SPX302, SPX401, SPX402

KEYS = st.sampled_from(["user", "device", "account", "session_key"])
SPARK_F = "from pyspark.sql import Window, functions as F\n\n\n"


def _assert_rule_fixed(code: str, rule_id: str, known_new: frozenset[str] = frozenset()) -> None:
    """Fired before; after `fix --unsafe-fixes` it parses, is stable on a second run, is silent, and
    no other rule (but the `known_new` ones) has a finding it did not have before."""
    before = analyze("job.py", code)
    assert [f for f in before if f.rule_id == rule_id], code
    outcome = fix_source("job.py", code, {rule_id}, unsafe=True)
    assert outcome.changed, code
    cst.parse_module(outcome.fixed)
    compile(outcome.fixed, "job.py", "exec")
    assert fix_source("job.py", outcome.fixed, {rule_id}, unsafe=True).fixed == outcome.fixed, outcome.fixed
    after = analyze("job.py", outcome.fixed)
    assert [f for f in after if f.rule_id == rule_id] == [], outcome.fixed
    new = Counter(f.rule_id for f in after) - Counter(f.rule_id for f in before)
    assert set(new) <= known_new, outcome.fixed


@st.composite
def spx105_jobs(draw) -> str:
    name, key, other = draw(IDENTIFIERS), draw(KEYS), draw(VALUES)
    dedup = draw(
        st.sampled_from(
            [
                f'.select("{key}").distinct()',
                f'.select("{key}", "{other}").distinct()',
                f'.dropDuplicates(["{key}"])',
                f'.groupBy("{key}").agg(F.max("{other}").alias("{other}"))',
                # Sorted rows, few enough (a small limit) for one task to number them.
                '.limit(500).orderBy("ts", "seq")',
            ]
        )
    )
    between = draw(st.sampled_from(["", f'.filter(F.col("{key}").isNotNull())', '.withColumn("x", F.lit(1))']))
    id_name = draw(st.sampled_from([f"{key}_sk", "row_id", "surrogate_key"]))
    return (
        SPARK_F + f"def job(spark, {name}):\n    dim = {name}{dedup}{between}"
        f'.withColumn("{id_name}", F.monotonically_increasing_id())\n'
        f'    return {name}.join(dim, "{key}").select("{id_name}")\n'
    )


@st.composite
def spx202_jobs(draw) -> str:
    name, key = draw(IDENTIFIERS), draw(KEYS)
    before = draw(
        st.sampled_from(["", ".repartition(8)", '.repartition(4, "other")', '.filter("ts > 0")', '.orderBy("ts")'])
    )
    runner = draw(
        st.sampled_from(
            [".rdd.mapPartitions(latest)", '.mapInPandas(per_key, "k string, n long")', ".rdd.mapPartitions(deltas)"]
        )
    )
    body = (
        f"def deltas(rows):\n    last = {{}}\n    for row in rows:\n        if row.{key} in last:\n"
        f"            yield row.{key}, row.ts - last[row.{key}]\n        last[row.{key}] = row.ts\n\n\n"
        f"def latest(rows):\n    seen = {{}}\n    for row in rows:\n        seen[row.{key}] = row.ts\n"
        "    return iter(seen.items())\n\n\n"
        f'def per_key(batches):\n    for pdf in batches:\n        yield pdf.groupby("{key}", as_index=False)["n"].sum()\n\n\n'
    )
    return body + f"def job(spark, {name}):\n    return {name}{before}{runner}\n"


@st.composite
def spx204_jobs(draw) -> str:
    name, key, time = draw(IDENTIFIERS), draw(KEYS), draw(st.sampled_from(["ts", "event_time", "created_ts"]))
    stateful = draw(
        st.sampled_from(
            [
                f'.groupBy(F.window("{time}", "5 minutes"), "{key}").count()',
                f'.groupBy("{key}", F.window(F.col("{time}"), "1 hour")).agg(F.sum("n"))',
                f'.dropDuplicates(["{key}", "{time}"])',
            ]
        )
    )
    between = draw(st.sampled_from(["", f'.select("{key}", "{time}", "n")', '.filter("n > 0")']))
    return (
        SPARK_F + f'def job(spark):\n    {name} = spark.readStream.format("kafka").load(){between}\n'
        f"    return {name}{stateful}\n"
    )


@st.composite
def spx301_jobs(draw) -> str:
    name = draw(IDENTIFIERS)
    mapper = draw(
        st.sampled_from(
            [
                "map(lambda kv: (kv[1], kv[0]), preservesPartitioning=True)",
                "map(lambda kv: (kv[0].lower(), kv[1]), True)",
                "flatMap(lambda kv: [(w, 1) for w in kv[0].split()], preservesPartitioning=True)",
                "mapPartitions(rekey, preservesPartitioning=True)",
            ]
        )
    )
    consumer = draw(st.sampled_from([".reduceByKey(lambda a, b: a + b)", ".groupByKey()", ".lookup('a')"]))
    return (
        "def rekey(part):\n    for key, value in part:\n        yield key.upper(), value\n\n\n"
        f"def job(spark, {name}):\n    pairs = {name}.rdd.map(lambda r: (r.k, r.v)).partitionBy(8)\n"
        f"    return pairs.{mapper}{consumer}\n"
    )


@st.composite
def spx302_jobs(draw) -> str:
    name, key = draw(IDENTIFIERS), draw(KEYS)
    partition = draw(st.sampled_from([f'repartition("{key}")', f'repartition(8, "{key}")']))
    change = draw(
        st.sampled_from([f'.withColumn("{key}", F.lower("{key}"))', f'.withColumn("{key}", F.trim(F.col("{key}")))'])
    )
    shape = draw(st.sampled_from(["chain", "variables"]))
    per_key = f'def per_key(batches):\n    for pdf in batches:\n        yield pdf.groupby("{key}", as_index=False)["n"].sum()\n\n\n'
    if shape == "chain":
        body = f'    return {name}.{partition}{change}.mapInPandas(per_key, "k string, n long")\n'
    else:
        body = (
            f"    parted = {name}.{partition}\n    changed = parted{change}\n"
            '    return changed.mapInPandas(per_key, "k string, n long")\n'
        )
    return SPARK_F + per_key + f"def job(spark, {name}):\n" + body


@st.composite
def spx401_jobs(draw) -> str:
    name, key, sort = draw(IDENTIFIERS), draw(KEYS), draw(COLUMNS)
    spec = draw(
        st.sampled_from(
            [f'Window.orderBy("{sort}")', f'Window.orderBy("{sort}").rowsBetween(Window.unboundedPreceding, 0)']
        )
    )
    where = draw(st.sampled_from(["before", "after"]))
    if where == "before":
        return (
            SPARK_F + f"def job(spark, {name}):\n    w = {spec}\n"
            f'    return {name}.repartition("{key}").withColumn("n", F.sum("v").over(w))\n'
        )
    return (
        SPARK_F + f"def job(spark, {name}):\n"
        f'    ranked = {name}.withColumn("n", F.row_number().over({spec}))\n'
        f'    return ranked.groupBy("{key}").agg(F.max("n"))\n'
    )


@st.composite
def spx402_jobs(draw) -> str:
    name, key, sort = draw(IDENTIFIERS), draw(KEYS), draw(COLUMNS)
    serial = draw(st.sampled_from(["coalesce(1)", "repartition(1)"]))
    order = draw(st.sampled_from(["sort-before", "sort-after"]))
    chain = f'orderBy("{sort}").{serial}' if order == "sort-before" else f'{serial}.sortWithinPartitions("{sort}")'
    return (
        f"def sessions(batches):\n    last = {{}}\n    for pdf in batches:\n"
        f"        for row in pdf.itertuples():\n            last[row.{key}] = row.{sort}\n        yield pdf\n\n\n"
        f'def job(spark):\n    {name} = spark.read.parquet("clicks")\n'
        f'    return {name}.{chain}.mapInPandas(sessions, "k string")\n'
    )


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spx105_jobs())
def test_spx105_fix_parses_is_idempotent_and_silences_the_rule(code: str):
    # Known: after a sort, the fix numbers rows with a window ordered by the sort's own keys; that
    # window re-sorts every row, and SPX107 reports the sort before it as wasted.
    _assert_rule_fixed(code, "SPX105", known_new=frozenset({"SPX107"}))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spx202_jobs())
def test_spx202_fix_parses_is_idempotent_and_silences_the_rule(code: str):
    # Known: the repartition the fix adds after an `orderBy` discards that sort, which SPX107 reports.
    _assert_rule_fixed(code, "SPX202", known_new=frozenset({"SPX107"}))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spx204_jobs())
def test_spx204_fix_parses_is_idempotent_and_silences_the_rule(code: str):
    _assert_rule_fixed(code, "SPX204")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spx301_jobs())
def test_spx301_fix_parses_is_idempotent_and_silences_the_rule(code: str):
    _assert_rule_fixed(code, "SPX301")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spx302_jobs())
def test_spx302_fix_parses_is_idempotent_and_silences_the_rule(code: str):
    _assert_rule_fixed(code, "SPX302")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spx401_jobs())
def test_spx401_fix_parses_is_idempotent_and_silences_the_rule(code: str):
    _assert_rule_fixed(code, "SPX401")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spx402_jobs())
def test_spx402_fix_parses_is_idempotent_and_silences_the_rule(code: str):
    _assert_rule_fixed(code, "SPX402")


# ------------------------------------------------- SPX102 / SPX104 / SPX106: explicit orders

# (import lines, prefix of function calls): the fixes must write the module's own names.
ORDER_IMPORTS = st.sampled_from(
    [
        ("from pyspark.sql import functions as F\n", "F."),
        ("import pyspark.sql.functions as fn\n", "fn."),
        ("from pyspark.sql.functions import col, desc, first, last, collect_list, nth_value, count\n", ""),
    ]
)
WINDOW_IMPORTS = st.sampled_from(
    [
        ("", "Window"),
        ("from pyspark.sql import Window\n", "Window"),
        ("from pyspark.sql.window import Window as W\n", "W"),
    ]
)


def _sort_argument(draw, prefix: str, column: str) -> str:
    return draw(st.sampled_from([f'"{column}"', f'{prefix}col("{column}").desc()', f'{prefix}desc("{column}")']))


@st.composite
def spx102_jobs(draw) -> str:
    (functions, prefix), (window_import, _) = draw(ORDER_IMPORTS), draw(WINDOW_IMPORTS)
    name, sort, keys = draw(IDENTIFIERS), draw(COLUMNS), draw(st.lists(KEYS, min_size=1, max_size=2, unique=True))
    subset = "[" + ", ".join(f'"{k}"' for k in keys) + "]"
    dedup = draw(st.sampled_from([f".dropDuplicates({subset})", f".drop_duplicates(subset={subset})"]))
    body = draw(st.sampled_from(["sorted_chain", "sorted_variable", "source"]))
    lines = [functions + window_import, "", f"def job(spark, {name}):"]
    if body == "sorted_chain":
        lines.append(f"    return {name}.orderBy({_sort_argument(draw, prefix, sort)}){dedup}")
    elif body == "sorted_variable":
        lines.append(f'    ranked = {name}.sortWithinPartitions({_sort_argument(draw, prefix, sort)}, "id")')
        lines.append(f"    kept = ranked{dedup}")
        lines.append(f'    return kept.select({", ".join(repr(k).replace(chr(39), chr(34)) for k in keys)}, "{sort}")')
    else:
        lines.append(
            f'    {name} = spark.read.parquet("p").select({", ".join(f"{chr(34)}{k}{chr(34)}" for k in keys)}, "v")'
        )
        lines.append(f"    return {name}{dedup}")
    return "\n".join(lines) + "\n"


@st.composite
def spx104_jobs(draw) -> str:
    (functions, prefix), (window_import, window) = draw(ORDER_IMPORTS), draw(WINDOW_IMPORTS)
    if not window_import:
        window_import, window = "from pyspark.sql import Window\n", "Window"
    name, key, value, sort = draw(IDENTIFIERS), draw(KEYS), draw(VALUES), draw(COLUMNS)
    function = draw(st.sampled_from(["first", "last", "collect_list", "nth_value"]))
    call = f'{prefix}{function}("{value}"' + (", 2)" if function == "nth_value" else ")")
    frame = draw(st.sampled_from(["", f".rowsBetween({window}.unboundedPreceding, 0)"]))
    spec = f'{window}.partitionBy("{key}"){frame}'
    source = draw(st.sampled_from(["sorted", "read"]))
    rows = f"{name}.orderBy({_sort_argument(draw, prefix, sort)})" if source == "sorted" else 'spark.read.parquet("p")'
    also = draw(st.sampled_from(["", f'.withColumn("n", {prefix}count("{value}").over(w))']))
    lines = [functions + window_import, "", f"def job(spark, {name}):"]
    if draw(st.booleans()):
        lines.append(f"    w = {spec}")
        lines.append(f'    return {rows}.withColumn("picked", {call}.over(w)){also}')
    else:
        lines.append(f'    return {rows}.withColumn("picked", {call}.over({spec}))')
    return "\n".join(lines) + "\n"


@st.composite
def spx106_jobs(draw) -> str:
    functions, prefix = draw(ORDER_IMPORTS)
    name, key, sort = draw(IDENTIFIERS), draw(KEYS), draw(COLUMNS)
    shuffle = draw(
        st.sampled_from(
            [
                f'.repartition("{key}")',
                f'.dropDuplicates(["{key}"])',
                ".repartition(8)",
                # No sort survives an aggregation: the keys decide (unsafe deterministic pick).
                f'.groupBy("{key}").agg({prefix}count("*").alias("n"))',
                ".distinct()",
            ]
        )
    )
    pick = draw(st.sampled_from([".limit(10)", ".take(5)", ".first()", ".head(3)", ".collect()[0]", ".tail(2)"]))
    between = draw(
        st.sampled_from(["", f'.filter({prefix}col("{key}").isNotNull())', f'.withColumn("x", {prefix}col("{sort}"))'])
    )
    lines = [functions, "", f"def job(spark, {name}):"]
    if draw(st.booleans()):
        lines.append(f"    ranked = {name}.orderBy({_sort_argument(draw, prefix, sort)})")
        lines.append(f"    return ranked{shuffle}{between}{pick}")
    else:
        # The sequence number only crosses a shuffle right before the pick (rules/fixers/sequence.py).
        lines.append(f'    rows = spark.read.parquet("p"){shuffle}')
        lines.append(f"    return rows{pick}")
    return "\n".join(lines) + "\n"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spx102_jobs())
def test_spx102_fix_parses_is_idempotent_and_silences_the_rule(code: str):
    _assert_rule_fixed(code, "SPX102")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spx104_jobs())
def test_spx104_fix_parses_is_idempotent_and_silences_the_rule(code: str):
    _assert_rule_fixed(code, "SPX104")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spx106_jobs())
def test_spx106_fix_parses_is_idempotent_and_silences_the_rule(code: str):
    _assert_rule_fixed(code, "SPX106")
