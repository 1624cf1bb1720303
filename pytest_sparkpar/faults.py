"""`--sparkpar-faults`: an executor JVM of the local-cluster is killed while a job runs.

A background thread watches the jobs through Spark's status tracker. In each job of two or more
stages it picks one stage that reads shuffle output (any but the job's first, at random), and
once a random number of that stage's tasks has finished (at least one, not all; or as soon as all
its remaining tasks are running, since waiting for one to finish could then miss the stage) it
sends SIGKILL to an executor process that holds map output the stage reads: one that ran tasks of
the job's stage before it (Spark's status store says which). Spark then re-runs the tasks that were on it
and, because those map outputs are gone, the map tasks that made them: the retried tasks
recompute rows that the first attempt already sent to reducers which finished. A kill aimed at
any executor could land on one that holds nothing the stage reads (under load one executor may
run a whole small stage), and then nothing is recomputed. A job whose map side is not repeatable (a nondeterministic UDF key, an
order-sensitive step after an unordered shuffle read) gives a different answer; Spark's own
safeguards (indeterminate stages are retried whole, or the job aborts) show up as a failure too.

The local-cluster's Worker starts a replacement executor; the next fault run waits for it, so
each fault run costs one executor JVM start (about 5-20 s on a busy machine).

Linux only: executors are found by their command line in /proc.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

EXECUTOR_MAIN = b"org.apache.spark.executor.CoarseGrainedExecutorBackend"
POLL_SECONDS = 0.005
RESTART_TIMEOUT = 180.0


@dataclass
class Fault:
    """What was done: `executor` (its pid) was killed in `stage` after `finished` of `tasks`."""

    stage: int
    finished: int
    tasks: int
    pid: int

    def describe(self) -> str:
        return (
            f"executor process {self.pid} killed (SIGKILL) in stage {self.stage} after {self.finished} "
            f"of its {self.tasks} tasks had finished; Spark re-ran the lost tasks and map outputs"
        )


def supported(master: str) -> bool:
    return master.startswith("local-cluster[") and os.path.isdir("/proc")


def executor_count(master: str) -> int:
    """N of `local-cluster[N, cores, memory]`."""
    return int(master[len("local-cluster[") :].split(",")[0])


def executor_pids(app_id: str, driver_port: str) -> list[int]:
    """Executor JVMs of application `app_id` on this machine (from /proc/*/cmdline). A master
    numbers its applications from the second it started, so two local-clusters started in the
    same second both have `app-<second>-0000`: the driver URL's port tells their executors apart."""
    return sorted(executor_processes(app_id, driver_port).values())


def executor_processes(app_id: str, driver_port: str) -> dict[str, int]:
    """`executor_pids` by Spark's executor id (its `--executor-id`)."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                arguments = handle.read().split(b"\0")
        except OSError:
            continue
        if (
            EXECUTOR_MAIN in arguments
            and _value(arguments, b"--app-id") == app_id.encode()
            and _value(arguments, b"--driver-url").endswith(b":" + driver_port.encode())
        ):
            found[_value(arguments, b"--executor-id").decode()] = int(entry)
    return found


def _value(arguments: list[bytes], option: bytes) -> bytes:
    """The argument after `option`, or b"" when there is none."""
    if option not in arguments:
        return b""
    following = arguments[arguments.index(option) + 1 :]
    return following[0] if following else b""


def driver_port(spark: SparkSession) -> str:
    """The port the driver's RPC endpoint listens on: each executor's --driver-url names it."""
    return str(spark.sparkContext.getConf().get("spark.driver.port"))


def wait_for_executors(spark: SparkSession, count: int, timeout: float = RESTART_TIMEOUT) -> None:
    """Until `count` executors are registered (the one killed last time has been replaced)."""
    context = spark.sparkContext
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        # getExecutorMemoryStatus has one entry per block manager: the driver's and each executor's.
        if (
            context._jsc.sc().getExecutorMemoryStatus().size() - 1 >= count
            and len(executor_pids(context.applicationId, driver_port(spark))) >= count
        ):
            return
        time.sleep(0.2)


class ExecutorKiller(threading.Thread):
    """Kills one executor holding map output that a running stage reads, once, until stopped."""

    def __init__(self, spark: SparkSession, rng: random.Random):
        super().__init__(name="sparkpar-faults", daemon=True)
        self.tracker = spark.sparkContext.statusTracker()
        self.store = spark.sparkContext._jsc.sc().statusStore()
        self.app_id = spark.sparkContext.applicationId
        self.driver_port = driver_port(spark)
        self.rng = rng
        self.done = threading.Event()
        self.fault: Fault | None = None
        self.error: Exception | None = None
        self.aimed: dict[int, tuple[int, list[int]] | None] = {}  # job -> (its stage to kill in, its stages)
        self.decided: dict[int, int] = {}  # stage -> finished tasks to wait for

    def stop(self) -> Fault | None:
        self.done.set()
        self.join()
        if self.error is not None:
            raise RuntimeError(f"sparkpar: the fault injector failed: {self.error!r}") from self.error
        return self.fault

    def _aim(self, job: int) -> tuple[int, list[int]] | None:
        """The stage of `job` to kill in: one that reads shuffle output, so that its finished tasks
        have consumed map outputs the retries will make again. A job's first stage reads only the
        job's source; a job of one stage has no map output at all. Every stage after the first is
        as likely, so later stages are reached as often as earlier ones."""
        info = self.tracker.getJobInfo(job)
        stages = sorted(info.stageIds) if info is not None else []
        return (self.rng.choice(stages[1:]), stages) if len(stages) > 1 else None

    def run(self) -> None:
        try:
            self._watch()
        except Exception as error:  # noqa: BLE001 - surfaced by stop(): a silent injector tests nothing
            self.error = error

    def _watch(self) -> None:
        while not self.done.is_set() and self.fault is None:
            active = set(self.tracker.getActiveStageIds())
            for job in self.tracker.getActiveJobsIds():
                if job not in self.aimed:
                    self.aimed[job] = self._aim(job)
                aim = self.aimed[job]
                if aim is None or aim[0] not in active:
                    continue
                stage, stages = aim
                info = self.tracker.getStageInfo(stage)
                if info is None:
                    continue
                if stage not in self.decided:
                    self.decided[stage] = self.rng.randint(1, max(1, info.numTasks - 1))
                target = self.decided[stage]
                finished, tasks = info.numCompletedTasks, info.numTasks
                # Tasks all running at once (two tasks on two executors) may end a few milliseconds
                # apart: the kill goes in while they run, and the one on the killed executor re-reads.
                all_running = finished + info.numActiveTasks >= tasks
                if finished < tasks and (finished >= target or all_running):
                    self._kill(stage, [s for s in stages if s < stage], finished, tasks)
                    return
            self.done.wait(POLL_SECONDS)

    def _holders(self, earlier: list[int]) -> set[str]:
        """Executor ids that ran finished tasks of the nearest earlier stage of the job that ran
        any (a stage whose output an earlier job left is skipped and runs none): they hold the map
        output the stage after it reads."""
        for stage in reversed(earlier):
            info = self.tracker.getStageInfo(stage)
            if info is None:
                continue
            tasks = self.store.taskList(stage, info.currentAttemptId, 1 << 30)
            holders = set()
            for task in (tasks.apply(i) for i in range(tasks.size())):
                if task.status() == "SUCCESS":
                    holders.add(task.executorId())
            if holders:
                return holders
        return set()

    def _kill(self, stage: int, earlier: list[int], finished: int, tasks: int) -> None:
        processes = executor_processes(self.app_id, self.driver_port)
        holders = self._holders(earlier)
        # When the status store knows no holder, any executor: it may still run a task of the stage.
        pids = sorted(pid for executor, pid in processes.items() if executor in holders) or sorted(processes.values())
        if not pids:
            return
        pid = self.rng.choice(pids)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        self.fault = Fault(stage, finished, tasks, pid)


def error_summary(error: BaseException) -> str:
    """The error's first line and, when Spark aborted the job, the scheduler's reason: a streaming
    query's error names only the query on its first line."""
    lines = str(error).strip().splitlines()
    summary = f"{type(error).__name__}: {lines[0][:300] if lines else ''}"
    reason = next((line.strip() for line in lines[1:] if "Job aborted due to stage failure" in line), None)
    return summary + (f"\n{reason[:500]}" if reason else "")
