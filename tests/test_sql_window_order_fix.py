"""SPX104's fix for a SQL window with no ORDER BY, through the real CLI on real files: the order
goes into the spec where it is written (the OVER clause or the WINDOW entry), as the values its
functions read where they alone decide every answer, else the whole row; lines stay within 100
characters in a triple-quoted string, and a one-line string that cannot take that is refused."""

from __future__ import annotations

import ast

HEAD = "from pyspark.sql import SparkSession\n\nspark = SparkSession.builder.getOrCreate()\n"


def _fix(cli, tmp_path, body: str) -> tuple[str, str]:
    path = tmp_path / "job.py"
    path.write_text(HEAD + body, encoding="utf-8")
    result = cli("fix", "--show-unfixed", "--unsafe-fixes", "--select", "SPX104", "job.py")
    assert result.exit_code in (0, 1), result.output
    fixed = path.read_text(encoding="utf-8")
    ast.parse(fixed)
    return fixed, result.output


def _query(*lines: str) -> str:
    return 'rows = spark.sql(\n    """\n' + "".join(f"    {line}\n" for line in lines) + '    """\n)\nrows.show()\n'


def test_named_window_of_first_value_is_ordered_by_the_value(sparkpar_cli, tmp_path):
    body = _query(
        "SELECT DISTINCT user, first_value(page) OVER per_user AS landing  -- the entry page",
        "FROM visits",
        "WINDOW per_user AS (PARTITION BY user)",
    )
    fixed, _ = _fix(sparkpar_cli, tmp_path, body)
    assert fixed == HEAD + body.replace("(PARTITION BY user)", "(PARTITION BY user ORDER BY page)")
    assert sparkpar_cli("lint", "--select", "SPX104", str(tmp_path / "job.py")).exit_code == 0


def test_inline_window_of_last_gets_the_whole_partition_as_its_frame(sparkpar_cli, tmp_path):
    body = _query(
        "SELECT user, last(page) OVER (PARTITION BY user) AS exit_page, count(*) OVER (PARTITION BY user) AS n",
        "FROM visits",
    )
    fixed, _ = _fix(sparkpar_cli, tmp_path, body)
    # The count's own window reads no order; the rest of the line moves down to stay within 100.
    assert fixed == HEAD + body.replace(
        "    SELECT user, last(page) OVER (PARTITION BY user) AS exit_page,",
        "    SELECT user, last(page) OVER (PARTITION BY user ORDER BY page\n"
        "                                  ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING\n"
        "                                  ) AS exit_page,",
    )


def test_two_windows_picking_from_the_same_rows_are_both_ordered_by_the_whole_row(sparkpar_cli, tmp_path):
    body = _query(
        "SELECT user, first(page) OVER (PARTITION BY user) AS entry, first(ts) OVER (PARTITION BY user) AS at",
        "FROM visits",
    )
    fixed, _ = _fix(sparkpar_cli, tmp_path, body)
    # `page` for one and `ts` for the other would pair values of two rows, which the original,
    # reading both from the partition's one first row, never does.
    whole_row = (
        "to_json(struct(*),\n"
        "{indent}map('timestampFormat', 'yyyy-MM-dd HH:mm:ss.SSSSSSXXX',\n"
        "{indent}'timestampNTZFormat', 'yyyy-MM-dd HH:mm:ss.SSSSSS'))"
    )
    assert fixed == HEAD + body.replace(
        "    SELECT user, first(page) OVER (PARTITION BY user) AS entry, first(ts) OVER (PARTITION BY user) AS at",
        "    SELECT user, first(page) OVER (PARTITION BY user ORDER BY "
        + whole_row.format(indent=" " * 35)
        + "\n"
        + " " * 35
        + ") AS entry, first(ts) OVER (PARTITION BY user ORDER BY\n"
        + " " * 39
        + whole_row.format(indent=" " * 39)
        + ") AS at",
    )
    assert max(len(line) for line in fixed.splitlines()) <= 100


def test_functions_sharing_one_named_spec_are_ordered_by_all_their_values(sparkpar_cli, tmp_path):
    body = _query(
        "SELECT user,",
        "       first_value(page) OVER w AS entry,",
        "       last_value(ts) OVER w AS left_at,",
        "       count(*) OVER w AS visits",
        "FROM visits",
        "WINDOW w AS (PARTITION BY user)",
    )
    fixed, _ = _fix(sparkpar_cli, tmp_path, body)
    assert fixed == HEAD + body.replace(
        "WINDOW w AS (PARTITION BY user)",
        "WINDOW w AS (PARTITION BY user ORDER BY page, ts ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)",
    ).replace("ORDER BY page, ts ROWS", "ORDER BY page, ts\n                 ROWS")


def test_joined_rows_with_two_windows_are_left_with_the_reason(sparkpar_cli, tmp_path):
    body = _query(
        "SELECT v.user, first(v.page) OVER (PARTITION BY v.user) AS a, first(u.name) OVER (PARTITION BY u.city) AS b",
        "FROM visits v JOIN users u ON v.user = u.id",
    )
    fixed, output = _fix(sparkpar_cli, tmp_path, body)
    assert fixed == HEAD + body
    assert "`*` is not the window's rows there" in output


def test_a_frame_without_an_order_is_left_to_the_author(sparkpar_cli, tmp_path):
    body = _query(
        "SELECT user, collect_list(page) OVER (PARTITION BY user ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS p",
        "FROM visits",
    )
    fixed, output = _fix(sparkpar_cli, tmp_path, body)
    assert fixed == HEAD + body
    assert "a frame of its own but no order" in output


def test_a_one_line_string_the_order_would_take_past_100_characters_is_refused(sparkpar_cli, tmp_path):
    line = 'rows = spark.sql("SELECT user, last(page) OVER (PARTITION BY user) AS exit_page FROM visits")\n'
    fixed, output = _fix(sparkpar_cli, tmp_path, line + "rows.show()\n")
    assert fixed == HEAD + line + "rows.show()\n"
    assert "past 100 characters, and the string is on one line" in output


def test_a_one_line_string_with_room_takes_the_order(sparkpar_cli, tmp_path):
    line = 'rows = spark.sql("SELECT first(page) OVER (PARTITION BY user) AS p FROM visits")\n'
    fixed, _ = _fix(sparkpar_cli, tmp_path, line + "rows.show()\n")
    assert fixed == HEAD + line.replace("BY user)", "BY user ORDER BY page)") + "rows.show()\n"


def test_a_floating_sum_sharing_the_spec_gets_the_whole_row(sparkpar_cli, tmp_path):
    # Rows tied on `page` but not on `amount` would add in either order: the whole row decides.
    body = _query(
        "SELECT user, first(page) OVER w AS entry, sum(amount) OVER w AS spent",
        "FROM visits",
        "WINDOW w AS (PARTITION BY user)",
    )
    fixed, _ = _fix(sparkpar_cli, tmp_path, body)
    assert "ORDER BY to_json(struct(*)," in fixed and "ORDER BY page" not in fixed
    assert "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING" in fixed
    assert max(len(line) for line in fixed.splitlines()) <= 100
