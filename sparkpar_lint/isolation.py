"""Each file is analysed in a worker process, so a crash in native code, a hang or a memory blow-up
costs that one file and never the run: the parent kills a worker past the file's time budget and
starts another, and reports the file with one clear error."""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import multiprocessing
import os
import pickle
import resource
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

# Generous: the slowest real module we have seen takes a few seconds.
DEFAULT_FILE_TIMEOUT = 120.0
# Address space a worker may add while analysing one file (a 50,000-line file needs ~1.5 GB).
MEMORY_BUDGET_BYTES = 6 * 1024**3
NOT_CHECKED = "the file was not checked"
# How often a worker checks that its parent is still there, where the kernel cannot tell it.
PARENT_CHECK_SECONDS = 0.5
_PR_SET_PDEATHSIG = 1


class Failure(Exception):
    """Why one item produced no result; its message completes "<path>: ..."."""


class Raised:
    """An exception the function raised in a worker, carried back to be raised in the parent
    (one that cannot be pickled comes back as a RuntimeError naming it)."""

    def __init__(self, error: Exception) -> None:
        try:
            pickle.dumps(error)
        except Exception:
            error = RuntimeError(f"{type(error).__name__}: {error}")
        self.error = error


class _Catching:
    """`function`, with its exceptions returned as Raised (a module-level class: spawn pickles it)."""

    def __init__(self, function: Callable) -> None:
        self.function = function

    def __call__(self, item: Any) -> Any:
        try:
            return self.function(item)
        except MemoryError:
            raise  # the worker turns it into the budget's Failure
        except Exception as error:
            return Raised(error)


def call_isolated(function: Callable, item: Any, timeout: float | None, *, consequence: str) -> Any:
    """`function(item)` in a worker process: its result, or its exception raised here, or a
    Failure when it crashed, ran past `timeout` seconds or out of its memory budget."""
    for _, outcome in map_isolated(_Catching(function), [item], 1, timeout, consequence=consequence):
        if isinstance(outcome, Failure):
            raise outcome
        if isinstance(outcome, Raised):
            raise outcome.error
        return outcome
    raise AssertionError("map_isolated yields one outcome per item")


class _Worker:
    def __init__(self, context, function: Callable, consequence: str) -> None:
        self.connection, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child, function, consequence, os.getpid()), daemon=True)
        with _own_package_first():
            self.process.start()
        child.close()
        self.item: Any = None
        self.deadline = float("inf")

    def send(self, item: Any, timeout: float | None) -> None:
        self.item = item
        self.deadline = time.monotonic() + timeout if timeout else float("inf")
        with contextlib.suppress(OSError):  # a dead worker: its pipe reads as closed, a Failure
            self.connection.send(item)

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
        self.connection.close()


@contextlib.contextmanager
def _own_package_first() -> Iterator[None]:
    """A spawned worker imports sparkpar_lint afresh through the parent's sys.path: put the
    directory this copy was imported from first, so that a source checkout placed earlier on the
    path (a test project's conftest) cannot give the worker another copy, without its rule data."""
    saved = list(sys.path)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    try:
        yield
    finally:
        sys.path[:] = saved


def map_isolated(
    function: Callable,
    items: Sequence,
    jobs: int,
    timeout: float | None,
    *,
    consequence: str = NOT_CHECKED,
    warm_up: Any = None,
) -> Iterator[tuple[Any, Any | Failure]]:
    """(item, function(item)) for every item, in completion order; a Failure instead of the
    result when the worker crashed, ran past `timeout` seconds (None or 0: no limit) or out of
    its memory budget. `consequence` ends a Failure's message: what was not done.

    With `warm_up` (an item `function` handles at once) workers are spawned instead of forked,
    for a caller with threads of its own (a pytest run with a JVM gateway) whose locks a forked
    child could inherit held; each new worker handles it first, so its start-up and imports are
    not charged to a real item's time budget."""
    if not items:
        return
    forking = warm_up is None and "fork" in multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if forking else "spawn")

    def start() -> _Worker:
        worker = _Worker(context, function, consequence)
        if warm_up is not None:
            with contextlib.suppress(EOFError, OSError):  # died: its first item fails at once
                worker.connection.send(warm_up)
                worker.connection.recv()
        return worker

    queue = list(reversed(items))
    idle: list[_Worker] = []
    busy: list[_Worker] = []
    try:
        for _ in range(max(1, min(jobs, len(items)))):
            idle.append(start())
        while queue or busy:
            while queue and idle:
                worker = idle.pop()
                worker.send(queue.pop(), timeout)
                busy.append(worker)
            nearest = min(w.deadline for w in busy)
            wait_for = None if nearest == float("inf") else max(0.0, nearest - time.monotonic())
            ready = wait([w.connection for w in busy], timeout=wait_for)
            for worker in list(busy):
                outcome = None
                if worker.connection in ready:
                    try:
                        outcome = worker.connection.recv()
                    except (EOFError, OSError):
                        worker.process.join()
                        outcome = Failure(f"{_death(worker.process.exitcode)}; {consequence}")
                elif time.monotonic() >= worker.deadline:
                    outcome = Failure(f"analysis stopped after {timeout:g} s (--file-timeout); {consequence}")
                if outcome is None:
                    continue
                busy.remove(worker)
                item = worker.item
                if isinstance(outcome, Failure):
                    worker.stop()
                    if queue:
                        idle.append(start())
                else:
                    idle.append(worker)
                yield item, outcome
    finally:
        for worker in idle + busy:
            try:
                worker.connection.send(None)
            except OSError:
                pass
            worker.stop()


def _serve(connection: Connection, function: Callable, consequence: str, parent: int) -> None:
    """A worker's loop: items in, results out, until the parent sends None or goes away."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    _end_with(parent)
    faulthandler.disable()  # a crash is reported by the parent, in one line
    # Native code writes raw text on its way down ("memory allocation of 64 bytes failed"): the
    # parent's one-line error replaces it, so the worker's stderr goes nowhere.
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)
    _limit_memory()
    from sparkpar_lint.parsing import full_passes_between_files  # here: a worker parses anyway

    full_passes_between_files()
    while True:
        try:
            item = connection.recv()
        except (EOFError, OSError):
            return
        if item is None:
            return
        try:
            outcome = function(item)
        except MemoryError:
            outcome = Failure(
                f"analysis needed more than its {MEMORY_BUDGET_BYTES // 1024**3} GiB memory budget; {consequence}"
            )
        connection.send(outcome)


def _end_with(parent: int) -> None:
    """End this worker when its parent goes. A parent killed by SIGTERM runs no cleanup, and a
    forked sibling holds the parent's end of this worker's pipe open, so recv() would wait forever.
    Linux kills the worker at once, even inside native code; elsewhere a thread checks."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL) != 0:
            raise OSError(ctypes.get_errno(), "prctl")
    except (OSError, AttributeError):  # not Linux
        threading.Thread(target=_watch_parent, args=(parent,), name="sparkpar-parent-watch", daemon=True).start()
    if os.getppid() != parent:  # gone before the signal was asked for
        os._exit(0)


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_SECONDS)
    os._exit(0)


def _limit_memory() -> None:
    try:
        with open("/proc/self/statm") as statm:
            in_use = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = in_use + MEMORY_BUDGET_BYTES
        if hard == resource.RLIM_INFINITY or limit < hard:
            resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (OSError, ValueError):
        pass  # no /proc (macOS): no budget, the timeout still applies


def _death(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        if name == "SIGABRT":  # how native code (LibCST's parser) stops when an allocation fails
            name = "SIGABRT: out of memory or stack in native code"
        return f"the analyser crashed on this file ({name})"
    return f"the analyser exited unexpectedly on this file (status {exitcode})"


class StandingWorker:
    """One worker process kept between items, for a long-running caller (the editor server).

    It is started with "spawn", not "fork": a server has threads, and a forked child can inherit
    a lock another thread held. A new worker first answers `warm_up` (an item `function` handles
    at once), so its start-up is not charged to the item's time budget. Past the timeout, or
    when it dies, the worker is replaced and the item gets a Failure, like `map_isolated`'s.
    """

    def __init__(self, function: Callable, warm_up: Any) -> None:
        self.function = function
        self.warm_up = warm_up
        self.context = multiprocessing.get_context("spawn")
        self.worker: _Worker | None = None
        self.lock = threading.Lock()

    def run(self, item: Any, timeout: float | None) -> Any | Failure:
        with self.lock:
            if self.worker is None or not self.worker.process.is_alive():
                self.worker = _Worker(self.context, self.function, NOT_CHECKED)
                self.worker.send(self.warm_up, None)
                try:
                    self.worker.connection.recv()
                except (EOFError, OSError):
                    self.worker.process.join()
                    outcome = Failure(f"{_death(self.worker.process.exitcode)}; {NOT_CHECKED}")
                    self.worker.stop()
                    self.worker = None
                    return outcome
            worker = self.worker
            worker.send(item, timeout)
            try:
                if worker.connection.poll(timeout):
                    return worker.connection.recv()
                outcome = Failure(f"analysis stopped after {timeout:g} s (--file-timeout); {NOT_CHECKED}")
            except (EOFError, OSError):
                worker.process.join()
                outcome = Failure(f"{_death(worker.process.exitcode)}; {NOT_CHECKED}")
            worker.stop()
            self.worker = None
            return outcome

    def close(self) -> None:
        with self.lock:
            if self.worker is not None:
                with contextlib.suppress(OSError):
                    self.worker.connection.send(None)
                self.worker.stop()
                self.worker = None
