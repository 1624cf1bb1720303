"""Predicted vs measured: the planner's Spark advice, run on Spark.

For each job in bench/plan_jobs/ (batch and streaming micro-batches; chain, join, union;
selective and expanding operators), on one local-cluster session with an event log:

1. run it once untimed (a warm-up), then `--repeats` times at Spark's defaults (200 shuffle
   partitions, adaptive execution) — the run a user already has; the median run's Spark stage
   metrics (from the event log) and wall time (first SQL execution start to last end, as
   `sparkpar profile --event-log` reads it) are the profile;
   then `--repeats` times at `--second` shuffle partitions (default 16), whose median run is a
   second profile: two settings separate each stage's work from its per-task costs
   (sparkpar_lint/plan/stage_fit.py; `--second 0` plans from the first profile alone);
2. `sparkpar plan JOB --profile PROFILE [--profile SECOND] --format json` (the real CLI) gives
   the recommended setting as code (Spark's defaults when the predicted gain is within the noise
   band), the predicted seconds at the defaults and at the recommendation;
3. run it `--repeats` times at the recommendation (the advice's code is executed with `exec` on
   the session: it must run), then `--pairs` interleaved default and advised runs; medians of
   all default and all advised runs (the profile stays the one planned with);
4. print predicted vs measured speed-up and the error, every run's wall time, and per stage
   the tasks and seconds measured in the median runs beside the model's.

Batch jobs write to the `noop` sink; streaming jobs run `trigger(availableNow=True)` over the
input files (two per micro-batch) with a new checkpoint for every run (the setting applies to a
new query only). Calibrate first (`sparkpar plan --calibrate`); without a calibration file the
built-in constants are used. Usage:

    python bench/plan_vs_spark.py [--rows 400000] [--repeats 3] [--only a,b] [--calibration FILE]
                                  [--pairs N] [--second N] [--keep-log DIR]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
JOBS = HERE / "plan_jobs"
MASTER = "local-cluster[2,1,1024]"
SCHEMA = "id long, user long, ad long, value long, ts timestamp"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=400_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default="")
    parser.add_argument("--calibration", default=".sparkpar/calibration.json")
    parser.add_argument("--master", default=MASTER)
    parser.add_argument("--pairs", type=int, default=0, help="then this many interleaved default/advised runs")
    parser.add_argument("--second", type=int, default=16, help="shuffle partitions of the second profile (0: none)")
    parser.add_argument("--keep-log", default="", help="write the event log to this directory and keep it")
    args = parser.parse_args()
    calibration = Path(args.calibration)
    if not calibration.is_file():
        print(f"no calibration at {calibration}: built-in constants (run `sparkpar plan --calibrate`)")
    wanted = {n for n in args.only.split(",") if n}
    jobs = sorted(p for p in JOBS.glob("*.py") if not wanted or p.stem in wanted)

    from pyspark.sql import SparkSession

    from sparkpar_lint.plan.profile import Profile

    work = Path(tempfile.mkdtemp(prefix="sparkpar-plan-bench-"))
    logs = Path(args.keep_log) if args.keep_log else work / "spark-events"
    logs.mkdir(parents=True, exist_ok=True)
    spark = (
        SparkSession.builder.master(args.master)
        .appName("sparkpar-plan-vs-spark")
        .config("spark.eventLog.enabled", "true")
        .config("spark.eventLog.dir", logs.as_uri())
        .config("spark.eventLog.compress", "false")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    app = spark.sparkContext.applicationId
    log = next(p for p in logs.iterdir() if app in p.name)  # this session's (the directory may hold others)
    results = []
    try:
        data = _make_data(spark, work, args.rows)
        for path in jobs:
            module = _load(path)
            streaming = getattr(module, "STREAMING", False)
            load = os.getloadavg()[0]
            # A streaming warm-up at 200 state partitions would take minutes here; 2 warm the same code.
            spark.conf.set("spark.sql.shuffle.partitions", "2" if streaming else "200")
            try:
                _run(spark, module.job(spark, data), work, streaming)  # warm-up: code generation, file listing
            except Exception as error:  # a job that fails is reported, the others still run
                print(f"{path.stem}: the job failed: {str(error).splitlines()[0]}", flush=True)
                continue
            defaults = [_measured(spark, module, data, work, streaming, None, log) for _ in range(args.repeats)]
            measured_default = _median(defaults)
            # The profile is the median default run's: one run under this load can be 5x slower.
            profiled = measured_default
            profile_path = (logs if args.keep_log else work) / f"{path.stem}.profile.json"
            walls = tuple(round(r["wall"], 3) for r in defaults)
            Profile((), path.name, None, profiled["stages"], profiled["jobs"], profiled["span"], walls).write(
                profile_path
            )
            profiles = [profile_path]
            seconds = []
            if args.second:
                second_code = f'spark.conf.set("spark.sql.shuffle.partitions", "{args.second}")'
                seconds = [
                    _measured(spark, module, data, work, streaming, second_code, log) for _ in range(args.repeats)
                ]
                other = _median(seconds)
                profiles.append(profile_path.with_suffix(f".at{args.second}.json"))
                Profile((), path.name, None, other["stages"], other["jobs"], other["span"]).write(profiles[-1])
            report = _plan(path, profiles, calibration)
            found = report["spark"]
            code = found["recommended"]["code"]
            advised = [_measured(spark, module, data, work, streaming, code, log) for _ in range(args.repeats)]
            for _ in range(args.pairs):  # interleaved, so a change in the machine's load hits both
                defaults.append(_measured(spark, module, data, work, streaming, None, log))
                advised.append(_measured(spark, module, data, work, streaming, code, log))
            measured_default = _median(defaults)
            measured_best = _median(advised)
            row = {
                "job": path.stem,
                "kind": "streaming" if streaming else "batch",
                "partitions": found["recommended"]["shuffle_partitions"],
                "predicted_default": found["default"]["seconds"],
                "predicted_best": found["recommended"]["seconds"],
                "predicted_speedup": found["speedup"],
                "measured_default": measured_default["wall"],
                "measured_best": measured_best["wall"],
                "measured_speedup": measured_default["wall"] / measured_best["wall"],
                "default_walls": [round(r["wall"], 3) for r in defaults],
                "advised_walls": [round(r["wall"], 3) for r in advised],
                "second_walls": [round(r["wall"], 3) for r in seconds],
                "two_profiles": found.get("two_profiles"),
                "within_noise": found.get("within_noise"),
                "noise_band": found.get("noise_band"),
                "fitted_stages": found.get("fitted_stages"),
                "load": load,
                "load_end": os.getloadavg()[0],
                "stages": found["stages"],
                "code": code,
                "stage_check": _stage_check(profiled, measured_default, measured_best, found, calibration),
            }
            results.append(row)
            _print_row(row)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    _summary(results)
    return 0


def _make_data(spark, work: Path, rows: int) -> dict:
    from pyspark.sql import functions as F

    base = (
        spark.range(0, rows, 1, 4)
        .withColumn("user", (F.col("id") * 7919) % max(rows // 20, 1))
        .withColumn("ad", (F.col("id") * 104729) % 200)
        .withColumn("value", (F.col("id") * 31) % 100)
        .withColumn("ts", (F.lit(1_700_000_000) + F.col("id") * 3).cast("timestamp"))
    )
    data = {"schema": SCHEMA}
    for name, frame in (
        ("events", base),
        ("events_copy", base.withColumn("id", F.col("id") + rows)),
        (
            "clicks",
            base.filter(F.col("id") % 2 == 0)
            .withColumn("cost", (F.col("id") % 13).cast("double"))
            .select("id", "ad", "user", "cost"),
        ),
    ):
        target = work / name
        frame.repartition(4).write.parquet(str(target))
        data[name] = str(target)
    return data


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"plan_job_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _defaults(spark) -> None:
    spark.conf.set("spark.sql.shuffle.partitions", "200")
    spark.conf.set("spark.sql.adaptive.enabled", "true")


def _measured(spark, module, data, work, streaming, code, log: Path) -> dict:
    """One run at the defaults (code None) or at the advice: its wall time and Spark's stages."""
    from sparkpar_lint.plan.event_log import read_event_log

    _defaults(spark)
    if code is not None:
        exec(code, {"spark": spark})  # the planner's advice, as written
    # The frame is built before the window: reading a parquet schema is a Spark job of its own,
    # which the measured wall time does not include either.
    frame = module.job(spark, data)
    start = int(time.time() * 1000)
    wall = _run(spark, frame, work, streaming)
    end = int(time.time() * 1000) + 1
    metrics = read_event_log(log).between(start, end)
    return {"wall": wall, "stages": tuple(metrics.stages), "jobs": len(metrics.jobs), "span": metrics.span()}


def _median(runs: list[dict]) -> dict:
    """The run with the median wall time (the lower middle one for an even count)."""
    ordered = sorted(runs, key=lambda r: r["wall"])
    return ordered[(len(ordered) - 1) // 2]


def _stage_check(profiled: dict, default: dict, advised: dict, found: dict, calibration: Path) -> dict:
    """Per stage: what the model predicts from the profile vs what the median runs measured."""
    from sparkpar_lint.plan.spark_cost import SPARK_DEFAULTS, Settings, load_costs, predict

    costs = load_costs(calibration if calibration.is_file() else None)
    out = {}
    for name, run, settings in (
        ("default", default, SPARK_DEFAULTS),
        ("advised", advised, Settings(found["recommended"]["shuffle_partitions"])),
    ):
        predicted = predict(profiled["stages"], settings, costs)
        out[name] = {
            "wall": round(run["wall"], 3),
            "span": round(run["span"], 3),
            "measured": [(s.tasks, round(s.wall_seconds, 3), round(s.run_seconds, 3)) for s in run["stages"]],
            "predicted": [(p.tasks, round(p.seconds, 3)) for p in predicted.stages],
        }
    return out


def _run(spark, frame, work: Path, streaming: bool) -> float:
    started = time.perf_counter()
    if streaming:
        checkpoint = Path(tempfile.mkdtemp(dir=work, prefix="checkpoint-"))
        query = (
            frame.writeStream.format("noop")
            .outputMode("update")
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
    else:
        frame.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - started


def _plan(job: Path, profiles: list[Path], calibration: Path) -> dict:
    sparkpar = shutil.which("sparkpar", path=str(Path(sys.executable).parent)) or "sparkpar"
    command = [sparkpar, "plan", str(job), "--format", "json"]
    for profile in profiles:
        command += ["--profile", str(profile)]
    if calibration.is_file():
        command += ["--calibration", str(calibration)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"sparkpar plan failed on {job}: {done.stderr.strip()}")
    return json.loads(done.stdout)


def _print_row(row: dict) -> None:
    error = (row["predicted_speedup"] - row["measured_speedup"]) / row["measured_speedup"]
    print(
        f"{row['job']:<22} {row['kind']:<9} P={row['partitions']:<3} "
        f"predicted {row['predicted_default']:7.2f}s -> {row['predicted_best']:7.2f}s "
        f"({row['predicted_speedup']:.2f}x) | measured {row['measured_default']:7.2f}s -> "
        f"{row['measured_best']:7.2f}s ({row['measured_speedup']:.2f}x) | error {error:+.0%} "
        f"| load {row['load']:.1f}-{row['load_end']:.1f} | default runs {row['default_walls']} "
        f"advised runs {row['advised_walls']}",
        flush=True,
    )


def _summary(results: list[dict]) -> None:
    if not results:
        return
    errors = [abs(r["predicted_speedup"] - r["measured_speedup"]) / r["measured_speedup"] for r in results]
    within = sum(e <= 0.25 for e in errors)
    # Where the advice keeps the defaults, both medians ran the same setting: their difference
    # is this machine's run-to-run noise, not the advice.
    kept = [r["job"] for r in results if r["partitions"] == 200]
    slower = [r["job"] for r in results if r["measured_best"] > r["measured_default"] and r["job"] not in kept]
    print(
        f"\n{within}/{len(results)} predictions within ±25% of the measured speed-up "
        f"(max error {max(errors):.0%}); recommended slower than defaults: "
        f"{', '.join(slower) or 'none'}"
    )
    if kept:
        print(
            f"defaults kept (predicted gain within the noise band; both sides ran the same setting): {', '.join(kept)}"
        )
    print(json.dumps(results))


if __name__ == "__main__":
    raise SystemExit(main())
