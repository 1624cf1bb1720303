"""Speed and detection rate of the pytest plugin's permuted runs.

    python bench/plugin_speed.py                    # full: 50 seeds for bad jobs, 50 for twins
    python bench/plugin_speed.py --seeds 10 --twin-seeds 3    # quick
    python bench/plugin_speed.py --skip-throughput --per-run 20   # detection per bad job, fast
    python bench/plugin_speed.py --startup 3        # start-up with and without the class archive
    python bench/plugin_speed.py --skip-detection --streaming 6   # also s per streaming interleaving

Throughput: the reference job (tests/plugin_jobs/fixed_pandas_ffill.py: 300 rows, groupBy plus a
grouped pandas function) under --variants interleavings, two ways on the same warm session:
  * sparkpar: exact placement (each input partition parallelized as one slice), 3 threads, each
    with its own `newSession()` and each variant's SQL confs set on it;
  * naive: the straightforward serial loop — for each variant set the confs on the session,
    `createDataFrame(shuffled rows).repartition(n)`, run the job, collect.
  The two alternate in --blocks blocks, so a change of load weighs on both. Each side's CPU-seconds
  per interleaving (the whole process tree, a steadier figure than wall time on a shared machine)
  are printed too.
Start-up (--startup N): N pairs of fresh processes, alternating, each starting the session on the
master with and without the class-data archive (pytest_sparkpar.class_archive; made first in a
temporary cache if need be): wall and CPU seconds of the process tree (driver and executor JVMs,
Python workers) until the session is ready, then the same throughput run as above (sparkpar side)
so a slower steady state would show.
Detection: for every (bad, fixed) pair in tests/plugin_jobs/ (and fixtures/**/bad_*.py that
follow the `job` + `INPUTS` convention, twin = fixed_*/good_* beside it), the fraction of seeds
for which the default 20 interleavings catch the bad job, and false alarms on the twin.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_sparkpar import interleaving as il  # noqa: E402
from pytest_sparkpar.check import Checker, Settings, normalise  # noqa: E402
from pytest_sparkpar.orders import bag, sequence  # noqa: E402
from pytest_sparkpar.session import DETERMINISM_MASTER, start  # noqa: E402


def load(path: Path):
    """The module if it follows the `job` + `INPUTS` convention, else None. Lint-only fixtures
    (streams from Kafka, module-level Spark code) are not executed at all."""
    text = path.read_text(encoding="utf-8")
    if "INPUTS" not in text or "def job(" not in text:
        return None
    name = "sparkpar_bench_" + "_".join(path.relative_to(ROOT).with_suffix("").parts)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module if hasattr(module, "job") and hasattr(module, "INPUTS") else None


def pairs() -> list[tuple[Path, Path | None]]:
    found = []
    for bad in sorted((ROOT / "tests" / "plugin_jobs").glob("bad_*.py")) + sorted(
        (ROOT / "fixtures").glob("**/bad_*.py")
    ):
        if "FAULTS_ONLY = True" in bad.read_text(encoding="utf-8"):
            continue  # a retry-safety bug: only --sparkpar-faults can show it, not a permuted run
        stem = bad.name[len("bad_") :]
        twin = next((bad.with_name(p + stem) for p in ("fixed_", "good_") if bad.with_name(p + stem).exists()), None)
        found.append((bad, twin))
    return found


def as_frame(session, result):
    """A fixture job's result as a DataFrame: RDDs and lists (which fixtures may return) become
    one string column of each row's plain repr, so outputs still compare row by row."""
    if hasattr(result, "columns"):
        return result
    rows = result.collect() if hasattr(result, "collect") else list(result)
    return session.createDataFrame([(repr(plain(row)),) for row in rows], "row string")


def plain(value):
    if isinstance(value, dict):
        return tuple(sorted((k, plain(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):  # Rows are tuples
        return tuple(plain(v) for v in value)
    return value


def sparkpar_job(module):
    """The module's job as sparkpar.check calls it. Fixture jobs (fixtures/**) take the session
    first, `job(spark, **inputs)`: it is bound to the session the permuted frames belong to, where
    each input is also a temp view of its name (as tests/spark_harness.py runs them)."""
    params = list(inspect.signature(module.job).parameters)
    if not params or params[0] != "spark":
        return module.job

    def job(**frames):
        session = next(iter(frames.values())).sparkSession
        for name, frame in frames.items():
            frame.createOrReplaceTempView(name)  # fixtures may read an input as a table, by name
        return as_frame(session, module.job(session, **frames))

    job.__signature__ = inspect.Signature(
        [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY) for name in module.INPUTS]
    )
    return job


def order_of(value):
    # plugin_jobs give order objects; fixtures give "bag" / "sequence" (see tests/spark_harness.py)
    return {"bag": bag(), "sequence": sequence()}.get(value, value) if isinstance(value, str) else value


def checker_for(spark, module, runs: int, seed: int) -> tuple[Checker, dict]:
    settings = Settings(True, runs, seed, "", "bench", "")
    names = list(module.INPUTS)
    order = order_of(getattr(module, "INPUT_ORDER", None)) or bag()
    orders = order if isinstance(order, dict) else dict.fromkeys(names, order)
    checker = Checker(
        spark,
        settings,
        sparkpar_job(module),
        orders,
        order_of(getattr(module, "OUTPUT", None)) or bag(),
        getattr(module, "STREAMING", False),
        getattr(module, "OUTPUT_MODE", "append"),
        None,
    )
    schemas = getattr(module, "SCHEMA", None) or {}
    datasets = {n: normalise(spark, v, schemas.get(n)) for n, v in module.INPUTS.items()}
    return checker, datasets


def throughput(spark, variants: int, blocks: int) -> None:
    """The two loops in alternating blocks of variants/blocks interleavings each, so a change of
    the machine's load in the middle weighs on both sides alike."""
    module = load(ROOT / "tests" / "plugin_jobs" / "fixed_pandas_ffill.py")
    size = max(1, variants // blocks)
    checker, datasets = checker_for(spark, module, size, 1)
    sequential = checker.sequential(datasets)
    checker.search(datasets, sequential, 0)  # warm-up: JIT, Python workers on both executors
    rng = random.Random(1)
    data = datasets["df"]
    ours = naive = ours_cpu = naive_cpu = 0.0
    for block in range(blocks):
        start_time, start_cpu = time.perf_counter(), tree_cpu_seconds()
        assert checker.search(datasets, sequential, 1 + block) is None
        ours += time.perf_counter() - start_time
        ours_cpu += tree_cpu_seconds() - start_cpu

        start_time, start_cpu = time.perf_counter(), tree_cpu_seconds()
        for _ in range(size):
            variant = il.draw(il.RandomChooser(rng), checker.spec(datasets), False, checker.default_parallelism)
            for key, value in variant.confs().items():
                spark.conf.set(key, value)
            placement = variant.placements["df"]
            frame = spark.createDataFrame([data.rows[i] for i in placement.order], data.schema).repartition(
                placement.partitions
            )
            module.job(frame).collect()
        naive += time.perf_counter() - start_time
        naive_cpu += tree_cpu_seconds() - start_cpu
    spark.conf.set("spark.sql.shuffle.partitions", "4")
    done = size * blocks
    print(
        f"throughput on {len(data.rows)}-row groupBy+applyInPandas job, {done} variants in {blocks} alternating blocks:"
    )
    print(
        f"  sparkpar {done / ours:.2f} interleavings/s, naive serial loop {done / naive:.2f}/s, "
        f"ratio {naive / ours:.2f}x (load {os.getloadavg()[0]:.1f})"
    )
    print(
        f"  CPU-seconds per interleaving (driver and executor JVMs, Python workers, this process): "
        f"sparkpar {ours_cpu / done:.3f}, naive {naive_cpu / done:.3f}"
    )


def streaming_throughput(spark, variants: int) -> None:
    """Seconds per permuted streaming interleaving (tests/plugin_jobs/fixed_stream_dedup.py: 60
    rows in up to 4 micro-batches, a complete-mode aggregate), as sparkpar.check runs them."""
    module = load(ROOT / "tests" / "plugin_jobs" / "fixed_stream_dedup.py")
    checker, datasets = checker_for(spark, module, variants, 1)
    sequential = checker.sequential(datasets)
    checker.search(datasets, sequential, 0)  # warm-up
    began = time.perf_counter()
    assert checker.search(datasets, sequential, 1) is None
    elapsed = time.perf_counter() - began
    print(
        f"streaming: {elapsed / variants:.2f} s per interleaving ({variants} interleavings, load {os.getloadavg()[0]:.1f})"
    )


def tree_cpu_seconds() -> float:
    """CPU seconds of this process and every live descendant (the JVMs and Python workers)."""
    ticks, parents, cpu = os.sysconf("SC_CLK_TCK"), {}, {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()  # after the command name, which may hold anything
        except OSError:
            continue  # gone
        parents[int(entry)] = int(fields[1])
        cpu[int(entry)] = sum(map(int, fields[11:15])) / ticks  # user, system, and waited-for children

    def descends(pid: int) -> bool:
        while pid > 1 and pid != os.getpid():
            pid = parents.get(pid, 0)
        return pid == os.getpid()

    return sum(seconds for pid, seconds in cpu.items() if descends(pid))


def startup_child(master: str, variants: int) -> None:
    """One fresh start-up, then the steady state; prints one JSON line."""
    began = time.perf_counter()
    spark = start(master)
    wall, cpu = time.perf_counter() - began, tree_cpu_seconds()
    module = load(ROOT / "tests" / "plugin_jobs" / "fixed_pandas_ffill.py")
    checker, datasets = checker_for(spark, module, variants, 1)
    sequential = checker.sequential(datasets)
    checker.search(datasets, sequential, 0)  # warm-up, as in throughput()
    began = time.perf_counter()
    checker.search(datasets, sequential, 1)
    rate = variants / (time.perf_counter() - began)
    spark.stop()
    print(json.dumps({"wall": wall, "cpu": cpu, "rate": rate, "load": os.getloadavg()[0]}), flush=True)


def startup(master: str, pairs_: int, variants: int, cache: str) -> None:
    from pytest_sparkpar import class_archive

    base = dict(os.environ, SPARKPAR_CACHE_DIR=cache)

    def child(archive: bool) -> dict:
        env = dict(base, SPARKPAR_CLASS_ARCHIVE="on" if archive else "off")
        command = [sys.executable, __file__, "--startup-child", "--master", master, "--variants", str(variants)]
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"a start-up run failed:\n{done.stderr[-3000:]}")
        return json.loads(done.stdout.strip().splitlines()[-1])

    os.environ["SPARKPAR_CACHE_DIR"] = cache
    directory = class_archive._directory(master)
    print(f"start-up on {master}: making the class archive in {cache} ...", flush=True)
    began = time.perf_counter()
    child(True)  # records the classes; its builder runs when it exits
    while not (directory / class_archive.ARCHIVE).exists():
        if (directory / class_archive.FAILED).exists() or time.perf_counter() - began > 1800:
            print("  the archive could not be made", flush=True)
            return
        time.sleep(2)
    size = (directory / class_archive.ARCHIVE).stat().st_size
    print(f"  made in {time.perf_counter() - began:.0f} s (recording run included), {size / 1e6:.0f} MB", flush=True)
    print(f"  {'':16s} {'start-up wall':>14s} {'start-up CPU':>13s} {'interleavings/s':>16s}  load")
    totals: dict[bool, list[dict]] = {False: [], True: []}
    for _ in range(pairs_):
        for archive in (False, True):
            figures = child(archive)
            totals[archive].append(figures)
            name = "with archive" if archive else "without"
            print(
                f"  {name:16s} {figures['wall']:12.1f} s {figures['cpu']:11.1f} s {figures['rate']:16.2f}"
                f"  {figures['load']:.1f}",
                flush=True,
            )
    for archive in (False, True):
        runs = totals[archive]
        name = "with archive" if archive else "without"
        print(
            f"  {name + ' (mean)':16s} {sum(r['wall'] for r in runs) / len(runs):12.1f} s "
            f"{sum(r['cpu'] for r in runs) / len(runs):11.1f} s {sum(r['rate'] for r in runs) / len(runs):16.2f}"
        )


def fresh_naive(spark, master: str, variants: int):
    """Re-create the session for every variant, as a test would with a fresh configuration."""
    module = load(ROOT / "tests" / "plugin_jobs" / "fixed_pandas_ffill.py")
    rows, schema = module.INPUTS["df"]
    rng = random.Random(2)
    began = time.perf_counter()
    for _ in range(variants):
        spark.stop()
        spark = start(master)
        shuffled = rng.sample(rows, len(rows))
        spark.conf.set("spark.sql.shuffle.partitions", str(rng.choice(il.SHUFFLE_PARTITIONS)))
        module.job(spark.createDataFrame(shuffled, schema).repartition(rng.randint(1, 8))).collect()
    rate = variants / (time.perf_counter() - began)
    print(f"  naive fresh-session loop {rate:.3f} interleavings/s ({variants} variants)", flush=True)
    return spark


def detection(spark, seeds: int, twin_seeds: int, runs: int) -> None:
    print(f"detection with {runs} interleavings per check:")
    for bad, twin in pairs():
        for path, count, expect_bug in ((bad, seeds, True), (twin, twin_seeds, False)):
            if path is None or count == 0:
                continue
            module = load(path)
            if module is None:
                print(f"  {path.relative_to(ROOT)}: skipped (no job/INPUTS)")
                continue
            checker, datasets = checker_for(spark, module, runs, 0)
            sequential = checker.sequential(datasets)
            began = time.perf_counter()
            caught = sum(checker.search(datasets, sequential, seed) is not None for seed in range(count))
            what = "caught" if expect_bug else "false alarms"
            print(
                f"  {str(path.relative_to(ROOT)):48s} {what} {caught}/{count} = {caught / count:6.1%}"
                f"  ({time.perf_counter() - began:.0f} s)",
                flush=True,
            )


ENOUGH = 3  # differing runs after which a job's per-run rate is plainly high


def detection_per_run(spark, sample: int, runs: int, shard: tuple[int, int]) -> None:
    """Per bad job, the share p of single permuted interleavings whose output differs (up to
    `sample` independent draws, stopping at the `ENOUGH`th differing one), and what it means for one
    check of `runs` interleavings: 1 - (1 - p)^runs, since a check's runs are independent draws
    and it fails at its first differing one. The cost is at most `sample` runs per job instead of
    seeds x runs; a bug seen `ENOUGH` times early is far above the 14% per run that 95% needs."""
    print(
        f"detection per bad job: up to {sample} interleavings each (stop at {ENOUGH} differing), per check of {runs}:"
    )
    caught_checks = []
    index, count = shard
    for bad, _twin in pairs()[index::count]:
        module = load(bad)
        if module is None:
            print(f"  {bad.relative_to(ROOT)}: skipped (no job/INPUTS)")
            continue
        checker, datasets = checker_for(spark, module, runs, 0)
        rng = random.Random(str(bad.relative_to(ROOT)))
        began = time.perf_counter()
        differing = ran = 0
        try:
            sequential = checker.sequential(datasets)
            while ran < sample and differing < ENOUGH:
                variant = il.draw(
                    il.RandomChooser(rng), checker.spec(datasets), checker.streaming, checker.default_parallelism
                )
                differing += checker.compare(datasets, variant, sequential, checker.run(datasets, variant)) is not None
                ran += 1
        except Exception as error:  # noqa: BLE001 - one job's error is reported, the others still run
            print(f"  {bad.relative_to(ROOT)}: error after {ran} runs: {type(error).__name__}: {str(error)[:150]}")
            continue
        p = differing / ran
        check = 1 - (1 - p) ** runs
        caught_checks.append(check)
        print(
            f"  {str(bad.relative_to(ROOT)):52s} {differing:3d}/{ran} runs differ, "
            f"per check {check:6.1%}  ({time.perf_counter() - began:.0f} s)",
            flush=True,
        )
    below = sum(c < 0.95 for c in caught_checks)
    print(f"  {len(caught_checks)} bad jobs, {below} below 95% per check")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--twin-seeds", type=int, default=None, help="seeds for the fixed twins (default --seeds)")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--variants", type=int, default=30, help="interleavings timed for throughput")
    parser.add_argument("--blocks", type=int, default=2, help="throughput: alternate the two loops in this many blocks")
    parser.add_argument("--master", default=DETERMINISM_MASTER)
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--skip-detection", action="store_true")
    parser.add_argument("--shard", default="0/1", metavar="I/N", help="--per-run: every Nth bad job from the Ith")
    parser.add_argument(
        "--per-run",
        type=int,
        default=0,
        metavar="K",
        help="measure detection from K independent interleavings per bad job (the rate of one "
        "differing run, and from it the rate per check) instead of --seeds whole checks",
    )
    parser.add_argument(
        "--startup",
        type=int,
        default=0,
        metavar="N",
        help="N pairs of fresh start-ups without and with the class archive (then only that)",
    )
    parser.add_argument("--streaming", type=int, default=0, metavar="N", help="also time N streaming interleavings")
    parser.add_argument("--startup-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--fresh-naive",
        type=int,
        default=0,
        metavar="N",
        help="also time N variants of the other naive loop: a new SparkSession "
        "(stop + start the SparkContext) per variant",
    )
    args = parser.parse_args()
    if args.startup_child:
        return startup_child(args.master, args.variants)
    if args.startup:
        with tempfile.TemporaryDirectory(prefix="sparkpar-bench-cache-") as cache:  # 190 MB
            return startup(args.master, args.startup, args.variants, cache)
    began = time.perf_counter()
    spark = start(args.master)
    print(f"master {args.master}, Spark started in {time.perf_counter() - began:.1f} s", flush=True)
    try:
        if not args.skip_throughput:
            throughput(spark, args.variants, args.blocks)
        if args.streaming:
            streaming_throughput(spark, args.streaming)
        if args.per_run:
            detection_per_run(spark, args.per_run, args.runs, tuple(map(int, args.shard.split("/"))))
        elif not args.skip_detection:
            detection(spark, args.seeds, args.seeds if args.twin_seeds is None else args.twin_seeds, args.runs)
        if args.fresh_naive:
            spark = fresh_naive(spark, args.master, args.fresh_naive)
    finally:
        spark.stop()
    print(f"total {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
