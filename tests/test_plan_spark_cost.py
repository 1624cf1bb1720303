"""Spark's own metrics (event logs) and the Spark cost model behind `sparkpar plan --profile`.

tests/data/plan/eventlog_groupby_and_stateful_stream.json is a real Spark 4.1 event log, trimmed
to the events sparkpar reads (job and stage ends, job starts, SQL executions' changed settings):
on local-cluster[2,1,1024], a batch `groupBy("k").count()` over 200,000 rows at the defaults
(adaptive execution coalesced 200 partitions to 1 task), a parquet write, and a stateful
streaming count over two micro-batches at 5 shuffle partitions.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_sparkpar.session import QUICK_JIT
from sparkpar_lint.plan.event_log import EventLogError, StageRun, read_event_log
from sparkpar_lint.plan.operators import ModelError
from sparkpar_lint.plan.profile import Profile, load_profile
from sparkpar_lint.plan.spark_cost import (
    SPARK_DEFAULTS,
    Settings,
    SparkCosts,
    actions,
    batches,
    blocks_read,
    coalesced,
    costs_from_dict,
    predict,
    recommend,
    shuffle_writers,
    stage_tasks,
)

LOG = Path(__file__).parent / "data" / "plan" / "eventlog_groupby_and_stateful_stream.json"
SPARKPAR = [sys.executable, "-c", "from sparkpar_lint.cli import main; main()"]


def sparkpar(*args, cwd=None, env=None):
    # Never from the checkout: `python -c` would import its sparkpar_lint, not the installed one
    # (which alone has the rule data under sparkpar_lint.ruledata).
    cwd = cwd or tempfile.gettempdir()
    return subprocess.run([*SPARKPAR, *map(str, args)], capture_output=True, text=True, cwd=cwd, env=env, check=False)


def test_event_log_gives_each_stage_as_spark_measured_it():
    metrics = read_event_log(LOG)
    assert [s.stage_id for s in metrics.stages] == [0, 2, 3, 4, 5, 6, 7]
    assert len(metrics.jobs) == 5
    first, reduce = metrics.stages[0], metrics.stages[1]
    assert (first.tasks, first.input_rows, first.shuffle_write_rows) == (2, 200_000, 200)
    # Adaptive execution left one task of the 200 partitions; the setting and the mode are kept.
    assert (reduce.tasks, reduce.shuffle_read_rows, reduce.shuffle_partitions, reduce.adaptive) == (1, 200, 200, True)
    assert reduce.parents == (1,)
    stream = [s for s in metrics.stages if s.query is not None]
    assert [(s.stage_id, s.batch, s.stateful, s.tasks) for s in stream] == [
        (4, 0, False, 2),
        (5, 0, True, 5),
        (6, 1, False, 2),
        (7, 1, True, 5),
    ]
    # Streaming queries run without adaptive execution, at the setting their checkpoint fixed.
    assert {(s.shuffle_partitions, s.adaptive) for s in stream} == {(5, False)}
    assert all(s.run_seconds > 0 for s in metrics.stages)
    # Adaptive execution ran the groupBy as two jobs of one action; the parquet write is another.
    assert [s.execution for s in metrics.stages[:3]] == [0, 0, 1]
    assert (actions(metrics.stages), batches(metrics.stages)) == (2, 2)


def test_event_log_compressed_rolled_and_cut_off(tmp_path):
    zstandard = pytest.importorskip("zstandard")
    lines = LOG.read_text(encoding="utf-8").splitlines(keepends=True)
    rolled = tmp_path / "eventlog_v2_app-1"
    rolled.mkdir()
    half = len(lines) // 2
    # Spark 4's default: a directory of zstd files events_<n>_<app>, read in roll order.
    (rolled / "events_2_app-1.zstd").write_bytes(zstandard.ZstdCompressor().compress("".join(lines[half:]).encode()))
    (rolled / "events_1_app-1.zstd").write_bytes(zstandard.ZstdCompressor().compress("".join(lines[:half]).encode()))
    (rolled / "appstatus_app-1").write_text("")
    assert read_event_log(rolled).stages == read_event_log(LOG).stages
    cut = tmp_path / "cut.json"
    cut.write_text("".join(lines) + '{"Event": "SparkListenerJobStart", "Job I', encoding="utf-8")
    assert read_event_log(cut).stages == read_event_log(LOG).stages


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: p / "missing", "no such event log"),
        (lambda p: (p / "notes.txt").write_text("hello\n") and p / "notes.txt", "not a Spark event log"),
        (lambda p: (p / "empty").mkdir(exist_ok=True) or p / "empty", "no events_* files"),
        (lambda p: (p / "events_1_a.lz4").write_bytes(b"x") and p / "events_1_a.lz4", "not supported"),
        (
            lambda p: (p / "other.json").write_text('{"Event": "SparkListenerLogStart"}\n') and p / "other.json",
            "no Spark jobs",
        ),
    ],
)
def test_bad_event_logs_are_one_clear_error(tmp_path, make, message):
    with pytest.raises(EventLogError, match=re.escape(message)):
        read_event_log(make(tmp_path))
    done = sparkpar(
        "profile", "--event-log", make(tmp_path) if message != "no such event log" else tmp_path / "missing"
    )
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr


def test_profile_from_event_log_round_trips_through_the_cli(tmp_path):
    out = tmp_path / "profile.json"
    done = sparkpar("profile", "--event-log", LOG, "-o", out)
    assert done.returncode == 0, done.stderr
    assert "wrote 7 stage(s)" in done.stderr
    assert "1 streaming query, 2 micro-batch(es)" in done.stderr
    loaded = load_profile(out)
    assert loaded.stages == tuple(read_event_log(LOG).stages)
    assert loaded.jobs == 5 and loaded.rows == ()
    # The run's wall time: first job submitted to last job completed (this trimmed log keeps no
    # SQL execution end events; a full log's executions also count).
    assert loaded.wall_seconds == pytest.approx((1795451686712 - 1795451559578) / 1000)
    assert sparkpar("profile").returncode == 2  # neither a job nor a log


def test_adaptive_coalescing_and_streaming_task_counts():
    costs = SparkCosts(cores=2)
    assert coalesced(200, 10_046, 2) == 1  # under the 1 MB minimum partition size
    assert coalesced(200, 10 * 2**20, 2) == 2  # one partition per core
    assert coalesced(200, 10 * 2**30, 2) == 160  # 64 MB partitions
    assert coalesced(3, 10 * 2**30, 2) == 3  # never more than the setting
    metrics = read_event_log(LOG)
    source, reduce = metrics.stages[0], metrics.stages[1]
    stateful = metrics.stages[4]
    assert stage_tasks(source, Settings(7), costs) == 2  # input splits do not follow the setting
    assert stage_tasks(reduce, Settings(7, adaptive=False), costs) == 7
    assert stage_tasks(reduce, Settings(7), costs) == 1
    assert stage_tasks(stateful, Settings(7), costs) == 7  # a streaming query never coalesces


def test_prediction_charges_tasks_blocks_and_state_stores():
    metrics = read_event_log(LOG)
    stream = [s for s in metrics.stages if s.query is not None]
    costs = SparkCosts(
        cores=2, task_overhead=0.01, task_run=0.01, state_task=0.1, shuffle_block=1e-3, shuffle_fetch=5e-4
    )
    at = {p: predict(stream, Settings(p), costs).seconds for p in (1, 2, 5, 200)}
    assert at[2] < at[5] < at[200]
    # From 5 to 200 partitions, per micro-batch: 97 more waves of task overhead, 195 more tasks
    # each running a state store, spread over 2 cores, 195 more blocks written per map task (2
    # tasks) and as many more fetched by the stateful stage's tasks.
    per_batch = (100 - 3) * 0.01 + 195 * (0.01 + 0.1) / 2 + 2 * 195 * 1e-3 / 2 + 2 * 195 * 5e-4 / 2
    assert at[200] - at[5] == pytest.approx(2 * per_batch)
    # Measured at 5 partitions, predicted at 5: the measured executor time, spread over 2 cores.
    own = predict(stream, Settings(5), costs)
    assert [p.tasks for p in own.stages] == [2, 5, 2, 5]
    best = recommend(stream, costs)
    assert best.settings.shuffle_partitions == 2
    assert best.seconds == min(predict(stream, Settings(p), costs).seconds for p in range(1, 201))
    # Without state or blocks to pay for, fewer partitions than cores only lose parallelism.
    batch = [replace(s, stateful=False) for s in stream]
    free = replace(costs, state_task=0.0, shuffle_block=0.0, shuffle_fetch=0.0, task_overhead=0.0, task_run=0.0)
    assert (
        predict(batch, Settings(1, adaptive=False), free).seconds
        > predict(batch, Settings(2, adaptive=False), free).seconds
    )


def test_calibration_file_validation(tmp_path):
    good = costs_from_dict({"constants": {"cores": 4, "task_overhead": 0.5}}, "file")
    assert (good.cores, good.task_overhead, good.job_overhead) == (4, 0.5, SparkCosts().job_overhead)
    for constants, message in (
        ({"cores": 0}, "cores"),
        ({"task_overhead": -1}, ">= 0"),
        ({"speed": 1}, "unknown constant"),
        ({"cores": 1.5}, "whole number"),
        ({"state_task": "fast"}, ">= 0"),
    ):
        with pytest.raises(ValueError, match=message):
            costs_from_dict({"constants": constants}, "file")


JOB = textwrap.dedent("""\
    def job(spark, source):
        events = spark.readStream.schema("id long, k long").parquet(source)
        return events.groupBy("k").count()
    """)


def _stream_only_profile(tmp_path) -> Path:
    stages = [s for s in read_event_log(LOG).stages if s.query is not None]
    path = tmp_path / "stream.json"
    Profile((), "stream", None, tuple(stages), 2).write(path)
    return path


def test_plan_with_a_stage_profile_advises_the_cost_models_setting(tmp_path):
    job = tmp_path / "job.py"
    job.write_text(JOB, encoding="utf-8")
    calibration = tmp_path / "calibration.json"
    calibration.write_text(json.dumps({"constants": {"cores": 2, "state_task": 0.5}}), encoding="utf-8")
    done = sparkpar(
        "plan", job, "--profile", _stream_only_profile(tmp_path), "--calibration", calibration, "--format", "json"
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    spark = report["spark"]
    assert spark["calibration"] == str(calibration)
    assert spark["default"]["shuffle_partitions"] == 200
    assert spark["recommended"]["shuffle_partitions"] == report["shuffle_partitions"] <= 2
    assert spark["speedup"] > 1
    assert spark["stateful"] is True
    code = spark["recommended"]["code"]
    assert code == f'spark.conf.set("spark.sql.shuffle.partitions", "{report["shuffle_partitions"]}")'
    compile(code, "advice", "exec")
    setting = [a for a in report["advice"] if code in a]
    assert len(setting) == 1 and "new checkpointLocation" in setting[0]
    assert setting[0].startswith("leave spark.sql.shuffle.partitions alone")
    # No other shuffle-partition advice competes with the model's.
    assert sum("spark.sql.shuffle.partitions" in a for a in report["advice"]) == 1


def test_plan_reads_the_calibration_from_the_project_directory(tmp_path):
    job = tmp_path / "job.py"
    job.write_text(JOB, encoding="utf-8")
    profile = _stream_only_profile(tmp_path)
    builtin = json.loads(sparkpar("plan", job, "--profile", profile, "--format", "json", cwd=tmp_path).stdout)
    assert builtin["spark"]["calibration"] == "built-in defaults"
    (tmp_path / ".sparkpar").mkdir()
    (tmp_path / ".sparkpar" / "calibration.json").write_text(json.dumps({"constants": {"cores": 8}}))
    found = json.loads(sparkpar("plan", job, "--profile", profile, "--format", "json", cwd=tmp_path).stdout)
    assert found["spark"]["cores"] == 8
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    done = sparkpar("plan", job, "--profile", profile, "--calibration", bad)
    assert done.returncode == 2 and "not a calibration file" in done.stderr
    done = sparkpar("plan", "--calibrate", job)
    assert done.returncode == 2 and "plans nothing" in done.stderr


def test_stage_rows_in_a_profile_are_validated(tmp_path):
    stage = read_event_log(LOG).stages[0].to_dict()
    for change, message in (
        ({"tasks": -1}, "tasks"),
        ({"run_seconds": "x"}, "run_seconds"),
        ({"run_seconds": float("inf")}, "run_seconds"),
    ):
        path = tmp_path / "p.json"
        path.write_text(json.dumps({"stages": [{**stage, **change}]}), encoding="utf-8")
        with pytest.raises(ValueError, match=message):
            load_profile(path)
    missing = {k: v for k, v in stage.items() if k != "tasks"}
    path.write_text(json.dumps({"stages": [missing]}), encoding="utf-8")
    with pytest.raises(ValueError, match="needs 'tasks'"):
        load_profile(path)
    assert StageRun.from_dict(stage) == read_event_log(LOG).stages[0]
    assert SPARK_DEFAULTS == Settings(200, True)


@pytest.mark.spark
@pytest.mark.slow
def test_calibrate_fits_constants_from_micro_jobs_on_spark(tmp_path):
    if shutil.which("java") is None:
        pytest.skip("no Java")
    target = tmp_path / "calibration.json"
    # Its JVMs (driver and executors inherit the variable) on the quick JIT tier, as the plugin's
    # are: this test checks that the micro-jobs run and are found in the event log, not the
    # constants, and the optimising compiler took 45% of the command's CPU. Users keep the full JIT.
    quick = dict(os.environ, JAVA_TOOL_OPTIONS=QUICK_JIT)
    done = sparkpar("plan", "--calibrate", "--calibration", target, env=quick)
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads(target.read_text())
    constants = costs_from_dict(data, str(target))
    assert constants.cores == 2
    # Every micro-job ran and was found in the event log by its time window.
    assert len(data["measurements"]) >= 12 and all(m["stages"] >= 1 for m in data["measurements"])
    assert constants.task_overhead + constants.task_run > 0


def test_a_coalesced_task_fetches_a_block_per_map_task_and_partition():
    metrics = read_event_log(LOG)
    batch = [s for s in metrics.stages if s.query is None and s.job_id in (0, 1)]
    source, reduce = batch
    # Adaptive execution ran the map stage (0) as a job of its own; the reduce stage (2) names
    # a skipped copy of it (1) as its parent. The writer is still found, by the rows it wrote.
    assert reduce.parents == (1,) and source.stage_id == 0
    assert shuffle_writers(tuple(batch)) == {2: (source,)}
    assert blocks_read(reduce, batch, lambda parent: parent.tasks, 200) == 2 * 200
    costs = SparkCosts(
        cores=2, job_overhead=0, stage_overhead=0, task_overhead=0, task_run=0, shuffle_row=0, shuffle_block=1e-3
    )
    fetching = replace(costs, shuffle_fetch=2e-3)
    at = {p: predict(batch, Settings(p), fetching).seconds for p in (2, 200)}
    # Both settings coalesce into one reduce task; 200 partitions write 198 more blocks per map
    # task (2 tasks on 2 cores) and the one reduce task fetches 2 x 198 more, alone.
    assert [p.tasks for p in predict(batch, Settings(2), fetching).stages] == [2, 1]
    assert at[200] - at[2] == pytest.approx(198 * 1e-3 + 2 * 198 * 2e-3)
    assert at[200] - at[2] > predict(batch, Settings(200), costs).seconds - predict(batch, Settings(2), costs).seconds


def test_predictions_are_anchored_to_the_profiled_runs_wall_time():
    from sparkpar_lint.plan.spark_advice import spark_prediction
    from sparkpar_lint.plan.spark_cost import anchored, profiled_settings

    stream = tuple(s for s in read_event_log(LOG).stages if s.query is not None)
    costs = SparkCosts(cores=2, batch_overhead=5.0, state_task=0.1)
    assert profiled_settings(stream) == Settings(5, adaptive=False)
    at_200 = predict(stream, Settings(200), costs).seconds
    at_5 = predict(stream, Settings(5, adaptive=False), costs).seconds
    # The measured run is the prediction at its own setting; other settings add the model's
    # difference, so the model's fixed costs (batch_overhead here) do not enter.
    assert at_5 < 60.0
    assert anchored(stream, 60.0, Settings(5, adaptive=False), costs) == pytest.approx(60.0)
    assert anchored(stream, 60.0, Settings(200), costs) == pytest.approx(60.0 + at_200 - at_5)
    assert anchored(stream, None, Settings(200), costs) == at_200
    # A model that predicts more than the run measured is scaled to it: its ratio is kept.
    heavy = replace(costs, state_task=50.0)
    at_1, at_own = (predict(stream, x, heavy).seconds for x in (Settings(1), Settings(5, adaptive=False)))
    assert at_own > 12.0
    assert anchored(stream, 12.0, Settings(1), heavy) == pytest.approx(12.0 * at_1 / at_own)
    assert anchored(stream, 12.0, Settings(5, adaptive=False), heavy) == pytest.approx(12.0)
    found = spark_prediction(Profile((), "job", None, stream, 2, 60.0), costs)
    assert found["profiled"] == {"shuffle_partitions": 5, "wall_seconds": 60.0}
    assert found["default"]["seconds"] == pytest.approx(60.0 + at_200 - at_5, abs=1e-4)
    assert found["default"]["model_seconds"] == pytest.approx(at_200, abs=1e-4)


def test_a_runs_wall_time_spans_its_sql_executions_and_jobs():
    from sparkpar_lint.plan.event_log import metrics_from_events

    sql = "org.apache.spark.sql.execution.ui.SparkListenerSQLExecution"
    events = [
        {"Event": f"{sql}Start", "executionId": 0, "time": 1000},
        {"Event": "SparkListenerJobStart", "Job ID": 0, "Submission Time": 1500, "Properties": {}, "Stage IDs": []},
        {"Event": "SparkListenerJobEnd", "Job ID": 0, "Completion Time": 2500},
        {"Event": f"{sql}End", "executionId": 0, "time": 3000},
        {"Event": "SparkListenerJobStart", "Job ID": 1, "Submission Time": 9000, "Properties": {}, "Stage IDs": []},
        {"Event": "SparkListenerJobEnd", "Job ID": 1, "Completion Time": 9400},
    ]
    metrics = metrics_from_events(events)
    assert metrics.executions == [(1000, 3000)]
    assert metrics.between(0, 5000).span() == pytest.approx(2.0)  # planning before the job counts
    assert metrics.span() == pytest.approx(8.4)
    assert metrics.between(8000, 9999).span() == pytest.approx(0.4)


SQL_LOG = LOG.with_name("eventlog_chain_sql_metrics.json")  # a real run of bench/plan_jobs/chain_selective.py


def test_each_stage_lists_the_operators_that_ran_in_it_with_their_rows(tmp_path):
    # Spark 4.1 on local-cluster, at 1 shuffle partition with adaptive execution: the scan,
    # filter and partial aggregate ran in the map stage, the final aggregate after the shuffle.
    metrics = read_event_log(SQL_LOG)
    source, reduce = metrics.stages
    rows = [(o.name, o.rows) for o in source.operators if o.rows is not None]
    assert rows == [("Scan parquet", 400_000), ("ColumnarToRow", 400_000), ("Filter", 36_000), ("HashAggregate", 3_600)]
    assert [(o.name, o.rows) for o in reduce.operators if o.rows is not None] == [("HashAggregate", 1_800)]
    assert shuffle_writers(tuple(metrics.stages)) == {reduce.stage_id: (source,)}
    assert metrics.span() == pytest.approx(2.594)
    out = tmp_path / "p.json"
    done = sparkpar("profile", "--event-log", SQL_LOG, "-o", out)
    assert done.returncode == 0, done.stderr
    written = json.loads(out.read_text(encoding="utf-8"))
    assert written["stages"][0]["operators"][2] == {"operator": "Filter", "rows_out": 36_000}
    assert written["wall_seconds"] == pytest.approx(2.594)
    loaded = load_profile(out)
    assert loaded.stages == tuple(metrics.stages)
    job = tmp_path / "job.py"
    job.write_text(
        (Path(__file__).parents[1] / "bench" / "plan_jobs" / "chain_selective.py").read_text(encoding="utf-8"),
        encoding="utf-8",
    )
    done = sparkpar("plan", job, "--profile", out, "--format", "json")
    assert done.returncode == 0, done.stderr
    per_stage = json.loads(done.stdout)["spark"]["per_stage"]
    assert per_stage[0]["operators"] == ["Scan parquet", "ColumnarToRow", "Filter", "HashAggregate"]
    assert per_stage[1]["rows_out"] == 1_800
    assert {"operator": "Scan parquet", "scan time": 1.411} in per_stage[0]["operator_seconds"]


def test_each_operator_has_the_times_spark_measured_for_it_in_the_stage(tmp_path):
    # The same real run: Spark's timing SQL metrics (ms or ns) of each plan node, summed over
    # the stage's tasks, beside its rows; the fused pipeline's duration is its codegen node's.
    source, reduce = read_event_log(SQL_LOG).stages
    assert source.operators == (
        ("Scan parquet", 400_000, (("scan time", 1.411),)),
        ("ColumnarToRow", 400_000, ()),
        ("Filter", 36_000, ()),
        ("HashAggregate", 3_600, (("time in aggregation build", 1.534),)),
        ("WholeStageCodegen (1)", None, (("duration", 1.931),)),
        ("Exchange", None, (("shuffle write time", 0.001198),)),  # nanoseconds in the log
    )
    # The same Exchange node's read side ran in the reduce stage.
    assert reduce.operators == (
        ("Exchange", None, (("fetch wait time", 0.008), ("remote reqs duration", 0.043))),
        ("HashAggregate", 1_800, (("time in aggregation build", 0.063),)),
        ("WholeStageCodegen (2)", None, (("duration", 0.131),)),
    )
    out = tmp_path / "p.json"
    assert sparkpar("profile", "--event-log", SQL_LOG, "-o", out).returncode == 0
    written = json.loads(out.read_text(encoding="utf-8"))["stages"][0]["operators"]
    assert written[0] == {"operator": "Scan parquet", "rows_out": 400_000, "seconds": {"scan time": 1.411}}
    assert written[4] == {"operator": "WholeStageCodegen (1)", "seconds": {"duration": 1.931}}
    assert load_profile(out).stages[0].operators == source.operators
    # A profile written before operators had times still loads (rows only).
    old = json.loads(out.read_text(encoding="utf-8"))
    old["stages"][0]["operators"] = [{"operator": "Filter", "rows_out": 36_000}]
    out.write_text(json.dumps(old), encoding="utf-8")
    assert load_profile(out).stages[0].operators == (("Filter", 36_000, ()),)
    old["stages"][0]["operators"] = [{"operator": "Filter", "seconds": {"x": -1}}]
    out.write_text(json.dumps(old), encoding="utf-8")
    with pytest.raises(ModelError, match="seconds must be numbers >= 0"):
        load_profile(out)


def test_constants_larger_than_the_run_measured_are_reported(tmp_path):
    stream = tuple(s for s in read_event_log(LOG).stages if s.query is not None)
    profile = tmp_path / "stream.json"
    Profile((), "job", None, stream, 2, 10.0).write(profile)
    job = tmp_path / "job.py"
    job.write_text(JOB, encoding="utf-8")
    calibration = tmp_path / "calibration.json"
    for state_task, flagged in ((0.0, False), (30.0, True)):  # 30 s per state store: more than ran
        calibration.write_text(json.dumps({"constants": {"cores": 2, "state_task": state_task}}), encoding="utf-8")
        done = sparkpar("plan", job, "--profile", profile, "--calibration", calibration, "--format", "json")
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        stateful = [s.stage_id for s in stream if s.stateful]
        assert report["spark"]["overcharged_stages"] == (stateful if flagged else [])
        assert any("constants are too large" in n for n in report["notes"]) is flagged


def test_a_streaming_runs_wall_time_spans_its_query_from_start_to_last_batch(tmp_path):
    # A real run (Spark 4.1, local-cluster): bench/plan_jobs/stream_count.py at 2 partitions,
    # availableNow over two micro-batches. Its SQL executions cover 0.54 s; the query ran from
    # its start (listing sources, the offset log) to the end of its last trigger: 0.791 s, what
    # the bench's clock measured around start() and awaitTermination().
    log = LOG.with_name("eventlog_stream_query_run.json")
    metrics = read_event_log(log)
    assert metrics.queries == [(1795475599902, 1795475600693)]
    executions = max(e[1] for e in metrics.executions) - min(e[0] for e in metrics.executions)
    assert executions == 540
    assert metrics.span() == pytest.approx(0.791)
    assert [(s.tasks, s.stateful, s.batch) for s in metrics.stages] == [
        (2, False, 0),
        (2, True, 0),
        (2, False, 1),
        (2, True, 1),
    ]
    out = tmp_path / "p.json"
    assert sparkpar("profile", "--event-log", log, "-o", out).returncode == 0
    assert load_profile(out).wall_seconds == pytest.approx(0.791)
    # A window that starts after the query started leaves its run out.
    assert metrics.between(1795475600000, 1795475601000).queries == []
