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
    # A memory table, a foreachBatch function and a Kafka topic all see the whole result table each
    # batch in complete mode: update mode would change what they receive.
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
            """
        )


def test_a_sort_after_the_aggregation_needs_complete_mode_so_no_fix():
    _unfixed(
        """\
        spark = SparkSession.builder.getOrCreate()
        counts = spark.readStream.format("rate").load().groupBy(window("timestamp", "1 minute")).count()
        counts.orderBy("window").writeStream.outputMode("complete").format("console").start()
        """
    )


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
    )
    run = CliRunner().invoke(main, ["fix", "--unsafe-fixes", "--show-unfixed", str(job)])
    assert "SPX204 not fixed: no automatic fix here: complete mode into a sink whose readers" in run.output
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
    assert "SPX204 not fixed: no automatic fix here: a stream-stream join needs a watermark on each side" in run.output


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
