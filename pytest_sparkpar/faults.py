"""`--sparkpar-faults`: an executor JVM of the local-cluster is killed while a job runs.

A background thread watches the job's stages through Spark's status tracker and, in a stage
chosen at random, once a random number of its tasks has finished (at least one, not all), sends
SIGKILL to one executor process of this application. Spark then re-runs the tasks that were on it
and, because the map outputs it held are gone, the map tasks of the earlier stage that a later
stage still needs: the retried tasks recompute rows that the first attempt already sent to
reducers which finished. A job whose map side is not repeatable (a nondeterministic UDF key, an
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
    found = []
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
            found.append(int(entry))
    return sorted(found)


def _value(arguments: list[bytes], option: bytes) -> bytes:
    """The argument after `option`, or b"" when there is none."""
    if option not in arguments:
        return b""
    following = arguments[arguments.index(option) + 1 :]
    return following[0] if following else b""


def driver_port(spark) -> str:
    """The port the driver's RPC endpoint listens on: each executor's --driver-url names it."""
    return spark.sparkContext.getConf().get("spark.driver.port")


def wait_for_executors(spark, count: int, timeout: float = RESTART_TIMEOUT) -> None:
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
    """Kills one executor at a random point of a random running stage, once, until stopped."""

    def __init__(self, spark, rng: random.Random):
        super().__init__(name="sparkpar-faults", daemon=True)
        self.tracker = spark.sparkContext.statusTracker()
        self.app_id = spark.sparkContext.applicationId
        self.driver_port = driver_port(spark)
        self.rng = rng
        self.done = threading.Event()
        self.fault: Fault | None = None
        self.error: Exception | None = None
        self.decided: dict[int, int | None] = {}  # stage -> tasks to wait for, or None (skip it)

    def stop(self) -> Fault | None:
        self.done.set()
        self.join()
        if self.error is not None:
            raise RuntimeError(f"sparkpar: the fault injector failed: {self.error!r}") from self.error
        return self.fault

    def _first_stages(self) -> set[int]:
        """The first stage of every running job: it reads only the job's source."""
        firsts = set()
        for job in self.tracker.getActiveJobsIds():
            info = self.tracker.getJobInfo(job)
            if info is not None and len(info.stageIds):
                firsts.add(min(info.stageIds))
        return firsts

    def run(self) -> None:
        try:
            self._watch()
        except Exception as error:  # noqa: BLE001 - surfaced by stop(): a silent injector tests nothing
            self.error = error

    def _watch(self) -> None:
        while not self.done.is_set() and self.fault is None:
            for stage in self.tracker.getActiveStageIds():
                info = self.tracker.getStageInfo(stage)
                if info is None or info.numTasks < 2:
                    continue
                if stage not in self.decided:
                    # Only a stage that reads shuffle output is worth a kill: its finished tasks have
                    # consumed map outputs that the lost executor's retries will produce again. A
                    # job's first stage has no such consumer yet. Half of the others are chosen, so
                    # later stages are reached as often as earlier ones.
                    eligible = stage not in self._first_stages() and self.rng.random() < 0.5
                    self.decided[stage] = self.rng.randint(1, info.numTasks - 1) if eligible else None
                target = self.decided[stage]
                if target is not None and target <= info.numCompletedTasks < info.numTasks:
                    self._kill(stage, info.numCompletedTasks, info.numTasks)
                    return
            self.done.wait(POLL_SECONDS)

    def _kill(self, stage: int, finished: int, tasks: int) -> None:
        pids = executor_pids(self.app_id, self.driver_port)
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
