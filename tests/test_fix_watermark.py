"""The SPX204 fix on real-world shapes: a watermark on the window's event-time column, and for an
event-time window aggregation shown on the console in complete mode also `outputMode("update")`
(in complete mode a watermark drops no state). Other sinks keep the finding without a fix."""

from __future__ import annotations

import textwrap

from click.testing import CliRunner

from sparkpar_lint.analysis import analyze
from sparkpar_lint.cli import main
from sparkpar_lint.fixes.engine import fix_source

HEAD = "from pyspark.sql import SparkSession\nfrom pyspark.sql.functions import window, col, count\n"


def _fixed(code: str) -> str:
    code = HEAD + textwrap.dedent(code)
    assert [f for f in analyze("job.py", code) if f.rule_id == "SPX204"], code
    outcome = fix_source("job.py", code, {"SPX204"}, unsafe=True)
    compile(outcome.fixed, "job.py", "exec")
    # A second run changes nothing, the rule is silent and no other rule starts firing.
    assert fix_source("job.py", outcome.fixed, {"SPX204"}, unsafe=True).fixed == outcome.fixed
    before = sorted(f.rule_id for f in analyze("job.py", code) if f.rule_id != "SPX204")
    after = [f.rule_id for f in analyze("job.py", outcome.fixed)]
    assert "SPX204" not in after, outcome.fixed
    assert sorted(after) == before, outcome.fixed
    # The imports are left alone: `count` stays imported though only `.count()` is in the chain.
    assert outcome.fixed.startswith(HEAD), outcome.fixed
    return outcome.fixed[len(HEAD) :]


def _unfixed(code: str) -> None:
    code = HEAD + textwrap.dedent(code)
    assert [f for f in analyze("job.py", code) if f.rule_id == "SPX204"], code
    assert fix_source("job.py", code, {"SPX204"}, unsafe=True).fixed == code


def test_backslash_chains_with_comments_and_the_stream_read_in_another_statement():
    fixed = _fixed(
        """\
        spark = SparkSession.builder.getOrCreate()
        events = spark.readStream \\
            .format("rate") \\
            .load()
        # five-minute buckets
        windowed = events.groupBy(
            window("timestamp", "5 minutes"),  # the bucket
            "value"
        ).agg(count("*").alias("n"))
        query = windowed.writeStream \\
            .outputMode("complete") \\
            .format("console") \\
            .option("truncate", False) \\
            .start()
        """
    )
    assert fixed == textwrap.dedent(
        """\
        spark = SparkSession.builder.getOrCreate()
        events = spark.readStream \\
            .format("rate") \\
            .load()
        # five-minute buckets
        windowed = events.withWatermark("timestamp", "10 minutes").groupBy(
            window("timestamp", "5 minutes"),  # the bucket
            "value"
        ).agg(count("*").alias("n"))
        query = windowed.writeStream \\
            .outputMode("update") \\
            .format("console") \\
            .option("truncate", False) \\
            .start()
        """
    )


def test_a_backslash_chain_gets_the_watermark_on_its_own_line():
    fixed = _fixed(
        """\
        spark = SparkSession.builder.getOrCreate()
        flights = spark.readStream.format("socket").load().select(col("value").cast("timestamp").alias("seen"))
        per_hour = flights \\
            .groupBy(window(col("seen"), "1 hour")) \\
            .agg(count("*").alias("n"))
        per_hour.writeStream.outputMode("complete").format("console").start()
        """
    )
    assert '    .withWatermark("seen", "10 minutes") \\\n    .groupBy(window(col("seen"), "1 hour")) \\\n' in fixed
    assert 'outputMode("update").format("console")' in fixed


def test_a_parenthesised_chain_in_update_mode_gets_only_the_watermark():
    fixed = _fixed(
        """\
        spark = SparkSession.builder.getOrCreate()
        counts = (
            spark.readStream.format("rate").load()
            # bucketed by event time
            .groupBy(window("timestamp", "1 minute"))
            .count()
        )
        counts.writeStream.outputMode("update").format("console").start()
        """
    )
    assert '.withWatermark("timestamp", "10 minutes")' in fixed
    assert "# bucketed by event time" in fixed
    assert 'outputMode("update")' in fixed


def test_complete_mode_into_anything_but_the_console_is_left_with_its_reason():
    # A memory table the module reads, a foreachBatch function and a Kafka topic all see the whole
    # result table each batch in complete mode: update mode would change what they receive.
    for sink in (
        'format("memory").queryName("counts").start()',
        "foreachBatch(lambda batch, batch_id: batch.write.mode('overwrite').saveAsTable('t')).start()",
        'format("kafka").option("topic", "counts").start()',
    ):
        _unfixed(
            f"""\
            spark = SparkSession.builder.getOrCreate()
            counts = spark.readStream.format("rate").load().groupBy(window("timestamp", "1 minute")).count()
            counts.writeStream.outputMode("complete").{sink}
            spark.table("counts").show()
            """
        )


def test_a_sort_for_the_console_moves_into_foreach_batch_in_a_parenthesised_chain():
    fixed = _fixed(
        """\
        spark = SparkSession.builder.getOrCreate()
        counts = (
            spark.readStream.format("rate").load()
            .groupBy(window("timestamp", "1 minute"))  # one row per minute
            .count()
            .orderBy(col("window").desc())  # newest first
        )
        (
            counts.writeStream.outputMode("complete")
            .format("console")
            .option("numRows", "50")
            .start()
        )
        """
    )
    assert fixed == textwrap.dedent(
        """\
        spark = SparkSession.builder.getOrCreate()
        counts = (
            spark.readStream.format("rate").load()
            .withWatermark("timestamp", "10 minutes")
            .groupBy(window("timestamp", "1 minute"))  # one row per minute
            .count()  # newest first
        )
        (
            counts.writeStream.outputMode("update")
            .foreachBatch(lambda batch, _: batch.orderBy(col("window").desc()).show(50))
            .start()
        )
        """
    )


def test_a_sort_for_any_other_sink_or_a_limit_still_needs_complete_mode_so_no_fix():
    for tail in (
        'counts.orderBy("window").writeStream.outputMode("complete").format("memory").queryName("w").start()',
        'counts.limit(5).writeStream.outputMode("complete").format("console").start()',
    ):
        _unfixed(
            """\
            spark = SparkSession.builder.getOrCreate()
            counts = spark.readStream.format("rate").load().groupBy(window("timestamp", "1 minute")).count()
            """
            + tail
            + "\n"
        )


def test_the_foreach_batch_function_shadows_no_name_of_the_module():
    fixed = _fixed(
        """\
        spark = SparkSession.builder.getOrCreate()
        batch = 3
        counts = spark.readStream.format("rate").load().groupBy(window("timestamp", "1 minute")).count()
        counts.orderBy("window").writeStream.outputMode("complete").format("console").start()
        """
    )
    assert '.foreachBatch(lambda batch_df, _: batch_df.orderBy("window").show())' in fixed


def test_a_processing_time_window_has_no_event_time_to_watermark():
    _unfixed(
        """\
        from pyspark.sql.functions import current_timestamp
        spark = SparkSession.builder.getOrCreate()
        lines = spark.readStream.format("socket").load()
        counts = lines.groupBy(window(current_timestamp(), "10 seconds")).count()
        counts.writeStream.outputMode("complete").format("console").start()
        """
    )


def test_show_unfixed_says_why_for_a_memory_sink(tmp_path):
    job = tmp_path / "job.py"
    job.write_text(
        HEAD + "spark = SparkSession.builder.getOrCreate()\n"
        'counts = spark.readStream.format("rate").load().groupBy(window("timestamp", "1 minute")).count()\n'
        'counts.writeStream.outputMode("complete").format("memory").queryName("c").start()\n'
        'spark.sql("SELECT window.start, count FROM c").show()\n'
    )
    run = CliRunner().invoke(main, ["fix", "--unsafe-fixes", "--show-unfixed", str(job)])
    assert "SPX204 not fixed: no automatic fix here: complete mode into the memory table `c`, which this" in run.output
    assert job.read_text().count('outputMode("complete")') == 1


def test_a_watermarked_window_in_complete_mode_on_the_console_gets_update_mode_only():
    fixed = _fixed(
        """\
        spark = SparkSession.builder.getOrCreate()
        trades = spark.readStream.format("rate").load()
        totals = (trades.withWatermark("timestamp", "30 minutes")
                  .groupBy(window(trades.timestamp, "15 minutes"))
                  .agg(count("*").alias("n")))
        totals.writeStream.format("console").outputMode("complete").start()
        """
    )
    assert fixed.count("withWatermark") == 1
    assert 'format("console").outputMode("update")' in fixed


def test_a_watermark_on_another_column_than_the_window_is_not_trusted():
    _unfixed(
        """\
        spark = SparkSession.builder.getOrCreate()
        trades = spark.readStream.format("rate").load().withColumn("seen", col("timestamp"))
        totals = trades.withWatermark("seen", "30 minutes").groupBy(window("timestamp", "15 minutes")).count()
        totals.writeStream.format("console").outputMode("complete").start()
        """
    )


def test_a_stream_stream_join_says_why_it_is_not_fixed(tmp_path):
    job = tmp_path / "job.py"
    job.write_text(
        HEAD + "spark = SparkSession.builder.getOrCreate()\n"
        'shown = spark.readStream.format("rate").load()\n'
        'taps = spark.readStream.format("rate").load()\n'
        'shown.join(taps, "value").writeStream.format("console").start()\n'
    )
    run = CliRunner().invoke(main, ["fix", "--unsafe-fixes", "--show-unfixed", str(job)])
    assert "SPX206 not fixed: this rule has no automatic fix: the join matches on equalities alone" in run.output


def test_a_join_whose_expr_already_bounds_the_times_gets_a_watermark_on_each_side():
    fixed = _fixed(
        """\
        from pyspark.sql import functions as F
        spark = SparkSession.builder.getOrCreate()
        orders = (
            spark.readStream.format("rate").load()
            .withColumnRenamed("timestamp", "order_time")  # when it was placed
        )
        payments = spark.readStream.format("rate").load() \\
            .withColumnRenamed("timestamp", "paid_time")
        paid = (
            orders
            .join(
                payments,
                F.expr(\"\"\"
                    value = value AND
                    paid_time BETWEEN order_time AND order_time + INTERVAL 1 HOUR
                \"\"\"),
            )
            .select("value")
        )
        paid.writeStream.format("console").start()
        """
    )
    assert """\
        paid = (
            orders
            .withWatermark("order_time", "10 minutes")
            .join(
                payments.withWatermark("paid_time", "10 minutes"),
        """ in textwrap.indent(fixed, "        "), fixed
    assert "# when it was placed" in fixed


def test_a_join_with_one_side_watermarked_gets_the_other_sides_watermark_only():
    fixed = _fixed(
        """\
        from pyspark.sql import functions as F
        spark = SparkSession.builder.getOrCreate()
        shown = spark.readStream.schema("ad string, shown_time timestamp").json("shown") \\
            .withWatermark("shown_time", "2 hours")
        taps = spark.readStream.schema("tapped_ad string, tap_time timestamp").json("taps")
        matched = taps.join(
            shown,
            (taps.tapped_ad == shown.ad)
            & (taps.tap_time >= shown.shown_time)
            & (taps.tap_time <= shown.shown_time + F.expr("INTERVAL 20 MINUTES")),
            "inner",
        )
        matched.writeStream.format("console").start()
        """
    )
    assert 'matched = taps.withWatermark("tap_time", "10 minutes").join(\n    shown,\n' in fixed, fixed
    assert fixed.count("withWatermark") == 2


def test_joins_with_no_time_range_to_keep_or_no_timestamp_to_watermark_say_why(tmp_path):
    cases = {
        # Equality alone: a range would change which on-time pairs match.
        "views.join(clicks, views.ad_id == clicks.ad_id)": "the join matches on equalities alone",
        # A range with no INTERVAL: nothing shows the columns are timestamps.
        "views.join(clicks, (views.ad_id == clicks.ad_id) & (clicks.click_time > views.view_time))": (
            "the join's time range has no `INTERVAL`"
        ),
        # The condition is held in a name bound once: read there, an equality alone.
        "views.join(clicks, on_same_ad)": "the join matches on equalities alone",
        # A name bound twice (one binding in a branch): which one holds is not read.
        "views.join(clicks, either)": "the join's condition is built elsewhere",
        # The range names a column neither side visibly makes.
        'views.join(clicks, F.expr("ad_id = ad AND seen_time < view_time + INTERVAL 1 HOUR"))': (
            "the join's time range names no single event-time column made on each side"
        ),
    }
    for join, reason in cases.items():
        job = tmp_path / "job.py"
        code = (
            HEAD + "from pyspark.sql import functions as F\n"
            "spark = SparkSession.builder.getOrCreate()\n"
            'views = spark.readStream.schema("ad_id string, view_time timestamp").json("views")\n'
            'clicks = spark.readStream.schema("ad_id string, click_time timestamp").json("clicks")\n'
            "on_same_ad = views.ad_id == clicks.ad_id\n"
            "either = on_same_ad\n"
            "if views.isStreaming:\n"
            '    either = F.expr("ad_id = ad AND click_time < view_time + INTERVAL 1 HOUR")\n'
            f'{join}.writeStream.format("console").start()\n'
        )
        job.write_text(code)
        run = CliRunner().invoke(main, ["fix", "--unsafe-fixes", "--show-unfixed", str(job)])
        rule, why = (
            ("SPX206", "this rule has no automatic fix")
            if "equalities" in reason
            else ("SPX204", "no automatic fix here")
        )
        assert f"{rule} not fixed: {why}: {reason}" in run.output, (join, run.output)
        assert job.read_text() == code


def test_stateful_stages_with_no_event_time_in_their_key_say_why_in_one_line(tmp_path):
    job = tmp_path / "job.py"
    job.write_text(
        HEAD + "spark = SparkSession.builder.getOrCreate()\n"
        'readings = spark.readStream.schema("id string, vin string, seen string").json("in")\n'
        'readings.dropDuplicates(["id"]).writeStream.format("console").start()\n'
        'readings.groupBy("vin").count().writeStream.outputMode("update").format("console").start()\n'
        'readings.dropDuplicates().writeStream.format("console").start()\n'
    )
    run = CliRunner().invoke(main, ["fix", "--unsafe-fixes", "--show-unfixed", str(job)])
    lines = [line for line in run.output.splitlines() if "SPX204 not fixed" in line or "SPX206 not fixed" in line]
    assert len(lines) == 3, run.output
    assert (
        "SPX204 not fixed: no automatic fix here: the deduplication key (id) has no column named like an "
        "event time: only `dropDuplicatesWithinWatermark`" in lines[0]
    )
    # A count per vin: no event time in the key, so SPX206's, which no fix can help.
    assert "SPX206 not fixed: this rule has no automatic fix: no event time is in the state's key" in lines[1]
    assert "SPX204 not fixed: no automatic fix here: a whole-row deduplication whose rows have no single" in lines[2]


def test_a_window_over_a_setting_holding_the_column_name_is_not_taken_for_a_column():
    _unfixed(
        """\
        class Settings:
            time_column = "timestamp"
        spark = SparkSession.builder.getOrCreate()
        counts = spark.readStream.format("rate").load().groupBy(window(Settings.time_column, "1 minute")).count()
        counts.writeStream.outputMode("complete").format("console").start()
        """
    )


COUNTS_ON_CONSOLE = (
    HEAD + "spark = SparkSession.builder.getOrCreate()\n"
    'counts = spark.readStream.format("rate").load().groupBy(window("timestamp", "1 minute")).count()\n'
    'counts.writeStream.outputMode("complete").format("console").start()\n'
)


def test_the_delay_comes_from_the_projects_watermark_delay_setting(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text('[tool.sparkpar]\nwatermark-delay = "2 hours"\n')
    (tmp_path / "job.py").write_text(COUNTS_ON_CONSOLE)
    monkeypatch.chdir(tmp_path)
    run = CliRunner().invoke(main, ["fix", "--unsafe-fixes", "job.py"])
    assert run.exit_code == 0, run.output
    assert 'withWatermark("timestamp", "2 hours")' in (tmp_path / "job.py").read_text()


def test_a_watermark_delay_spark_would_not_read_is_a_config_error(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text('[tool.sparkpar]\nwatermark-delay = "soon"\n')
    (tmp_path / "job.py").write_text(COUNTS_ON_CONSOLE)
    monkeypatch.chdir(tmp_path)
    run = CliRunner().invoke(main, ["fix", "--unsafe-fixes", "job.py"])
    assert run.exit_code == 2, run.output
    assert "watermark-delay" in run.output and "soon" in run.output
    assert (tmp_path / "job.py").read_text() == COUNTS_ON_CONSOLE


def test_a_debug_console_in_complete_mode_beside_an_append_sink_gets_update_mode_alone():
    # Each start() is a query of its own: the Parquet query already drops closed windows; only
    # the console query keeps every window, and only its mode changes.
    fixed = _fixed(
        """\
        import os
        spark = SparkSession.builder.getOrCreate()
        agg = (
            spark.readStream.format("rate").load()
            .withWatermark("timestamp", "2 minutes")  # tolerate late data
            .groupBy(window("timestamp", "1 minute").alias("w"), col("value"))
            .agg(count("*").alias("n"))
            .select(col("w.start").alias("window_start"), col("n"))
        )
        if os.environ.get("DEBUG_SINKS") == "1":
            agg.writeStream.format("console").outputMode("complete").option("truncate", False).start()
        curated = (
            agg.writeStream
            .format("parquet")
            .option("path", "out")
            .outputMode("append")  # required with watermarked windows
            .start()
        )
        """
    )
    assert 'agg.writeStream.format("console").outputMode("update").option("truncate", False).start()' in fixed
    assert '.outputMode("append")  # required with watermarked windows' in fixed
    assert fixed.count("withWatermark") == 1


def test_a_console_and_a_memory_table_both_in_complete_mode_are_left_alone():
    _unfixed(
        """\
        spark = SparkSession.builder.getOrCreate()
        counts = spark.readStream.format("rate").load().groupBy(window("timestamp", "1 minute")).count()
        counts.writeStream.outputMode("complete").format("console").start()
        counts.writeStream.outputMode("complete").format("memory").queryName("c").start()
        spark.table("c").show()
        """
    )


def test_a_memory_table_nothing_reads_gets_update_mode_like_the_console():
    fixed = _fixed(
        """\
        spark = SparkSession.builder.getOrCreate()
        counts = spark.readStream.format("rate").load().groupBy(window("timestamp", "1 minute")).count()
        query = counts.writeStream.outputMode("complete").format("memory").queryName("probe").start()
        print(query.lastProgress["stateOperators"])
        """
    )
    assert '.withWatermark("timestamp", "10 minutes")\n    .groupBy(' in fixed
    assert 'outputMode("update").format("memory")' in fixed


def test_a_memory_table_named_in_an_f_string_query_counts_as_read():
    _unfixed(
        """\
        spark = SparkSession.builder.getOrCreate()
        counts = spark.readStream.format("rate").load().groupBy(window("timestamp", "1 minute")).count()
        counts.writeStream.outputMode("complete").format("memory").queryName("probe").start()
        limit = 5
        spark.sql(f"select * from probe limit {limit}").show()
        """
    )


def test_a_dedup_on_an_id_gets_a_watermark_and_dropduplicateswithinwatermark():
    fixed = _fixed(
        """\
        spark = SparkSession.builder.getOrCreate()
        events = (
            spark.readStream
            .schema("event_id string, event_time timestamp, page string")
            .json("events")
        )
        unique = (
            events
            .select("event_id", "event_time")
            # the producer resends on timeouts
            .dropDuplicates(subset=["event_id"])
        )
        unique.writeStream.format("console").start()
        """
    )
    assert (
        '    .select("event_id", "event_time")\n'
        '    .withWatermark("event_time", "10 minutes")\n'
        "    # the producer resends on timeouts\n"
        '    .dropDuplicatesWithinWatermark(subset=["event_id"])\n'
    ) in fixed, fixed


def test_a_whole_row_distinct_gets_the_watermark_alone():
    fixed = _fixed(
        """\
        spark = SparkSession.builder.getOrCreate()
        taps = spark.readStream.schema("user string, tap_ts timestamp").json("taps")
        taps.distinct().writeStream.format("console").start()
        """
    )
    assert 'taps.withWatermark("tap_ts", "10 minutes").distinct().writeStream' in fixed


def test_a_dedup_whose_rows_have_no_single_timestamp_named_like_an_event_time_is_left_alone():
    for schema in (
        "id string, sent_time timestamp, seen_time timestamp",  # which one is the event time?
        "id string, event_time string",  # a string: a watermark needs a timestamp
        "id string, birthday timestamp",  # a timestamp, but not named like the event's time
    ):
        _unfixed(
            f"""\
            spark = SparkSession.builder.getOrCreate()
            rows = spark.readStream.schema("{schema}").json("in")
            rows.dropDuplicates(["id"]).writeStream.format("console").start()
            """
        )


def test_a_join_condition_is_read_only_from_its_own_function(tmp_path):
    # `in_time` is bound in `build` and is a parameter of `run`: the join in `run` reads neither.
    job = tmp_path / "job.py"
    code = (
        HEAD + "from pyspark.sql import functions as F\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        "def build():\n"
        '    in_time = F.expr("ad_id = ad AND click_time BETWEEN view_time AND view_time + INTERVAL 1 HOUR")\n'
        "    return in_time\n"
        "def run(in_time):\n"
        '    views = spark.readStream.schema("ad_id string, view_time timestamp").json("views")\n'
        '    clicks = spark.readStream.schema("ad string, click_time timestamp").json("clicks")\n'
        '    views.join(clicks, in_time).writeStream.format("console").start()\n'
    )
    job.write_text(code)
    run = CliRunner().invoke(main, ["fix", "--unsafe-fixes", "--show-unfixed", str(job)])
    assert "SPX204 not fixed: no automatic fix here: the join's condition is built elsewhere" in run.output
    assert job.read_text() == code
    # Bound once in `run` itself, before the join: read, and both sides get a watermark.
    inline = code.replace("def run(in_time):\n", "def run():\n    in_time = build()\n").replace(
        "    in_time = build()\n",
        '    in_time = F.expr("ad_id = ad AND click_time BETWEEN view_time AND view_time + INTERVAL 1 HOUR")\n',
    )
    fixed = fix_source("job.py", inline, {"SPX204"}, unsafe=True).fixed
    assert 'views.withWatermark("view_time", "10 minutes")' in fixed
    assert 'clicks.withWatermark("click_time", "10 minutes")' in fixed


def test_show_unfixed_names_the_step_that_needs_complete_mode(tmp_path):
    job = tmp_path / "job.py"
    job.write_text(
        HEAD + "spark = SparkSession.builder.getOrCreate()\n"
        'counts = spark.readStream.format("rate").load().groupBy(window("timestamp", "1 minute")).count()\n'
        'counts.limit(5).writeStream.outputMode("complete").format("console").start()\n'
    )
    run = CliRunner().invoke(main, ["fix", "--unsafe-fixes", "--show-unfixed", str(job)])
    assert (
        "SPX204 not fixed: no automatic fix here: `limit` after the aggregation is allowed in complete mode only"
        in run.output
    ), run.output


def test_an_arrival_time_is_used_only_when_it_reaches_the_dedup_unchanged():
    stamped = (
        "from pyspark.sql import functions as F\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        'events = spark.readStream.schema("event_id string, body string").json("in")\n'
        'seen = events.withColumn("seen_at", F.current_timestamp()).where("body IS NOT NULL")\n'
    )
    fixed = _fixed(stamped + 'seen.dropDuplicates(["event_id"]).writeStream.format("console").start()\n')
    assert 'seen.withWatermark("seen_at", "10 minutes")\n    .dropDuplicatesWithinWatermark(["event_id"])' in fixed
    # Dropped by a select, overwritten by another value, or a whole-row distinct (each row's
    # arrival time already tells it apart): no fix.
    for dedup in (
        'seen.select("event_id", "body").dropDuplicates(["event_id"])',
        'seen.withColumn("seen_at", F.lit(None)).dropDuplicates(["event_id"])',
        "seen.distinct()",
    ):
        _unfixed(stamped + f'{dedup}.writeStream.format("console").start()\n')
