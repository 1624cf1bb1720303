"""`--sparkpar-faults`: an executor JVM of the local-cluster is killed while a job runs.

A background thread watches the jobs through Spark's status tracker and, in one job of two or more
stages, sends SIGKILL to an executor process once some tasks of the stage it aims at have finished
(a random number of them, at least one, not all). The session of a fault run has the tracker see
each task end as it happens (`session.FAULT_CONFS`): by default it sees them every 100 ms, and a
stage of a few small tasks ends before the count the thread waits for shows. Which stage and which
executor depends on the fault run, because two kinds of bug need the loss at two different moments:

- even runs (the first is run 0) aim at the reading side: a stage that reads shuffle output, after
  at least one of its tasks has read the first map outputs. The executors killed hold map output
  of every stage it reads (one executor when one holds some of each, else more), and either a task
  of the stage has not started (it will read the lost output) or a killed executor runs one (its
  retry reads it again): Spark has to redo those map tasks, and rows they draw at random (a salted
  join key) change under readers that saw the first ones. Losing the output of only some parents
  is not enough: a join whose random side ran elsewhere recomputes its other, repeatable side.
- odd runs aim at the map side: a stage whose map output a later stage reads, killing an executor
  that ran some of its finished tasks. Spark runs those tasks again before anything reads their
  output, so a side effect of a map task (an accumulator added to in a UDF) happens twice. Random
  values redrawn there meet no reader of the first ones, so only the reading side catches those;
  a kill on the reading side redoes map tasks only when a task still fetches the lost output.

A job whose map side is not repeatable (a nondeterministic UDF key, an order-sensitive step after
an unordered shuffle read) gives a different answer; Spark's own safeguards (indeterminate stages
are retried whole, or the job aborts) show up as a failure too.

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
    from pyspark.status import SparkStageInfo

EXECUTOR_MAIN = b"org.apache.spark.executor.CoarseGrainedExecutorBackend"
POLL_SECONDS = 0.005
RESTART_TIMEOUT = 180.0
# Shuffle partitions of a fault run: more reading tasks than a two-executor local-cluster runs at
# once, so when the first has finished another is still to start and will read what the kill lost.
SHUFFLE_PARTITIONS = 4


@dataclass
class Fault:
    """What was done: the executors (their pids) were killed in `stage` after `finished` of `tasks`."""

    stage: int
    finished: int
    tasks: int
    pids: list[int]

    def describe(self) -> str:
        killed = (
            f"executor process {self.pids[0]}"
            if len(self.pids) == 1
            else "executor processes " + ", ".join(map(str, self.pids[:-1])) + f" and {self.pids[-1]}"
        )
        return (
            f"{killed} killed (SIGKILL) in stage {self.stage} after {self.finished} "
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


def reads_side(run: int) -> bool:
    """Whether fault run `run` (from 0) aims at the reading side of a shuffle; the others aim at
    its map side (see the module docstring)."""
    return run % 2 == 0


class ExecutorKiller(threading.Thread):
    """Kills one executor whose loss makes Spark redo map output, once, until stopped: on the
    reading side of a shuffle when `read_side`, on its map side otherwise."""

    def __init__(self, spark: SparkSession, rng: random.Random, read_side: bool = True):
        super().__init__(name="sparkpar-faults", daemon=True)
        self.tracker = spark.sparkContext.statusTracker()
        self.store = spark.sparkContext._jsc.sc().statusStore()
        self.scheduler = spark.sparkContext._jsc.sc().dagScheduler()
        self.app_id = spark.sparkContext.applicationId
        self.driver_port = driver_port(spark)
        self.rng = rng
        self.read_side = read_side
        self.done = threading.Event()
        self.fault: Fault | None = None
        self.error: Exception | None = None
        self.aimed: dict[int, tuple[int, list[int]] | None] = {}  # job -> (its stage to kill in, its stages)
        self.decided: dict[int, int] = {}  # map side: stage -> finished tasks to wait for

    def stop(self) -> Fault | None:
        self.done.set()
        self.join()
        if self.error is not None:
            raise RuntimeError(f"sparkpar: the fault injector failed: {self.error!r}") from self.error
        return self.fault

    def _aim(self, job: int) -> tuple[int, list[int]] | None:
        """The stage of `job` to kill in, with the job's stages. Reading side: a stage with parent
        stages, whose shuffle output it reads (in a join, the second source's stage comes after
        the first's but reads only its source). Map side: any stage but the last (which writes
        no map output). A job of one stage has no shuffle at all. Every candidate is as likely."""
        info = self.tracker.getJobInfo(job)
        stages = sorted(info.stageIds) if info is not None else []
        if len(stages) < 2:
            return None
        candidates = [s for s in stages if self._parents(s)] if self.read_side else stages[:-1]
        return (self.rng.choice(candidates), stages) if candidates else None

    def _parents(self, stage: int) -> list[int]:
        """The stages whose shuffle output `stage` reads (the scheduler's stage graph)."""
        found = self.scheduler.stageIdToStage().get(stage)
        if found.isEmpty():
            return []
        parents = found.get().parents()
        return sorted(parents.apply(i).id() for i in range(parents.size()))

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
                if aim is None:
                    continue
                stage, stages = aim
                if stage not in active:
                    if not self.read_side and stage in self.decided:
                        # Its last tasks ended within a poll: the next stage, whose map output
                        # (or, for the job's last, whose input) is still there to lose.
                        self._pass_on(job, stage, stages)
                    continue
                info = self.tracker.getStageInfo(stage)
                if info is None:
                    continue
                if not self.read_side and stage not in self.decided:
                    if info.numTasks < 2:
                        # One task leaves no finished output to lose while its stage runs.
                        self._pass_on(job, stage, stages)
                        continue
                    self.decided[stage] = self.rng.randint(1, info.numTasks - 1)
                if self._fire(stage, stages, info):
                    return
            self.done.wait(POLL_SECONDS)

    def _pass_on(self, job: int, stage: int, stages: list[int]) -> None:
        """Aim the map side's kill at the stage after `stage`; past the job's last, at nothing."""
        after = stages.index(stage) + 1
        self.aimed[job] = (stages[after], stages) if after < len(stages) else None

    def _fire(self, stage: int, stages: list[int], info: SparkStageInfo) -> bool:
        """Kill now if the stage has reached its moment and an executor whose loss counts exists."""
        finished, tasks, attempt = info.numCompletedTasks, info.numTasks, info.currentAttemptId
        if finished >= tasks:
            return False
        if not self.read_side and stage != stages[-1]:
            if finished < self.decided[stage]:
                return False
            ran = sorted(set(self._executors(stage, attempt, "SUCCESS")))
            return bool(ran) and self._kill({self.rng.choice(ran)}, stage, finished, tasks)
        # Reading side: as soon as one task has read the first map outputs, while another is still
        # to start (it reads what the kill loses) or, when they all run, still running (the retry of
        # one on a killed executor reads again; a task may end a few milliseconds after the poll).
        running = self._executors(stage, attempt, "RUNNING")
        if finished == 0:
            return False
        parents = self._parents(stage) or [s for s in stages if s < stage]
        held = [h for h in (self._holders([parent]) for parent in parents) if h]
        if not held:
            # The status store names no holder (it lags the tracker): every executor, as one holds it.
            return self._kill(set(executor_processes(self.app_id, self.driver_port)), stage, finished, tasks)
        # A task that has not started reads every map output of the shuffle; once all remaining
        # tasks run, only the retry of one on a killed executor reads again.
        chosen: set[str] = set()
        if finished + len(running) >= tasks:
            if not running:
                return False
            chosen.add(self.rng.choice(sorted(running)))
        return self._kill(cover(chosen, held, self.rng), stage, finished, tasks)

    def _executors(self, stage: int, attempt: int, status: str) -> list[str]:
        """The executor id of each task of `stage` in `status` (Spark's status store)."""
        tasks = self.store.taskList(stage, attempt, 1 << 30)
        return [task.executorId() for task in (tasks.apply(i) for i in range(tasks.size())) if task.status() == status]

    def _holders(self, parents: list[int]) -> set[str]:
        """Executor ids that ran finished tasks of the `parents` stages: they hold the map output
        the stage reads (a parent skipped in this job ran its tasks in an earlier one)."""
        holders: set[str] = set()
        for stage in parents:
            info = self.tracker.getStageInfo(stage)
            if info is not None:
                holders.update(self._executors(stage, info.currentAttemptId, "SUCCESS"))
        return holders

    def _kill(self, chosen: set[str], stage: int, finished: int, tasks: int) -> bool:
        """SIGKILL the `chosen` executors; False (try again at the next poll) when none runs."""
        processes = executor_processes(self.app_id, self.driver_port)
        killed = []
        for pid in sorted(pid for executor, pid in processes.items() if executor in chosen):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
            killed.append(pid)
        if not killed:
            return False
        self.fault = Fault(stage, finished, tasks, killed)
        return True


def cover(chosen: set[str], held: list[set[str]], rng: random.Random) -> set[str]:
    """`chosen` and as few more executors as hold map output of every parent stage (`held`: each
    parent's holders), greedily: the executor holding some output of most parents still missing
    first, ties drawn with `rng`."""
    chosen = set(chosen)
    while missing := [h for h in held if not h & chosen]:
        executors = sorted(set().union(*missing))
        most = max(sum(e in h for h in missing) for e in executors)
        chosen.add(rng.choice([e for e in executors if sum(e in h for h in missing) == most]))
    return chosen


def error_summary(error: BaseException) -> str:
    """The error's first line and, when Spark aborted the job, the scheduler's reason: a streaming
    query's error names only the query on its first line."""
    lines = str(error).strip().splitlines()
    summary = f"{type(error).__name__}: {lines[0][:300] if lines else ''}"
    reason = next((line.strip() for line in lines[1:] if "Job aborted due to stage failure" in line), None)
    return summary + (f"\n{reason[:500]}" if reason else "")
