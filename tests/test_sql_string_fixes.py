"""SQL fixes in f-strings and concatenations, through the real CLI on real files: the rewrite goes
into literal text only, every interpolated part stays byte for byte, and a rewrite that would
touch or copy one is refused with its reason (`--show-unfixed`)."""

from __future__ import annotations

import ast

HEAD = (
    "from pyspark.sql import SparkSession\n"
    "\n"
    "spark = SparkSession.builder.getOrCreate()\n"
    'table = "visits"\n'
    'column = "page"\n'
    'order_column = "ts"\n'
)
LOST_SORT = "FROM (SELECT * FROM {source} ORDER BY ts) GROUP BY user"


def _fix(cli, tmp_path, body: str, *options: str) -> tuple[str, str]:
    path = tmp_path / "job.py"
    path.write_text(HEAD + body, encoding="utf-8")
    result = cli("fix", "--show-unfixed", *options, "job.py")
    assert result.exit_code in (0, 1), result.output
    fixed = path.read_text(encoding="utf-8")
    ast.parse(fixed)  # every rewrite still compiles
    return fixed, result.output


def test_fstring_fix_edits_the_literal_text_and_keeps_the_placeholder(sparkpar_cli, tmp_path):
    query = "SELECT user, last(page) AS page " + LOST_SORT.format(source="{table}")
    fixed, _ = _fix(sparkpar_cli, tmp_path, f'rows = spark.sql(f"{query}")\nrows.write.parquet("out")\n')
    expected = query.replace("last(page)", "max(struct(ts, page)).page")
    assert f'rows = spark.sql(f"{expected}")\n' in fixed


def test_concatenation_fix_edits_only_the_piece_that_holds_the_call(sparkpar_cli, tmp_path):
    body = (
        "rows = spark.sql(\n"
        '    "SELECT user, first(page) AS page "  # the landing page\n'
        f'    + "{LOST_SORT.format(source="visits")}"\n'
        ")\n"
        'rows.write.parquet("out")\n'
    )
    fixed, _ = _fix(sparkpar_cli, tmp_path, body)
    assert fixed == HEAD + body.replace("first(page)", "min(struct(ts, page)).page")


def test_unsafe_window_tie_breaker_goes_into_fstring_text_next_to_a_placeholder(sparkpar_cli, tmp_path):
    line = "    SELECT user, row_number() OVER (PARTITION BY user ORDER BY 1) AS n FROM {table}\n"
    body = 'rows = spark.sql(f"""\n' + line + '""")\nrows.write.parquet("out")\n'
    fixed, _ = _fix(sparkpar_cli, tmp_path, body, "--unsafe-fixes", "--select", "SPX104")
    # Broken under the spec's first item, the rest of the line on its own: no line past 100.
    indent = " " * 36
    whole_row = (
        f"to_json(struct(*),\n{indent}map('timestampFormat', 'yyyy-MM-dd HH:mm:ss.SSSSSSXXX',\n"
        f"{indent}'timestampNTZFormat', 'yyyy-MM-dd HH:mm:ss.SSSSSS'))\n{indent}"
    )
    assert fixed == HEAD + body.replace("ORDER BY 1)", f"ORDER BY 1, {whole_row})")
    assert "{table}" in fixed


def test_a_tie_breaker_that_would_take_a_one_line_string_past_100_characters_is_refused(sparkpar_cli, tmp_path):
    line = 'rows = spark.sql(f"SELECT user, row_number() OVER (PARTITION BY user ORDER BY 1) AS n FROM {table}")\n'
    body = line + 'rows.write.parquet("out")\n'
    fixed, output = _fix(sparkpar_cli, tmp_path, body, "--unsafe-fixes", "--select", "SPX104")
    assert fixed == HEAD + body
    assert "the tie-breaker would take the line past 100 characters, and the string is on one line" in output


def test_a_rewrite_that_would_copy_an_interpolated_value_is_refused_with_its_reason(sparkpar_cli, tmp_path):
    body = (
        f'a = spark.sql(f"SELECT user, last({{column}}) AS v {LOST_SORT.format(source="visits")}")\n'
        'a.write.parquet("a")\n'
        'b = spark.sql(f"SELECT user, last(page) AS page FROM (SELECT * FROM visits ORDER BY {order_column}) '
        'GROUP BY user")\n'
        'b.write.parquet("b")\n'
    )
    fixed, output = _fix(sparkpar_cli, tmp_path, body, "--select", "SPX101")
    assert fixed == HEAD + body
    refused = [line for line in output.splitlines() if "SPX101 not fixed" in line]
    assert len(refused) == 2
    assert all("would copy an interpolated `{...}` value into the SQL text" in line for line in refused)


def test_a_rewrite_across_a_joint_is_refused_with_its_reason(sparkpar_cli, tmp_path):
    body = f'a = spark.sql("SELECT user, last(" "page) AS page {LOST_SORT.format(source="visits")}")\na.write.parquet("a")\n'
    fixed, output = _fix(sparkpar_cli, tmp_path, body, "--select", "SPX101")
    assert fixed == HEAD + body
    refused = [line for line in output.splitlines() if "SPX101 not fixed" in line]
    assert len(refused) == 1 and "cross a joint between strings" in refused[0]


def test_a_rewrite_between_escapes_keeps_them_as_written(sparkpar_cli, tmp_path):
    # Generated code writes its SQL on one line with `\r\n` escapes, and f-strings double braces.
    body = (
        f'a = spark.sql("SELECT user,\\r\\n\\tlast(page) AS page\\r\\n{LOST_SORT.format(source="visits")}")\n'
        'a.write.parquet("a")\n'
        "b = spark.sql(f\"SELECT user, map('n', 1) AS m,\\nfirst(page) AS page FROM (SELECT * FROM {table} "
        'ORDER BY ts) GROUP BY user")\n'
        'b.write.parquet("b")\n'
    )
    fixed, output = _fix(sparkpar_cli, tmp_path, body, "--select", "SPX101")
    assert "not fixed" not in output
    assert 'a = spark.sql("SELECT user,\\r\\n\\tmax(struct(ts, page)).page AS page\\r\\nFROM (' in fixed
    assert "\\nmin(struct(ts, page)).page AS page FROM (SELECT * FROM {table} ORDER BY ts)" in fixed


def test_an_unnamed_aggregate_keeps_the_name_spark_gave_it(sparkpar_cli, tmp_path):
    # `SELECT user, first(page)` has a column `first(page)`: the rewritten call is aliased to it,
    # in the name's own spelling (FIRST(Page) is `first(Page)`, array_agg is collect_list); an
    # aliased one keeps its alias, and one inside a larger expression is rewritten as it was.
    body = (
        'a = spark.sql("SELECT user, FIRST(Page) FROM visits GROUP BY user")\n'
        'a.write.parquet("a")\n'
        'e = spark.sql("SELECT user, last(page) AS latest FROM visits GROUP BY user")\n'
        'e.write.parquet("e")\n'
        'f = spark.sql("SELECT user, array_agg(o.price) FROM orders AS o GROUP BY user")\n'
        'f.write.parquet("f")\n'
        f'b = spark.sql("SELECT user, last(page) {LOST_SORT.format(source="visits")}")\n'
        'b.write.parquet("b")\n'
        'c = spark.sql("SELECT user, collect_list(food), collect_list(price) FROM orders GROUP BY user")\n'
        'c.write.parquet("c")\n'
        'd = spark.sql("SELECT user, max(ts) - first(ts) FROM visits GROUP BY user")\n'
        'd.write.parquet("d")\n'
    )
    fixed, output = _fix(sparkpar_cli, tmp_path, body, "--unsafe-fixes", "--select", "SPX101")
    assert 'a = spark.sql("SELECT user, min(Page) AS `first(Page)` FROM visits GROUP BY user")\n' in fixed
    assert 'e = spark.sql("SELECT user, max(page) AS latest FROM visits GROUP BY user")\n' in fixed
    assert 'f = spark.sql("SELECT user, array_sort(array_agg(o.price)) AS `collect_list(price)` FROM orders' in fixed
    assert 'b = spark.sql("SELECT user, max(struct(ts, page)).page AS `last(page)` FROM (SELECT' in fixed
    assert (
        "array_compact(array_sort(collect_list(struct(food, price))).food) AS `collect_list(food)`, "
        "array_compact(array_sort(collect_list(struct(food, price))).price) AS `collect_list(price)` FROM orders"
    ) in fixed
    assert 'd = spark.sql("SELECT user, max(ts) - min(ts) FROM visits GROUP BY user")\n' in fixed


def test_a_first_ignoring_nulls_is_left_as_written(sparkpar_cli, tmp_path):
    # `min(page) IGNORE NULLS` does not run on Spark ("The function `min` does not support IGNORE NULLS").
    body = 'a = spark.sql("SELECT user, first(page) IGNORE NULLS FROM visits GROUP BY user")\na.write.parquet("a")\n'
    fixed, _ = _fix(sparkpar_cli, tmp_path, body, "--unsafe-fixes", "--select", "SPX101")
    assert 'a = spark.sql("SELECT user, first(page) IGNORE NULLS FROM visits GROUP BY user")\n' in fixed
