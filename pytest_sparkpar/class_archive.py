"""A class-data archive (AppCDS) for the plugin's JVMs, made once per machine.

Most of a Spark start-up is class loading: the driver JVM loads about 15,000 classes and each
local-cluster executor about 9,500. A run with no archive yet lists the classes its JVMs load
(`-XX:DumpLoadedClassList`); when the Python process exits, a detached builder waits for the
driver JVM to end, dumps one static archive from the merged lists (`java -Xshare:dump`, about
40 CPU-seconds and 190 MB, once), checks that a JVM maps it, and moves it into place. Later runs
start every JVM with `-XX:SharedArchiveFile`: a local-cluster start-up takes about a third less
CPU (bench/plugin_speed.py --startup), with no cost once the JVMs run.

The archive lives under `$SPARKPAR_CACHE_DIR` (default `~/.cache/sparkpar`), keyed by the Java
runtime, the Spark installation and the kind of master. Anything that fails (no writable cache,
a JVM that cannot dump or map the archive) leaves the JVMs as they were, silently; a failed build
is not retried for that key. `SPARKPAR_CLASS_ARCHIVE=off` turns it off.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ARCHIVE, FAILED, LOCK, LISTS = "spark.jsa", "failed", "building", "lists"
# The archive replaces the JDK's own, so it must be mappable or the JVM falls back to none;
# -Xshare:auto (the default) falls back silently once CDS logging is off.
QUIET = "-Xshare:auto -Xlog:cds=off -Xlog:cds+dynamic=off"
STALE_LOCK_SECONDS = 1800


def _directory(master: str) -> Path | None:
    """The cache directory for this Java, Spark and master kind, or None when no archive applies."""
    if os.environ.get("SPARKPAR_CLASS_ARCHIVE", "").lower() in ("0", "off", "false", "no"):
        return None
    kind = master.split("[", 1)[0]
    if kind not in ("local", "local-cluster"):
        return None  # executors of a real cluster run elsewhere, with other files
    java = _java()
    if java is None:
        return None
    try:
        from pyspark.find_spark_home import _find_spark_home

        spark_home = os.path.realpath(_find_spark_home())
        stat = os.stat(java)
        # A JVM maps the archive only with the very jar files it was dumped from (their times and
        # sizes); otherwise it starts without it, silently. A reinstall at the same path (a venv
        # made again) writes new jars, and so a new jars directory time: a new archive.
        jars = os.stat(os.path.join(spark_home, "jars"))
    except Exception:  # noqa: BLE001 - no archive is the silent fallback
        return None
    import pyspark

    identity = "\0".join(
        [java, str(stat.st_mtime_ns), str(stat.st_size), spark_home, str(jars.st_mtime_ns), pyspark.__version__, kind]
    )
    root = Path(os.environ.get("SPARKPAR_CACHE_DIR") or Path.home() / ".cache" / "sparkpar")
    return root / "class-archive" / hashlib.sha256(identity.encode()).hexdigest()[:16]


def _java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return os.path.realpath(found) if found and os.access(found, os.X_OK) else None


def java_options(master: str) -> tuple[dict[str, str], Path | None]:
    """Spark confs that start the JVMs with the archive, or record their classes for one; and the
    directory to build the archive in at exit (None when there is nothing to build)."""
    directory = _directory(master)
    if directory is None:
        return {}, None
    archive = directory / ARCHIVE
    if archive.is_file():
        option = f"-XX:SharedArchiveFile={archive} {QUIET}"
        return {"spark.driver.extraJavaOptions": option, "spark.executor.extraJavaOptions": option}, None
    if (directory / FAILED).exists():
        return {}, None
    try:
        (directory / LISTS).mkdir(parents=True, exist_ok=True)
    except OSError:
        return {}, None
    lists = directory / LISTS
    # Spark puts the application and executor ids into the executor's options: one list per JVM.
    unique = f"{os.getpid()}-{time.time_ns()}"
    return {
        "spark.driver.extraJavaOptions": f"-XX:DumpLoadedClassList={lists}/driver-{unique}.classlist",
        "spark.executor.extraJavaOptions": (
            f"-XX:DumpLoadedClassList={lists}/executor-{unique}-{{{{APP_ID}}}}-{{{{EXECUTOR_ID}}}}.classlist"
        ),
    }, directory


def build_at_exit(session, directory: Path) -> None:
    """When this process exits, start the builder for `directory`, detached, with the driver JVM's
    own java and class path (the archive is only valid for that class path)."""
    try:
        jvm = session.sparkContext._jvm
        java = os.path.join(jvm.System.getProperty("java.home"), "bin", "java")
        classpath = jvm.System.getProperty("java.class.path")
        pid = str(jvm.ProcessHandle.current().pid())
    except Exception:  # noqa: BLE001 - no archive is the silent fallback
        return

    def spawn() -> None:
        try:
            subprocess.Popen(
                [sys.executable, "-m", "pytest_sparkpar.class_archive", str(directory), java, classpath, pid],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # outlives this process and its terminal's signals
            )
        except OSError:
            pass

    atexit.register(spawn)


def _merged(lists: Path) -> list[str]:
    """The lines of every class list once, in first-seen order. A JVM killed mid-write leaves a
    last line with no newline: it is dropped."""
    seen: dict[str, None] = {}
    for path in sorted(lists.glob("*.classlist")):
        lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
        for line in lines[:-1]:
            if line and not line.startswith("#"):
                seen.setdefault(line, None)
    return list(seen)


def build(directory: Path, java: str, classpath: str, driver_pid: int) -> bool:
    """Dump the archive from the recorded lists; True when it is in place."""
    lock = directory / LOCK
    try:
        if lock.exists() and time.time() - lock.stat().st_mtime > STALE_LOCK_SECONDS:
            lock.unlink()  # a builder that died
        os.close(os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except OSError:
        return False  # another builder is at it
    done = False
    try:
        if (directory / ARCHIVE).exists():
            return True
        deadline = time.monotonic() + 300
        while _alive(driver_pid) and time.monotonic() < deadline:
            time.sleep(1)  # the driver's list is complete once its JVM has ended
        classes = _merged(directory / LISTS)
        if not classes:
            return False
        listed, partial = directory / "classes.txt", directory / f"{ARCHIVE}.{os.getpid()}"
        listed.write_text("\n".join(classes) + "\n", encoding="utf-8")
        quiet = ["-Xlog:cds=off", "-Xlog:cds+dynamic=off"]
        dump = [java, *quiet, "-Xshare:dump", f"-XX:SharedClassListFile={listed}", f"-XX:SharedArchiveFile={partial}"]
        check = [java, *quiet, "-Xshare:on", f"-XX:SharedArchiveFile={partial}", "-cp", classpath, "-version"]
        for command in (dump + ["-cp", classpath], check):
            result = subprocess.run(
                command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=1800, check=False
            )
            if result.returncode != 0:
                return False
        os.replace(partial, directory / ARCHIVE)
        done = True
        return True
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        for leftover in directory.glob(f"{ARCHIVE}.*"):
            leftover.unlink(missing_ok=True)
        (directory / "classes.txt").unlink(missing_ok=True)
        shutil.rmtree(directory / LISTS, ignore_errors=True)
        if not done and not (directory / ARCHIVE).exists():
            with contextlib.suppress(OSError):  # the cache may be gone (a CI run's temporary one)
                (directory / FAILED).touch()
        lock.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


if __name__ == "__main__":
    os.nice(10)  # the machine's tests come first
    build(Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]))
