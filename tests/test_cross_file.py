"""Helpers imported from another module of the project: real multi-file projects on disk, linted
through the CLI. Findings land at the call in the importing file, with the helper as a related
location in its own file; the cache is invalidated when an imported module changes."""

from __future__ import annotations

import json
import textwrap

import pytest

from sparkpar_lint.project import summary

HELPERS = textwrap.dedent(
    """\
    from pyspark.sql import functions as F


    def load_events(spark):
        return spark.readStream.format("kafka").option("subscribe", "events").load()


    def merge_counts(pairs, combine):
        return pairs.reduceByKey(combine)


    def latest(df):
        return df.dropDuplicates(["user"]).select("user", "ts")
    """
)

JOB = textwrap.dedent(
    """\
    from pyspark.sql import SparkSession, functions as F

    from .helpers import load_events, merge_counts
    from pkg.helpers import latest

    spark = SparkSession.builder.getOrCreate()
    events = load_events(spark)
    events.groupBy("user").count().writeStream.outputMode("complete").format("console").start()

    pairs = spark.sparkContext.parallelize([("a", 1), ("b", 2)])
    merge_counts(pairs, lambda a, b: a - b).collect()

    users = latest(spark.read.parquet("users"))
    users.groupBy("user").agg(F.first("ts")).show()
    """
)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helpers.py").write_text(HELPERS)
    (package / "job.py").write_text(JOB)
    return tmp_path


def _findings(cli, *args):
    result = cli("lint", *args, "--format", "json")
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def test_helpers_in_another_module_are_followed(sparkpar_cli, project):
    found = {(f["rule"], f["line"]) for f in _findings(sparkpar_cli, "--no-cache", "pkg/job.py")}
    # The stream comes from the helper: its aggregation keeps state (missed when read alone).
    assert ("SPX206", 8) in found
    # The non-commutative combiner the caller hands to the helper's reduceByKey.
    assert ("SPX108", 11) in found
    # The helper leaves one row per user: first() per user picks among one row.
    assert not any(rule == "SPX101" for rule, _ in found)


def test_the_same_job_without_its_helper_module_is_judged_alone(sparkpar_cli, project):
    (project / "pkg" / "helpers.py").unlink()
    found = {(f["rule"], f["line"]) for f in _findings(sparkpar_cli, "--no-cache", "pkg/job.py")}
    assert found == {("SPX101", 14)}


def test_call_site_finding_names_the_helper_in_its_file_and_has_no_fix(sparkpar_cli, project):
    finding = next(f for f in _findings(sparkpar_cli, "--no-cache", "pkg/job.py") if f["rule"] == "SPX108")
    assert (finding["path"], finding["line"], finding["column"]) == ("pkg/job.py", 11, 20)
    assert finding["fix"] is None
    assert [(r["path"], r["line"], r["column"]) for r in finding["related"]] == [("pkg/helpers.py", 8, 4)]
    text = sparkpar_cli("lint", "--no-cache", "pkg/job.py", "--select", "SPX108").stdout
    # The related location's code frame is the helper's own line, from its own file.
    assert "::: pkg/helpers.py:8:5: `merge_counts` is defined here" in text
    assert "8 | def merge_counts(pairs, combine):" in text
    sarif = json.loads(
        sparkpar_cli("lint", "--no-cache", "pkg/job.py", "--select", "SPX108", "--format", "sarif").stdout
    )
    related = sarif["runs"][0]["results"][0]["relatedLocations"][0]["physicalLocation"]
    assert related["artifactLocation"]["uri"] == "pkg/helpers.py"
    assert related["region"]["startLine"] == 8


def test_star_imports_and_module_aliases_resolve(sparkpar_cli, project):
    (project / "pkg" / "star.py").write_text(
        "from pyspark.sql import SparkSession\n"
        "from pkg.helpers import *\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        'load_events(spark).groupBy("user").count().writeStream.start()\n'
    )
    (project / "pkg" / "alias.py").write_text(
        "from pyspark.sql import SparkSession\n"
        "import pkg.helpers as h\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        'h.load_events(spark).groupBy("user").count().writeStream.start()\n'
    )
    found = {(f["path"], f["rule"]) for f in _findings(sparkpar_cli, "--no-cache", "pkg/star.py", "pkg/alias.py")}
    assert found == {("pkg/star.py", "SPX206"), ("pkg/alias.py", "SPX206")}


def test_a_name_outside_the_project_is_not_a_helper(sparkpar_cli, project):
    # `helpers` in another directory tree is not importable as `pkg.helpers` from here.
    other = project / "other"
    other.mkdir()
    (other / "job.py").write_text(JOB.replace("from .helpers import load_events, merge_counts\n", ""))
    found = {f["rule"] for f in _findings(sparkpar_cli, "--no-cache", "other/job.py")}
    assert "SPX206" not in found and "SPX108" not in found


def test_cached_result_is_invalidated_when_the_imported_module_changes(sparkpar_cli, project):
    first = {f["rule"] for f in _findings(sparkpar_cli, "pkg/job.py")}
    assert "SPX108" in first
    assert list((project / ".sparkpar_cache" / "summaries").glob("*.json"))
    # The helper stops using the caller's combiner: the job's cached findings must not survive.
    helpers = project / "pkg" / "helpers.py"
    helpers.write_text(HELPERS.replace("reduceByKey(combine)", "reduceByKey(lambda a, b: a + b)"))
    second = {f["rule"] for f in _findings(sparkpar_cli, "pkg/job.py")}
    assert "SPX108" not in second and "SPX206" in second
    helpers.write_text(HELPERS)
    assert {f["rule"] for f in _findings(sparkpar_cli, "pkg/job.py")} == first


def test_a_module_is_summarised_once_for_all_its_importers(project, monkeypatch):
    from sparkpar_lint.analysis import analyze

    computed = []
    original = summary._compute
    monkeypatch.setattr(
        summary, "_compute", lambda path, data, project=None: computed.append(path) or original(path, data, project)
    )
    monkeypatch.setattr(summary.ProjectIndex, "_memo", {})
    for name in ("a", "b", "c"):
        path = project / "pkg" / f"{name}.py"
        path.write_text(JOB)
        rules = {f.rule_id for f in analyze(str(path), JOB)}
        assert "SPX108" in rules
    assert [p.rsplit("/", 1)[-1] for p in computed] == ["helpers.py"]


def test_a_broken_helper_module_leaves_the_importer_analysed_alone(sparkpar_cli, project):
    (project / "pkg" / "helpers.py").write_text("def load_events(spark:\n")
    result = sparkpar_cli("lint", "--no-cache", "pkg/job.py", "--format", "json")
    assert result.exit_code == 1, result.output
    assert {f["rule"] for f in json.loads(result.stdout)} == {"SPX101"}


TRANSFORM = textwrap.dedent(
    """\
    from pyspark.sql import functions as F


    def issue_tasks(issues):
        return issues.groupBy("dataset", "issue_type").agg(F.first("severity").alias("severity"))
    """
)

PIPELINE = textwrap.dedent(
    """\
    from pyspark.sql import SparkSession

    from pkg.transform import issue_tasks

    spark = SparkSession.builder.getOrCreate()
    kinds = spark.createDataFrame([("missing", "error"), ("late", "warning")], ["issue_type", "severity"])
    issues = spark.read.parquet("issues").join(kinds, on="issue_type", how="left")
    issue_tasks(issues).write.parquet("tasks")
    """
)


@pytest.fixture
def callers(project):
    (project / "pkg" / "transform.py").write_text(TRANSFORM)
    (project / "pkg" / "pipeline.py").write_text(PIPELINE)
    return project


def _spx101(cli, *args) -> list[int]:
    return [f["line"] for f in _findings(cli, *args, "--select", "SPX101", "pkg/transform.py")]


def test_what_every_caller_passes_is_known_to_the_helper(sparkpar_cli, callers):
    # Every caller joins `severity` in from a reference table keyed by issue_type, a group key.
    assert _spx101(sparkpar_cli, "--no-cache") == []


def test_without_callers_the_helper_is_judged_alone(sparkpar_cli, callers):
    (callers / "pkg" / "pipeline.py").unlink()
    assert _spx101(sparkpar_cli, "--no-cache") == [5]


def test_a_caller_whose_lookup_repeats_keys_keeps_the_finding(sparkpar_cli, callers):
    # Rows read from storage are not a lookup keyed by issue_type: several severities per type.
    (callers / "pkg" / "other.py").write_text(
        PIPELINE.replace(
            'spark.createDataFrame([("missing", "error"), ("late", "warning")], ["issue_type", "severity"])',
            'spark.read.parquet("issue_kinds").select("issue_type", "severity")',
        )
    )
    assert _spx101(sparkpar_cli, "--no-cache") == [5]


def test_test_modules_are_not_callers(sparkpar_cli, callers):
    (callers / "tests").mkdir()
    (callers / "tests" / "test_transform.py").write_text(
        "from pyspark.sql import SparkSession\nfrom pkg.transform import issue_tasks\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        'issue_tasks(spark.createDataFrame([("d", "x", "error")], ["dataset", "issue_type", "severity"])).show()\n'
    )
    assert _spx101(sparkpar_cli, "--no-cache") == []


def test_a_changed_caller_invalidates_the_helpers_cached_result(sparkpar_cli, callers):
    assert _spx101(sparkpar_cli) == []
    pipeline = callers / "pkg" / "pipeline.py"
    pipeline.write_text(PIPELINE.replace('.join(kinds, on="issue_type", how="left")', ""))
    assert _spx101(sparkpar_cli) == [5]


def test_a_session_of_unknown_origin_still_reaches_the_helper(sparkpar_cli, project):
    # The session comes from a library the linter cannot see: the helper is followed all the same.
    (project / "pkg" / "session_job.py").write_text(
        "from platform_tools import session\n"
        "from pkg.helpers import load_events\n"
        "spark = session.get()\n"
        'load_events(spark).groupBy("user").count().writeStream.start()\n'
    )
    found = {(f["rule"], f["line"]) for f in _findings(sparkpar_cli, "--no-cache", "pkg/session_job.py")}
    assert found == {("SPX206", 4)}


DEDUP = textwrap.dedent(
    """\
    from pyspark.sql import Window, functions as F


    def keep_one(rows):
        by_key = Window.partitionBy("plant", "valid_from").orderBy("plant", "valid_from")
        return rows.withColumn("n", F.row_number().over(by_key)).filter("n = 1").drop("n")
    """
)

READS = textwrap.dedent(
    """\
    from pyspark.sql import SparkSession

    from pkg.reads import plants
    from pkg.dedup import keep_one

    spark = SparkSession.builder.getOrCreate()
    keep_one(plants(spark).filter("active")).write.parquet("plants_current")
    """
)


@pytest.fixture
def dedup(project):
    (project / "pkg" / "dedup.py").write_text(DEDUP)
    (project / "pkg" / "reads.py").write_text('def plants(spark):\n    return spark.read.table("raw.plants")\n')
    (project / "pkg" / "plant_job.py").write_text(READS)
    return project


def _spx104(cli) -> list[int]:
    return [f["line"] for f in _findings(cli, "--no-cache", "--select", "SPX104", "pkg/dedup.py")]


def test_a_window_ordered_by_its_keys_over_rows_every_caller_reads_from_storage(sparkpar_cli, dedup):
    # Read alone the helper's rows may be unique on the keys already; its only caller reads them
    # from a table (through another helper), so each key's kept row is the shuffle's choice.
    assert _spx104(sparkpar_cli) == [6]


def test_a_window_ordered_by_its_keys_without_callers_stays_unjudged(sparkpar_cli, dedup):
    (dedup / "pkg" / "plant_job.py").unlink()
    assert _spx104(sparkpar_cli) == []


def test_a_caller_passing_rows_unique_on_the_keys_decides_for_the_helper(sparkpar_cli, dedup):
    (dedup / "pkg" / "plant_job.py").write_text(
        READS.replace('.filter("active")', '.dropDuplicates(["plant", "valid_from"])')
    )
    assert _spx104(sparkpar_cli) == []


def test_every_caller_must_read_from_storage(sparkpar_cli, dedup):
    # A second caller hands over a frame from a library the linter cannot see: the facts common
    # to all callers no longer say the rows come from storage.
    (dedup / "pkg" / "feed_job.py").write_text(
        "from platform_tools import feeds\n"
        "from pkg.dedup import keep_one\n"
        'keep_one(feeds.current("plants")).write.parquet("plant_feed")\n'
    )
    assert _spx104(sparkpar_cli) == []
