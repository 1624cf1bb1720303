"""Real Spark servers for the plugin's cluster tests, started from the installed PySpark's own
launcher (`bin/spark-class`, `bin/spark-submit`; the pip package is a SPARK_HOME): a standalone
master with two workers, and a Spark Connect server.

Every process is started in its own process group with a parent-death signal, and stopped by
group (SIGTERM, then SIGKILL): executor JVMs and Python workers the servers fork go with them,
also when the test fails or pytest is killed.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pytest_sparkpar import session

START_TIMEOUT = 240  # seconds; a loaded 2-core machine has taken 80 s to bring a cluster up
# The plugin's reason for its local JVMs holds for these servers too: they live a minute and run
# many tiny jobs, and the optimising JIT costs them more CPU than its code gives back.
QUICK_JIT = session.QUICK_JIT


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _die_with_parent() -> None:
    os.setsid()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG: gone if pytest is killed


class Servers:
    """Processes started for one test module; `stop()` ends all of them and their children."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.processes: list[tuple[subprocess.Popen, Path]] = []
        self.env = dict(
            os.environ,
            SPARK_HOME=str(spark_home()),
            PYSPARK_PYTHON=sys.executable,
            SPARK_DAEMON_MEMORY="256m",
            SPARK_WORKER_DIR=str(directory / "work"),
            SPARK_LOCAL_IP="127.0.0.1",
            SPARK_DAEMON_JAVA_OPTS=QUICK_JIT,  # a standalone master and its workers
        )

    def launch(self, name: str, command: list[str], **env: str) -> Path:
        log = self.directory / f"{name}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                command,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=dict(self.env, **env),
                cwd=self.directory,
                preexec_fn=_die_with_parent,
            )
        self.processes.append((process, log))
        return log

    def wait_for(self, log: Path, pattern: str, count: int = 1) -> None:
        """Until `pattern` appears `count` times in `log`; skips the test if the server exited
        (at once, not after the timeout) or never got there, with its first errors as the reason."""
        deadline = time.monotonic() + START_TIMEOUT
        process = next(p for p, path in self.processes if path == log)
        while time.monotonic() < deadline:
            if len(re.findall(pattern, log.read_text(errors="replace"))) >= count:
                return
            if process.poll() is not None:
                why = f"it exited with status {process.returncode} before logging {pattern!r}"
                break
            time.sleep(1)
        else:
            why = f"no {pattern!r} within {START_TIMEOUT} s"
        lines = log.read_text(errors="replace").splitlines()
        errors = [
            line for line in lines if re.search(r"(Exception|Error|not found)\b", line) and not line.startswith("\tat ")
        ]
        tail = "\n".join(errors[:3] or lines[-10:])
        self.stop()
        pytest.skip(f"the Spark server could not start here ({log.name}: {why}):\n{tail}")

    def stop(self) -> None:
        for process, _ in reversed(self.processes):
            for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, sig)
                try:
                    process.wait(wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
            # Children (executors, Python workers) left in the group after the leader exited.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
        self.processes.clear()


def start_standalone(servers: Servers, workers: int = 2) -> str:
    """A standalone master and `workers` workers (1 core, 1 GB each) on localhost; its URL."""
    port = free_port()
    properties = servers.directory / "standalone.conf"
    properties.write_text("spark.master.rest.enabled false\nspark.ui.enabled false\n")
    spark_class = str(spark_home() / "bin" / "spark-class")
    master_log = servers.launch(
        "master",
        [
            spark_class,
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--webui-port",
            "0",
            "--properties-file",
            str(properties),
        ],
    )
    servers.wait_for(master_log, r"I have been elected leader")
    url = f"spark://127.0.0.1:{port}"
    for index in range(workers):
        servers.launch(
            f"worker{index + 1}",
            [
                spark_class,
                "org.apache.spark.deploy.worker.Worker",
                "--host",
                "127.0.0.1",
                "--cores",
                "1",
                "--memory",
                "1g",
                "--webui-port",
                "0",
                "--properties-file",
                str(properties),
                url,
            ],
        )
    servers.wait_for(master_log, r"Registering worker", count=workers)
    return url


def quick_jit_client(directory: Path) -> dict[str, str]:
    """The environment of a client whose driver and executors (on a standalone cluster, where the
    plugin leaves JVM options to the user) run the quick JIT: a spark-defaults.conf, as a user
    would set it."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "spark-defaults.conf").write_text("".join(f"{key} {QUICK_JIT}\n" for key in session.JAVA_OPTION_KEYS))
    return {"SPARK_CONF_DIR": str(directory)}


def hiding_prefix(hidden: Path) -> list[str]:
    """A command prefix running a server in its own mount namespace with an empty tmpfs over
    `hidden` (the client's project and temporary directory), so nothing the client writes there
    is visible to the server; [] where that is not allowed (not root).

    Only that directory is covered, not all of /tmp: the interpreter and PySpark the server runs
    may live under /tmp (`.ci/run` makes its virtualenv there)."""
    probe = ["unshare", "--mount", "--propagation", "private", "sh", "-c", 'mount -t tmpfs tmpfs "$0"', str(hidden)]
    try:
        if subprocess.run(probe, capture_output=True, timeout=30).returncode != 0:
            return []
    except (OSError, subprocess.TimeoutExpired):
        return []
    script = 'hidden="$1"; shift; mount -t tmpfs -o size=64m tmpfs "$hidden" && exec "$@"'
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", str(hidden)]


def start_connect(servers: Servers, master: str, prefix: list[str]) -> str:
    """A Spark Connect server whose own driver runs on `master`, started through the command
    `prefix` (see hiding_prefix); its sc:// URL."""
    port = free_port()
    log = servers.launch(
        "connect",
        [
            *prefix,
            str(spark_home() / "bin" / "spark-submit"),
            "--class",
            "org.apache.spark.sql.connect.service.SparkConnectServer",
            "--master",
            master,
            "--driver-memory",
            "1g",
            "--driver-java-options",
            QUICK_JIT,
            "--conf",
            f"spark.executor.extraJavaOptions={QUICK_JIT}",
            "--conf",
            "spark.executor.memory=700m",
            "--conf",
            "spark.ui.enabled=false",
            "--conf",
            "spark.driver.host=127.0.0.1",
            "--conf",
            f"spark.connect.grpc.binding.port={port}",
            "--conf",
            "spark.connect.grpc.binding.address=127.0.0.1",
            "--conf",
            f"spark.sql.warehouse.dir={servers.directory / 'warehouse'}",
            "--conf",
            f"spark.executorEnv.PYSPARK_PYTHON={sys.executable}",
        ],
        SPARK_DAEMON_MEMORY="1g",
    )  # spark-submit sizes a Connect server's driver by the daemon memory
    servers.wait_for(log, r"Spark Connect server started at")
    return f"sc://127.0.0.1:{port}"


def run_checks(project: Path, checks: str, *args: str, env: dict | None = None):
    """A pytest run, in a subprocess, of a project holding `checks` (a test module) and a conftest
    that puts this repository on sys.path; the CompletedProcess."""
    from test_plugin import CONFTEST, run_pytest

    project.mkdir(parents=True, exist_ok=True)
    (project / "conftest.py").write_text(CONFTEST)
    (project / "test_checks.py").write_text(textwrap.dedent(checks))
    return run_pytest(project, *args, env=env)
