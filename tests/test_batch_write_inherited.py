"""SPX205 through a base class in another module of the project: the `foreachBatch` lambda calls
a template method the subclass inherits (`self.for_each_batch`), which hands the batch and its id
to the override the subclass defines (`self._for_each_batch`). Real two-file projects on disk,
linted through the CLI; each finding is checked to its exact line and column."""

from __future__ import annotations

import json
import textwrap

import pytest

BASE = textwrap.dedent(
    """\
    class StreamApp:
        def __init__(self, name):
            self.name = name

        def for_each_batch(self, frame, epoch_id, spark):
            self.logger.write_log("info", f"epoch {epoch_id} start", epoch_id)
            self._for_each_batch(frame, epoch_id, spark)
            self.logger.write_log("info", f"epoch {epoch_id} end", epoch_id)

        def _for_each_batch(self, frame, epoch_id, spark):
            pass

        def keyed_batch(self, frame, epoch_id, spark):
            self._store(frame, f"/lake/rides/batch={epoch_id}")
    """
)

# The override appends; the id reaches only log lines, in the base class and here.
APPENDING = textwrap.dedent(
    """\
    from pyspark.sql import DataFrame, SparkSession
    from common.app import StreamApp


    class Rides(StreamApp):
        def main(self):
            spark = SparkSession.builder.getOrCreate()
            rides = spark.readStream.format("kafka").load()
            rides.writeStream.foreachBatch(lambda df, epoch: self.for_each_batch(df, epoch, spark)).start()

        def _for_each_batch(self, frame: DataFrame, epoch_id, spark):
            self.logger.write_log("info", "storing", epoch_id)
            self.store(frame.filter("fare > 0"), epoch_id=epoch_id)

        def store(self, rows: DataFrame, epoch_id):
            (rows.write
                .mode("append")
                .parquet("/lake/rides"))
            self.logger.write_log("info", "stored", epoch_id)
    """
)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "common").mkdir()
    (tmp_path / "common" / "__init__.py").write_text("")
    (tmp_path / "common" / "app.py").write_text(BASE)
    return tmp_path


def _spx205(cli, project, job: str) -> list[tuple[int, int]]:
    (project / "job.py").write_text(job)
    result = cli("lint", "--no-cache", "--min-confidence", "low", "--select", "SPX205", "--format", "json", "job.py")
    assert result.exit_code in (0, 1), result.output
    return [(f["line"], f["column"]) for f in json.loads(result.stdout)]


def test_the_append_of_an_override_the_base_template_calls_is_reported(sparkpar_cli, project):
    assert _spx205(sparkpar_cli, project, APPENDING) == [(18, 13)]


def test_without_the_base_module_the_inherited_call_may_key_on_the_id(sparkpar_cli, project):
    # Nothing says what `for_each_batch` does with the id: it may key the write, so no finding.
    (project / "common" / "app.py").unlink()
    assert _spx205(sparkpar_cli, project, APPENDING) == []


def test_a_base_template_that_keys_a_location_on_the_id_is_replay_safe(sparkpar_cli, project):
    keyed = APPENDING.replace("self.for_each_batch(df, epoch, spark)", "self.keyed_batch(df, epoch, spark)")
    assert _spx205(sparkpar_cli, project, keyed) == []


def test_an_override_that_overwrites_a_batch_keyed_location_is_replay_safe(sparkpar_cli, project):
    keyed = APPENDING.replace('.mode("append")', '.mode("overwrite")').replace(
        '.parquet("/lake/rides"))', '.parquet(f"/lake/rides/batch={epoch_id}"))'
    )
    assert _spx205(sparkpar_cli, project, keyed) == []


def test_a_keyword_named_like_the_id_is_not_a_use_of_it(sparkpar_cli, project):
    # `epoch_id=epoch_id` hands the id on: only the helper's use of it counts, here a log line.
    single = textwrap.dedent(
        """\
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.getOrCreate()
        def store(rows, epoch_id):
            print("storing", epoch_id)
            rows.write.mode("append").parquet("/lake/rides")
        def save(frame, epoch_id):
            store(frame, epoch_id=epoch_id)
        spark.readStream.format("kafka").load().writeStream.foreachBatch(save).start()
        """
    )
    assert _spx205(sparkpar_cli, project, single) == [(5, 30)]


def test_a_base_class_summary_survives_the_disk_cache(tmp_path):
    # Summaries are kept as JSON between runs: the methods read back are the ones computed.
    from sparkpar_lint.project.summary import ModuleSummary, ProjectIndex

    (tmp_path / "app.py").write_text(BASE)
    computed = ProjectIndex().module(str(tmp_path / "app.py"))
    assert computed is not None
    template = computed.classes["StreamApp"]["for_each_batch"]
    assert template.self_calls[0].method == "_for_each_batch"
    assert template.self_calls[0].args == ("frame", "epoch_id", "spark")
    assert {calls for param, calls in template.reads if param == "epoch_id"} == {("write_log",)}
    assert ModuleSummary.from_json(computed.to_json()) == computed
